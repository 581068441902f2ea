/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#define _GNU_SOURCE             /* sched_getaffinity(), CPU_AND() */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
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
#include <rte_memory.h>

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

/* ---- an application's life with the EAL --------------------------------- */

static const struct rb2_app *app_now;

/* The application's usage, and what every rb2 application shares. */
static void
app_usage(const struct rb2_app *app)
{
	app->usage(stdout);
	printf("\nEAL arguments go before '--' (-l 0-1, --no-pci, --no-huge -m MB, --file-prefix,\n"
	       "--proc-type=secondary, --vdev ...); --log-level=lib.*:error keeps %s's own\n"
	       "messages and the EAL's errors, and silences the start-up lines.\n", app->name);
}

/* The EAL's help calls this after its own. */
static void
app_usage_hook(const char *prgname __rte_unused)
{
	if (app_now != NULL && app_now->usage != NULL)
		app_usage(app_now);
}

/* The directory DPDK 22.11 keeps a prefix's files in (eal_create_runtime_dir()). */
static void
eal_runtime_dir(const char *prefix, char *buf, size_t len)
{
	const char *base = "/var/run";

	if (getuid() != 0) {
		base = getenv("XDG_RUNTIME_DIR");
		if (base == NULL)
			base = "/tmp";
	}
	snprintf(buf, len, "%s/dpdk/%s", base, prefix);
}

/* The pid of the primary that holds @p dir's shared configuration (its
 * write lock on the config file), or 0. */
static pid_t
eal_primary_of(const char *dir)
{
	char path[PATH_MAX + 16];
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	int fd;

	snprintf(path, sizeof(path), "%s/config", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fcntl(fd, F_GETLK, &fl) != 0 || fl.l_type == F_UNLCK)
		fl.l_pid = 0;
	close(fd);
	return fl.l_pid;
}

/* The command name of process @p pid into @p buf ("a process" if unknown). */
static void
proc_comm(pid_t pid, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(buf, len, "a process");
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "r");
	if (f == NULL)
		return;
	if (fgets(buf, (int)len, f) != NULL)
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

/* A secondary whose lcores share a CPU with its primary's main thread
 * (rb2-raasd polls without pause there) gets a share of that CPU: said
 * once, since it looks like a slow program, not like a placement. */
static void
warn_shared_cpu(const char *app)
{
	char dir[PATH_MAX], comm[64];
	cpu_set_t primary;
	unsigned int id;
	pid_t holder;

	snprintf(dir, sizeof(dir), "%s", rte_eal_get_runtime_dir());
	holder = eal_primary_of(dir);
	if (holder <= 0 || sched_getaffinity(holder, sizeof(primary), &primary) != 0)
		return;
	RTE_LCORE_FOREACH(id) {
		rte_cpuset_t mine = rte_lcore_cpuset(id);

		CPU_AND(&mine, &mine, &primary);
		if (CPU_COUNT(&mine) == 0)
			continue;
		proc_comm(holder, comm, sizeof(comm));
		fprintf(stderr, "%s: warning: lcore %u runs on a CPU of its primary %s (pid %d), "
			"which polls without pause there: each gets a share of it; give this "
			"process other lcores with -l\n", app, id, comm, (int)holder);
		return;
	}
}

/* Why the EAL did not start, where it can be told from the outside. */
static void
eal_explain(const char *app, int argc, char **argv)
{
	const char *type = eal_opt(argc, argv, "--proc-type");
	const char *prefix = eal_opt(argc, argv, "--file-prefix");
	int secondary = type != NULL && strcmp(type, "secondary") == 0;
	char dir[PATH_MAX], comm[64] = "a process";
	pid_t holder;

	if (prefix == NULL)
		prefix = "rte";
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--in-memory") == 0 || strcmp(argv[i], "--no-shconf") == 0)
			return;         /* no shared configuration: nothing to hold */
	eal_runtime_dir(prefix, dir, sizeof(dir));
	holder = eal_primary_of(dir);
	if (holder > 0)
		proc_comm(holder, comm, sizeof(comm));
	if (secondary && holder <= 0) {
		fprintf(stderr, "%s: no primary process runs with --file-prefix %s to join as a "
			"secondary: start it first (rb2-raasd ... --file-prefix %s), or give the "
			"prefix it runs with\n", app, prefix, prefix);
		/* The EAL made the directory for a primary that does not exist:
		 * take out what this process left there, and the directory if
		 * that empties it. */
		DIR *d = opendir(dir);
		struct dirent *e;
		char mine[64];

		snprintf(mine, sizeof(mine), "mp_socket_%d_", (int)getpid());
		while (d != NULL && (e = readdir(d)) != NULL)
			if (strncmp(e->d_name, mine, strlen(mine)) == 0)
				(void)unlinkat(dirfd(d), e->d_name, 0);
		if (d != NULL)
			closedir(d);
		(void)rmdir(dir);
	} else if (!secondary && holder > 0 && holder != getpid()) {
		if (strcmp(comm, app) == 0)
			fprintf(stderr, "%s: another %s (pid %d) already runs with --file-prefix %s: "
				"stop it, or give this one a --file-prefix of its own\n", app, comm,
				(int)holder, prefix);
		else
			fprintf(stderr, "%s: %s (pid %d) already runs as the primary process of "
				"--file-prefix %s: to join it, add --proc-type=secondary (an "
				"application of rb2-raasd is its secondary); to run alone, give "
				"this one a --file-prefix of its own\n", app, comm, (int)holder,
				prefix);
	}
}

