/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * Runs the tests that tests/tsan/criterion/criterion.h registered, as
 * Criterion would: one forked child per test, in the order of the source,
 * a line per result and a synthesis. Options: --filter SUITE/NAME-GLOB;
 * Criterion's -jN and --verbose=N are accepted (tests run one at a time).
 * Exit status 0 when no test failed or crashed.
 */

#include <fnmatch.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "criterion/criterion.h"

#define RB2_CR_SKIPPED 77

static struct rb2_cr_test *first, **last = &first;
static int failed; /* in a child: an expectation failed */

void
rb2_cr_register(struct rb2_cr_test *t)
{
	*last = t;
	last = &t->next;
}

void
rb2_cr_fail(int fatal, const char *file, int line, const char *expr, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "[----] %s:%d: %s: ", file, line, fatal ? "Assertion failed" :
		"Expectation failed");
	va_start(ap, fmt);
	if (fmt[0] != '\0')
		vfprintf(stderr, fmt, ap);
	else
		fprintf(stderr, "%s", expr);
	va_end(ap);
	fputc('\n', stderr);
	failed = 1;
	if (fatal)
		exit(1);
}

void
rb2_cr_skip(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "[SKIP] ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(RB2_CR_SKIPPED);
}

void
rb2_cr_log(const char *tag, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s ", tag);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void
run_child(const struct rb2_cr_test *t)
{
	double timeout = t->timeout > 0 ? t->timeout : t->suite->timeout;

	/* Default action: the child dies of SIGALRM, reported as a timeout. */
	if (timeout > 0)
		alarm((unsigned int)timeout + 1);
	if (t->suite->init != NULL)
		t->suite->init();
	if (t->init != NULL)
		t->init();
	t->fn();
	if (t->fini != NULL)
		t->fini();
	if (t->suite->fini != NULL)
		t->suite->fini();
	exit(failed ? 1 : 0);
}

int
main(int argc, char **argv)
{
	const char *filter = NULL;
	unsigned int tested = 0, passing = 0, failing = 0, crashing = 0, skipped = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--filter") == 0 && i + 1 < argc)
			filter = argv[++i];
		else if (strncmp(argv[i], "--filter=", 9) == 0)
			filter = argv[i] + 9;
		else if (strncmp(argv[i], "-j", 2) != 0 && strncmp(argv[i], "--verbose", 9) != 0) {
			fprintf(stderr, "usage: %s [--filter SUITE/NAME-GLOB] [-jN] [--verbose=N]\n"
				"unknown argument: %s\n", argv[0], argv[i]);
			return 2;
		}
	}
	for (const struct rb2_cr_test *t = first; t != NULL; t = t->next) {
		char id[256];
		int status;
		pid_t pid;
		struct timespec t0, t1;

		snprintf(id, sizeof(id), "%s/%s", t->suite->name, t->name);
		if (filter != NULL && fnmatch(filter, id, 0) != 0)
			continue;
		if (t->disabled || t->suite->disabled) {
			fprintf(stderr, "[SKIP] %s: disabled\n", id);
			skipped++;
			continue;
		}
		fprintf(stderr, "[RUN ] %s\n", id);
		fflush(NULL);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0)
			run_child(t);
		if (waitpid(pid, &status, 0) < 0) {
			perror("waitpid");
			return 1;
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		tested++;
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
			passing++;
			/* Seconds, as Criterion's --verbose says them: where the
			 * suite's time goes under ThreadSanitizer. */
			fprintf(stderr, "[PASS] %s: (%.2fs)\n", id, (double)(t1.tv_sec - t0.tv_sec) +
				(double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
		} else if (WIFEXITED(status) && WEXITSTATUS(status) == RB2_CR_SKIPPED) {
			tested--, skipped++;
		} else if (WIFEXITED(status)) {
			failing++;
			fprintf(stderr, "[FAIL] %s (exit %d)\n", id, WEXITSTATUS(status));
		} else {
			crashing++;
			fprintf(stderr, "[FAIL] %s: %s\n", id, WTERMSIG(status) == SIGALRM ?
				"timed out" : strsignal(WTERMSIG(status)));
		}
	}
	fprintf(stderr, "[====] Synthesis: Tested: %u | Passing: %u | Failing: %u | "
		"Crashing: %u | Skipped: %u\n", tested, passing, failing, crashing, skipped);
	return failing + crashing > 0 ? 1 : 0;
}
