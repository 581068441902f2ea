/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>

#include "rb2_lcore.h"

/* ---- a bounded EAL start -------------------------------------------------- */

static struct {
	pthread_mutex_t lock;
	pthread_cond_t done_cv;
	int done;
	unsigned int timeout_s;
	char prefix[64];
} eal_watch = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, "rte" };

static void *
eal_watchdog(void *arg)
{
	struct timespec until;
	int done;

	(void)arg;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += eal_watch.timeout_s;
	pthread_mutex_lock(&eal_watch.lock);
	while (!eal_watch.done &&
	       pthread_cond_timedwait(&eal_watch.done_cv, &eal_watch.lock, &until) == 0)
		;
	done = eal_watch.done;
	pthread_mutex_unlock(&eal_watch.lock);
	if (!done) {
		fprintf(stderr, "error: this secondary process has waited %u s for its primary "
			"(--file-prefix %s) to finish starting. Start the primary first; if it "
			"failed while starting, start it again.\n",
			eal_watch.timeout_s, eal_watch.prefix);
		_exit(1);
	}
	return NULL;
}

/* The value of EAL option @p name ("--name=V" or "--name V"), or NULL. */
static const char *
eal_opt(int argc, char **argv, const char *name)
{
	size_t n = strlen(name);

	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strncmp(argv[i], name, n) == 0) {
			if (argv[i][n] == '=')
				return argv[i] + n + 1;
			if (argv[i][n] == '\0' && i + 1 < argc)
				return argv[i + 1];
		}
	return NULL;
}

int
rb2_eal_init(int argc, char **argv, unsigned int timeout_s)
{
	const char *type = eal_opt(argc, argv, "--proc-type");
	const char *prefix = eal_opt(argc, argv, "--file-prefix");
	const char *env = getenv("RB2_SECONDARY_WAIT_S");
	pthread_t watchdog;
	int armed, ret;

	if (env != NULL && atoi(env) > 0)
		timeout_s = (unsigned int)atoi(env);
	armed = type != NULL && strcmp(type, "secondary") == 0 && timeout_s > 0;
	if (armed) {
		eal_watch.timeout_s = timeout_s;
		if (prefix != NULL)
			snprintf(eal_watch.prefix, sizeof(eal_watch.prefix), "%s", prefix);
		armed = pthread_create(&watchdog, NULL, eal_watchdog, NULL) == 0;
	}
	ret = rte_eal_init(argc, argv);
	if (armed) {
		pthread_mutex_lock(&eal_watch.lock);
		eal_watch.done = 1;
		pthread_cond_signal(&eal_watch.done_cv);
		pthread_mutex_unlock(&eal_watch.lock);
		pthread_join(watchdog, NULL);
	}
	return ret;
}

/* ---- launching lcores ----------------------------------------------------- */

/* What the worker runs, and its end, which it release-stores last. */
static struct launch {
	lcore_function_t *f;
	void *arg;
	_Atomic uint64_t ended;
} launches[RTE_MAX_LCORE];

static int
run_launched(void *p)
{
	struct launch *l = p;
	int ret = l->f(l->arg);

	/* Release: everything the function wrote, before the end. */
	atomic_fetch_add_explicit(&l->ended, 1, memory_order_release);
	return ret;
}

int
rb2_lcore_launch(lcore_function_t *f, void *arg, unsigned int lcore_id)
{
	struct launch *l;

	if (lcore_id >= RTE_MAX_LCORE || !rte_lcore_is_enabled(lcore_id) ||
	    lcore_id == rte_get_main_lcore())
		return -EINVAL;
	/* The slot is the worker's while it runs: check before writing it. */
	if (rte_eal_get_lcore_state(lcore_id) != WAIT)
		return -EBUSY;
	l = &launches[lcore_id];
	l->f = f;
	l->arg = arg;
	return rte_eal_remote_launch(run_launched, l, lcore_id);
}

int
rb2_lcore_wait(unsigned int lcore_id)
{
	int ret;

	if (lcore_id >= RTE_MAX_LCORE)
		return 0;
	ret = rte_eal_wait_lcore(lcore_id);
	/* Acquire: pairs with run_launched()'s release (see the header). */
	(void)atomic_load_explicit(&launches[lcore_id].ended, memory_order_acquire);
	return ret;
}

void
rb2_lcore_wait_all(void)
{
	unsigned int lcore_id;

	RTE_LCORE_FOREACH_WORKER(lcore_id)
		rb2_lcore_wait(lcore_id);
}

int
rb2_eal_run(const char *app, int argc, char **argv, int (*app_main)(int, char **))
{
	int ret = rb2_eal_init(argc, argv, 30);

	if (ret < 0) {
		fprintf(stderr, "%s: EAL initialization failed (%s): check the EAL arguments "
			"before '--' (%s --help)\n", app, rte_strerror(rte_errno), app);
		return 1;
	}
	/* argv[ret] is the program name again (rte_eal_init() puts it
	 * there), as getopt expects. */
	ret = app_main(argc - ret, argv + ret);
	rb2_eal_cleanup();
	return ret;
}

int
rb2_eal_cleanup(void)
{
	char dir[PATH_MAX];
	bool primary = rte_eal_process_type() == RTE_PROC_PRIMARY;
	int ret;

	snprintf(dir, sizeof(dir), "%s", rte_eal_get_runtime_dir());
	ret = rte_eal_cleanup();
	if (primary && dir[0] != '\0') {
		DIR *d = opendir(dir);
		struct dirent *e;

		/* No shared config (--in-memory, --no-shconf): other processes
		 * may run with this prefix, and their files are not ours. */
		if (d != NULL && faccessat(dirfd(d), "config", F_OK, 0) != 0) {
			closedir(d);
			d = NULL;
		}
		while (d != NULL && (e = readdir(d)) != NULL) {
			if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
				(void)unlinkat(dirfd(d), e->d_name, 0);
		}
		if (d != NULL) {
			closedir(d);
			(void)rmdir(dir);
		}
	}
	return ret;
}