/* With no '--' on the command line, an application option among the
 * arguments is one given in the wrong place. @return it, or NULL. */
static const char *
app_opt_before_dashes(const struct rb2_app *app, int argc, char **argv)
{
	if (app->options == NULL)
		return NULL;
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0)
			return NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		size_t n;

		if (strncmp(a, "--", 2) != 0)
			continue;
		a += 2;
		n = strcspn(a, "=");
		for (const struct option *o = app->options; o->name != NULL; o++)
			if (strlen(o->name) == n && strncmp(o->name, a, n) == 0)
				return argv[i];
	}
	return NULL;
}

int
rb2_app_run(const struct rb2_app *app, int argc, char **argv, int (*app_main)(int, char **))
{
	const char *misplaced;
	int ret;

	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (app->usage != NULL &&
		    (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)) {
			app_usage(app);
			return 0;
		}
	misplaced = app_opt_before_dashes(app, argc, argv);
	if (misplaced != NULL) {
		fprintf(stderr, "%s: %s is an option of %s, and its options go after '--': "
			"%s [EAL args] -- %s ... (an EAL option of the same name: end the EAL "
			"args with '--'; %s --help)\n", app->name, misplaced, app->name, app->name,
			misplaced, app->name);
		return 2;
	}
	app_now = app;
	if (app->usage != NULL)
		rte_set_application_usage_hook(app_usage_hook);
	ret = rb2_eal_init(argc, argv, 30);
	if (ret < 0) {
		int err = rte_errno;

		eal_explain(app->name, argc, argv);
		fprintf(stderr, "%s: EAL initialization failed%s%s%s: check the EAL arguments "
			"before '--' (%s --help)\n", app->name, err ? " (" : "",
			err ? rte_strerror(err) : "", err ? ")" : "", app->name);
		return 1;
	}
	if (rte_eal_process_type() == RTE_PROC_SECONDARY)
		warn_shared_cpu(app->name);
	/* argv[ret] is the program name again (rte_eal_init() puts it
	 * there), as getopt expects. */
	ret = app_main(argc - ret, argv + ret);
	rb2_eal_cleanup();
	return ret;
}

int
rb2_eal_run(const char *app, int argc, char **argv, int (*app_main)(int, char **))
{
	const struct rb2_app a = { .name = app };

	return rb2_app_run(&a, argc, argv, app_main);
}

/* The hugepage files of this process's memory, collected before
 * rte_eal_cleanup() closes them. */
struct huge_files {
	char (*path)[PATH_MAX];
	unsigned int n, cap;
	int last_fd;            /* the last segment's file, already taken */
};

static int
huge_file_of(const struct rte_memseg_list *msl __rte_unused, const struct rte_memseg *ms,
	     void *arg)
{
	struct huge_files *h = arg;
	char link[64], path[PATH_MAX];
	int fd = rte_memseg_get_fd_thread_unsafe(ms);
	ssize_t n;

	if (fd < 0 || fd == h->last_fd)
		return 0;       /* anonymous memory, or a file already taken */
	h->last_fd = fd;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0)
		return 0;
	path[n] = '\0';
	/* With --single-file-segments one file holds many segments. */
	if (h->n > 0 && strcmp(h->path[h->n - 1], path) == 0)
		return 0;
	if (h->n == h->cap) {
		unsigned int cap = h->cap ? 2 * h->cap : 64;
		void *p = realloc(h->path, cap * sizeof(*h->path));

		if (p == NULL)
			return -1;
		h->path = p;
		h->cap = cap;
	}
	memcpy(h->path[h->n++], path, (size_t)n + 1);
	return 0;
}

int
rb2_eal_cleanup(void)
{
	char dir[PATH_MAX];
	bool primary = rte_eal_process_type() == RTE_PROC_PRIMARY;
	struct huge_files huge = { .last_fd = -1 };
	int ret;

	snprintf(dir, sizeof(dir), "%s", rte_eal_get_runtime_dir());
	/* --no-huge memory is a memfd per 4 KiB page, with no file to
	 * remove: walking its 131072 segments (512 MB) took a second. */
	if (primary && rte_eal_has_hugepages())
		(void)rte_memseg_walk(huge_file_of, &huge);
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
		/* Ours: a secondary still running keeps its mapping of them. */
		for (unsigned int i = 0; d != NULL && i < huge.n; i++)
			(void)unlink(huge.path[i]);
		while (d != NULL && (e = readdir(d)) != NULL) {
			if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
				(void)unlinkat(dirfd(d), e->d_name, 0);
		}
		if (d != NULL) {
			closedir(d);
			(void)rmdir(dir);
		}
	}
	free(huge.path);
	return ret;
}
