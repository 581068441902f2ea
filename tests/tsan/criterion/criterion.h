/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_TSAN_CRITERION_H
#define RB2_TSAN_CRITERION_H

/*
 * The part of Criterion's API that rb2's suites use, for the ThreadSanitizer
 * build only (tests/tsan/README.md says why). The suites compile unchanged:
 * this directory comes first on the include path. Semantics kept: each test
 * runs in a forked child (so each has its own EAL), between its suite's
 * .init and .fini; cr_assert*() ends the test, cr_expect*() fails it and
 * goes on; cr_skip_test() skips it; .disabled and .timeout are honoured;
 * --filter SUITE/NAME-GLOB selects.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

struct rb2_cr_suite {
	const char *name;
	void (*init)(void);
	void (*fini)(void);
	double timeout;             /**< seconds; 0: none */
	bool disabled;
};

struct rb2_cr_test {
	const char *name;
	void (*fn)(void);
	const struct rb2_cr_suite *suite;
	void (*init)(void);
	void (*fini)(void);
	double timeout;             /**< seconds; 0: the suite's */
	bool disabled;
	struct rb2_cr_test *next;
};

void rb2_cr_register(struct rb2_cr_test *t);
void rb2_cr_fail(int fatal, const char *file, int line, const char *expr,
		 const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void rb2_cr_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void rb2_cr_log(const char *tag, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define TestSuite(s, ...) \
	static const struct rb2_cr_suite rb2_cr_suite_##s = {.name = #s, __VA_ARGS__}

#define Test(s, n, ...)							\
	static void rb2_cr_fn_##s##_##n(void);				\
	static struct rb2_cr_test rb2_cr_test_##s##_##n = {		\
		.name = #n, .fn = rb2_cr_fn_##s##_##n,			\
		.suite = &rb2_cr_suite_##s, __VA_ARGS__};		\
	__attribute__((constructor)) static void			\
	rb2_cr_reg_##s##_##n(void)					\
	{								\
		rb2_cr_register(&rb2_cr_test_##s##_##n);		\
	}								\
	static void rb2_cr_fn_##s##_##n(void)

/* The message, when given, is a format literal with its arguments. */
#define RB2_CR_CHECK(fatal, ok, expr, ...)				\
	((ok) ? (void)0 : rb2_cr_fail(fatal, __FILE__, __LINE__, expr, "" __VA_ARGS__))

#define cr_assert(c, ...)          RB2_CR_CHECK(1, (c), #c, __VA_ARGS__)
#define cr_expect(c, ...)          RB2_CR_CHECK(0, (c), #c, __VA_ARGS__)
#define cr_assert_eq(a, b, ...)    RB2_CR_CHECK(1, (a) == (b), #a " == " #b, __VA_ARGS__)
#define cr_expect_eq(a, b, ...)    RB2_CR_CHECK(0, (a) == (b), #a " == " #b, __VA_ARGS__)
#define cr_assert_neq(a, b, ...)   RB2_CR_CHECK(1, (a) != (b), #a " != " #b, __VA_ARGS__)
#define cr_expect_neq(a, b, ...)   RB2_CR_CHECK(0, (a) != (b), #a " != " #b, __VA_ARGS__)
#define cr_assert_lt(a, b, ...)    RB2_CR_CHECK(1, (a) < (b), #a " < " #b, __VA_ARGS__)
#define cr_expect_lt(a, b, ...)    RB2_CR_CHECK(0, (a) < (b), #a " < " #b, __VA_ARGS__)
#define cr_assert_leq(a, b, ...)   RB2_CR_CHECK(1, (a) <= (b), #a " <= " #b, __VA_ARGS__)
#define cr_expect_leq(a, b, ...)   RB2_CR_CHECK(0, (a) <= (b), #a " <= " #b, __VA_ARGS__)
#define cr_assert_gt(a, b, ...)    RB2_CR_CHECK(1, (a) > (b), #a " > " #b, __VA_ARGS__)
#define cr_expect_gt(a, b, ...)    RB2_CR_CHECK(0, (a) > (b), #a " > " #b, __VA_ARGS__)
#define cr_assert_geq(a, b, ...)   RB2_CR_CHECK(1, (a) >= (b), #a " >= " #b, __VA_ARGS__)
#define cr_expect_geq(a, b, ...)   RB2_CR_CHECK(0, (a) >= (b), #a " >= " #b, __VA_ARGS__)
#define cr_assert_null(p, ...)     RB2_CR_CHECK(1, (p) == NULL, #p " == NULL", __VA_ARGS__)
#define cr_expect_null(p, ...)     RB2_CR_CHECK(0, (p) == NULL, #p " == NULL", __VA_ARGS__)
#define cr_assert_not_null(p, ...) RB2_CR_CHECK(1, (p) != NULL, #p " != NULL", __VA_ARGS__)
#define cr_expect_not_null(p, ...) RB2_CR_CHECK(0, (p) != NULL, #p " != NULL", __VA_ARGS__)
#define cr_assert_str_eq(a, b, ...) \
	RB2_CR_CHECK(1, strcmp((a), (b)) == 0, #a " equals " #b, __VA_ARGS__)
#define cr_expect_str_eq(a, b, ...) \
	RB2_CR_CHECK(0, strcmp((a), (b)) == 0, #a " equals " #b, __VA_ARGS__)
#define cr_assert_arr_eq(a, b, n, ...) \
	RB2_CR_CHECK(1, memcmp((a), (b), (n)) == 0, #a " equals " #b, __VA_ARGS__)
#define cr_expect_arr_eq(a, b, n, ...) \
	RB2_CR_CHECK(0, memcmp((a), (b), (n)) == 0, #a " equals " #b, __VA_ARGS__)

#define cr_skip_test(...)          rb2_cr_skip("" __VA_ARGS__)
#define cr_log_info(...)           rb2_cr_log("[----]", __VA_ARGS__)
#define cr_log_warn(...)           rb2_cr_log("[WARN]", __VA_ARGS__)
#define cr_log_error(...)          rb2_cr_log("[ERR ]", __VA_ARGS__)

#endif /* RB2_TSAN_CRITERION_H */
