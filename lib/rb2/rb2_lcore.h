/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_LCORE_H
#define RB2_LCORE_H

/**
 * @file
 * Starting the EAL without waiting forever, stopping it without leaving
 * its files behind, and launching a function on a
 * worker lcore and waiting for it, as rte_eal_remote_launch() and
 * rte_eal_wait_lcore() do, with a hand-off a race detector can see.
 *
 * DPDK's wait is correct (the worker's release store of its state, the main
 * lcore's acquire load), but it happens inside librte_eal, which is not
 * built with ThreadSanitizer, so TSan does not see it and reports every
 * access the main lcore makes after the wait to what the worker wrote (a
 * result, a channel it destroys) as a race. These wrappers add the same
 * release/acquire pair in rb2's own code. (The launch needs nothing: it
 * goes through a pipe, and TSan sees read() and write().) Use them for
 * every launch whose results are read after the wait; they cost nothing
 * measurable outside TSan builds.
 */

#include <getopt.h>
#include <stdio.h>

#include <rte_launch.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * rte_eal_init(), bounded for a secondary process. DPDK's secondary spins
 * until its primary's shared configuration is complete; a primary that died
 * while starting never completes it, and the secondary would wait without a
 * word, forever. With --proc-type=secondary among @p argv, this prints after
 * @p timeout_s seconds (or $RB2_SECONDARY_WAIT_S, when set) which primary it
 * waited for and what to do, and exits the process with status 1.
 * @return rte_eal_init()'s return value.
 */
int rb2_eal_init(int argc, char **argv, unsigned int timeout_s);

/**
 * rte_eal_cleanup(), then, in a primary process, remove its runtime
 * directory (/var/run/dpdk/PREFIX, or under $XDG_RUNTIME_DIR) and its
 * hugepage files (PREFIXmap_N in the hugetlbfs mount). DPDK 22.11 leaves
 * both behind: the directory with its fbarray files, about 6 MB a process
 * with --no-huge, which fills a disk over the hundreds of processes a test
 * suite starts, each with its own --file-prefix; the hugepage files hold
 * their pages, so that the next process, or a script that sizes the
 * reservation, finds them taken. A secondary leaves both to its primary, and
 * a primary without a shared configuration (--in-memory, --no-shconf)
 * leaves them to the others that may share its prefix. Call it last:
 * nothing of the EAL may be used afterwards.
 * @return rte_eal_cleanup()'s return value.
 */
int rb2_eal_cleanup(void);

/**
 * An application's whole life with the EAL: rb2_eal_init() (a secondary
 * waits 30 s at most), @p app_main on the arguments after the EAL's (the
 * program name first), then rb2_eal_cleanup(), so that every return from
 * @p app_main leaves nothing behind. A failed start is printed as
 * "@p app: EAL initialization failed (why): check the EAL arguments before
 * '--' (@p app --help)", with the cause where rb2_app_run() can tell it:
 * this is rb2_app_run() with a name alone.
 * @return @p app_main's return value, or 1 when the EAL did not start.
 */
int rb2_eal_run(const char *app, int argc, char **argv, int (*app_main)(int, char **));

/** What rb2_app_run() knows of an application, to help a user who got the
 * command line wrong. */
struct rb2_app {
	const char *name;               /**< "rb2-kv": every message starts with it */
	void (*usage)(FILE *f);         /**< the application's own options; or NULL */
	const struct option *options;   /**< its long options (getopt_long()'s table,
					 *   ending with a zeroed entry); or NULL */
};

/**
 * rb2_eal_run() for an application that has its own usage and options,
 * the way a DPDK user expects them:
 *  - `--help` or `-h` anywhere before '--' prints @p app's usage, then where
 *    the EAL arguments go and the flag that quiets the EAL's start-up lines
 *    (the EAL's own help prints them too, after the EAL's:
 *    rte_set_application_usage_hook());
 *  - with no '--' at all, an argument that is one of @p app's long options
 *    is refused before the EAL starts, saying that the application's options
 *    go after '--' (status 2);
 *  - a failed EAL start says what is wrong where it can tell: another
 *    primary process already holds the --file-prefix (with its pid and name:
 *    "another rb2-raasd"), or a secondary found no primary to join; a failed
 *    secondary removes the runtime directory it made for a primary that
 *    does not exist.
 * @return @p app_main's value, 1 when the EAL did not start, 2 for options
 *   given before '--', 0 after --help.
 */
int rb2_app_run(const struct rb2_app *app, int argc, char **argv,
		int (*app_main)(int, char **));

/**
 * rte_eal_remote_launch(): run @p f(@p arg) on worker lcore @p lcore_id.
 * @return 0, -EBUSY if that lcore is still running something, -EINVAL for
 *   a bad lcore id.
 */
int rb2_lcore_launch(lcore_function_t *f, void *arg, unsigned int lcore_id);

/**
 * rte_eal_wait_lcore(): wait for the function launched on @p lcore_id.
 * Everything it wrote is visible (to TSan too) when this returns.
 * @return its return value, or 0 if that lcore was not running anything.
 */
int rb2_lcore_wait(unsigned int lcore_id);

/** rb2_lcore_wait() on every worker lcore (rte_eal_mp_wait_lcore()). */
void rb2_lcore_wait_all(void);

#ifdef __cplusplus
}
#endif

#endif /* RB2_LCORE_H */
