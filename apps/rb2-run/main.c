/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/*
 * rb2-run [options] [--] PROGRAM [ARGS...]: run an unmodified program with
 * its TCP connections to other programs under rb2-run on this host over rb2
 * (doc/guides/apps/rb2-run.md). It finds or starts the host's rb2-sockd,
 * puts librb2_preload.so in LD_PRELOAD, and execs the program: no EAL, no
 * hugepage setup, no file prefixes.
 */

#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <libgen.h>
#include <spawn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "rb2_sockd.h"

extern char **environ;

#ifndef RB2_PRELOAD_INSTALLED
#define RB2_PRELOAD_INSTALLED "/usr/local/lib/x86_64-linux-gnu/librb2_preload.so"
#endif
#ifndef RB2_SOCKD_INSTALLED
#define RB2_SOCKD_INSTALLED "/usr/local/bin/rb2-sockd"
#endif

static void
usage(FILE *f)
{
	fprintf(f,
"usage: rb2-run [--stats | --stats-file FILE] [--socket PATH] [--no-service]\n"
"              [--allow-io-uring] [--] PROGRAM [ARGS...]\n"
"Runs PROGRAM unmodified; its TCP connections to programs that also run\n"
"under rb2-run go over rb2: on this host through shared-memory rings, to\n"
"another host running rb2-sockd over RDMA verbs where both ends have a\n"
"device. Every other connection stays kernel TCP, counted. No EAL arguments,\n"
"hugepages or file prefixes: rb2-run starts the host's service (rb2-sockd)\n"
"when none runs.\n"
"  --stats        at exit, each process prints one line: connections over rb2,\n"
"                 bytes each way, and those left to the kernel with the reason\n"
"                 (the same as RB2_RUN_STATS=1)\n"
"  --stats-file FILE  the same lines, appended to FILE, for programs that close\n"
"                 or redirect their stderr (daemons); a process that cannot\n"
"                 open it prints its line on stderr (RB2_RUN_STATS=/abs/path)\n"
"  --socket PATH  the service's socket (default: $RB2_SOCKD_PATH, else\n"
"                 /run/rb2/sockd.sock for root, else $XDG_RUNTIME_DIR/rb2/\n"
"                 or /tmp/rb2-UID/)\n"
"  --no-service   do not start rb2-sockd: without one, everything is kernel TCP\n"
"  --allow-io-uring  leave io_uring on. Without this, io_uring_setup fails\n"
"                 with ENOSYS in PROGRAM and all it starts, and programs fall\n"
"                 back to the calls rb2-run wraps (io_uring's reads and writes\n"
"                 would reach an rb2 connection's kernel socket unseen). For a\n"
"                 user other than root, turning it off sets no_new_privs: a\n"
"                 set-user-ID program started under it runs without its\n"
"                 privileges.\n"
"Environment: RB2_PRELOAD_LIB (the library), RB2_RUN_CONNECT_TIMEOUT_MS,\n"
"RB2_RUN_VERBS=0 (other hosts: kernel TCP), RB2_RUN_RDMA_DEV (the device),\n"
"RB2_RUN_VERBS_ARGS (more of the verbs transport's arguments, e.g. rearm=1;\n"
"they override rb2-run's own: cm=0,ack_timeout=14,retry_cnt=7),\n"
"RB2_RUN_SPIN_NS (spin before sleeping), RB2_RUN_BATCH_US (other hosts: the\n"
"longest a write made while one is in flight is held for batching; 500, 0: no\n"
"batching), RB2_RUN_AHEAD (other hosts: ends of streams made ahead of their\n"
"connections by a thread; 0, none), RB2_RUN_BELL=socket (wake a peer on this\n"
"host with a byte on its TCP socket, not its eventfd: for comparison).\n");
}

/* The file next to us, or in the build tree's layout, or installed. */
static int
find(char *out, size_t len, const char *env, const char *const *rel, const char *installed)
{
	char self[PATH_MAX], dir[PATH_MAX];
	const char *e = getenv(env);
	ssize_t n;

	if (e != NULL && e[0] != '\0') {
		snprintf(out, len, "%s", e);
		return access(out, R_OK) == 0 ? 0 : -1;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		snprintf(dir, sizeof(dir), "%s", dirname(self));
		for (unsigned int i = 0; rel[i] != NULL; i++) {
			size_t dl = strlen(dir), rl = strlen(rel[i]);

			if (dl + 1 + rl >= len)
				continue;
			memcpy(out, dir, dl);
			out[dl] = '/';
			memcpy(out + dl + 1, rel[i], rl + 1);
			if (access(out, R_OK) == 0)
				return 0;
		}
	}
	snprintf(out, len, "%s", installed);
	return access(out, R_OK) == 0 ? 0 : -1;
}

static int
service_up(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0), ok;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	ok = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	if (fd >= 0)
		close(fd);
	return ok;
}

/*
 * io_uring off for this process and all it execs and forks (a seccomp
 * filter: io_uring_setup fails with ENOSYS, as on a kernel without it, so
 * programs fall back to the calls rb2-run wraps, before any data flows).
 * liburing makes its system calls itself, so there is nothing to wrap, and
 * a read it posts on an rb2 connection's kernel socket would take the
 * doorbells' bytes as data. ENOSYS, not EOPNOTSUPP: it is the answer
 * io_uring's users test for and fall back on. A filter needs root
 * (CAP_SYS_ADMIN) or no_new_privs.
 * @return 0, or -1 with errno.
 */
static int
io_uring_off(void)
{
#if defined(__x86_64__)
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 4),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 1, 0),
		/* the x32 ABI's number for it */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x40000000u | __NR_io_uring_setup, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0)
		return 0;
	if (errno != EACCES || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
#else
	errno = ENOTSUP;
	return -1;
#endif
}

/* PROGRAM as exec would find it on PATH. */
static int
resolve(const char *prog, char *out, size_t len)
{
	const char *path = getenv("PATH");
	char *copy, *dir, *save = NULL;

	if (strchr(prog, '/') != NULL) {
		snprintf(out, len, "%s", prog);
		return access(out, X_OK);
	}
	copy = strdup(path != NULL ? path : "/usr/local/bin:/usr/bin:/bin");
	for (dir = strtok_r(copy, ":", &save); dir != NULL; dir = strtok_r(NULL, ":", &save)) {
		snprintf(out, len, "%s/%s", dir[0] ? dir : ".", prog);
		if (access(out, X_OK) == 0) {
			free(copy);
			return 0;
		}
	}
	free(copy);
	return -1;
}

/*
 * What of @path LD_PRELOAD cannot reach, if anything: NULL, or why its
 * sockets will stay kernel TCP. A statically linked program has no loader
 * to preload anything; a Go program makes its socket calls with the system
 * call instruction, past libc, even when it links libc (its ELF has Go's
 * build-info section). Read from the ELF headers (x86-64 only); anything
 * else (a script, another format) says nothing.
 */
static const char *
past_libc(const char *path)
{
	const char *why = NULL;
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	Elf64_Shdr sh, names;
	int fd = open(path, O_RDONLY | O_CLOEXEC), interp = 0;

	if (fd < 0)
		return NULL;
	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_machine != EM_X86_64 ||
	    (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) || eh.e_phentsize != sizeof(ph))
		goto out;
	for (unsigned int i = 0; i < eh.e_phnum; i++) {
		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (uint64_t)i * sizeof(ph))) !=
		    (ssize_t)sizeof(ph))
			goto out;
		interp |= ph.p_type == PT_INTERP;
	}
	if (!interp) {
		why = "is statically linked: no loader runs for it, so LD_PRELOAD cannot reach "
		      "its calls";
		goto out;
	}
	if (eh.e_shentsize != sizeof(sh) || eh.e_shstrndx >= eh.e_shnum ||
	    pread(fd, &names, sizeof(names),
		  (off_t)(eh.e_shoff + (uint64_t)eh.e_shstrndx * sizeof(sh))) != (ssize_t)sizeof(sh))
		goto out;
	for (unsigned int i = 0; i < eh.e_shnum; i++) {
		char name[16] = "";

		if (pread(fd, &sh, sizeof(sh), (off_t)(eh.e_shoff + (uint64_t)i * sizeof(sh))) !=
		    (ssize_t)sizeof(sh) || sh.sh_name >= names.sh_size)
			continue;
		if (pread(fd, name, sizeof(name) - 1, (off_t)(names.sh_offset + sh.sh_name)) > 0 &&
		    strcmp(name, ".go.buildinfo") == 0) {
			why = "is a Go program: Go makes its socket calls itself, past libc, so "
			      "LD_PRELOAD cannot reach them";
			break;
		}
	}
out:
	close(fd);
	return why;
}

/* --stats-file: RB2_RUN_STATS names the file by its absolute path (the
 * program may change its directory before it exits), which is made now, so
 * that a path that cannot be written is said before the program runs. */
static int
stats_file(const char *name)
{
	char cwd[PATH_MAX], abs[PATH_MAX];
	int fd, n;

	if (name[0] == '/') {
		n = snprintf(abs, sizeof(abs), "%s", name);
	} else {
		if (getcwd(cwd, sizeof(cwd)) == NULL) {
			fprintf(stderr, "rb2-run: --stats-file %s: the current directory: %s; give "
				"an absolute path\n", name, strerror(errno));
			return -1;
		}
		n = snprintf(abs, sizeof(abs), "%s/%s", cwd, name);
	}
	if (n < 0 || (size_t)n >= sizeof(abs)) {
		fprintf(stderr, "rb2-run: --stats-file %s: the path is too long\n", name);
		return -1;
	}
	fd = open(abs, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, "rb2-run: --stats-file %s: %s\n", abs, strerror(errno));
		return -1;
	}
	close(fd);
	setenv("RB2_RUN_STATS", abs, 1);
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "stats", no_argument, NULL, 's' },
		{ "stats-file", required_argument, NULL, 'f' },
		{ "socket", required_argument, NULL, 'S' },
		{ "no-service", no_argument, NULL, 'n' },
		{ "allow-io-uring", no_argument, NULL, 'u' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const char *const lib_rel[] = { "../../lib/preload/librb2_preload.so",
					       "../lib/librb2_preload.so", NULL };
	static const char *const sockd_rel[] = { "rb2-sockd", "../rb2-sockd/rb2-sockd", NULL };
	char lib[PATH_MAX], sockd[PATH_MAX], path[108], prog[PATH_MAX], *pre;
	const char *old;
	int opt, no_service = 0, allow_io_uring = 0, setid;
	const char *why;
	struct stat st;

	/* Options end at the program's name: its own options are its own. */
	while ((opt = getopt_long(argc, argv, "+h", lo, NULL)) != -1) {
		switch (opt) {
		case 's': setenv("RB2_RUN_STATS", "1", 1); break;
		case 'f':
			if (stats_file(optarg) != 0)
				return 2;
			break;
		case 'S': setenv("RB2_SOCKD_PATH", optarg, 1); break;
		case 'n': no_service = 1; break;
		case 'u': allow_io_uring = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "rb2-run: no program to run (see rb2-run --help)\n");
		return 2;
	}
	if (find(lib, sizeof(lib), "RB2_PRELOAD_LIB", lib_rel, RB2_PRELOAD_INSTALLED) != 0) {
		fprintf(stderr, "rb2-run: cannot find librb2_preload.so (looked at %s): set "
			"RB2_PRELOAD_LIB, or install rb2 (meson install)\n", lib);
		return 1;
	}
	if (rb2_sockd_path(path, sizeof(path)) != 0) {
		fprintf(stderr, "rb2-run: the service's socket path is too long: set a shorter "
			"RB2_SOCKD_PATH\n");
		return 1;
	}
	setenv("RB2_SOCKD_PATH", path, 1);
	if (resolve(argv[optind], prog, sizeof(prog)) != 0) {
		fprintf(stderr, "rb2-run: %s: command not found\n", argv[optind]);
		return 127;
	}
	setid = stat(prog, &st) == 0 && (st.st_mode & (S_ISUID | S_ISGID));
	if (setid)
		fprintf(stderr, "rb2-run: %s is set-user-ID or set-group-ID: the loader ignores "
			"LD_PRELOAD for it, so its sockets stay kernel TCP\n", prog);
	else if ((why = past_libc(prog)) != NULL)
		fprintf(stderr, "rb2-run: %s %s, and its sockets stay kernel TCP\n", prog, why);
	if (!no_service && !service_up(path)) {
		char *args[] = { sockd, "--daemon", "--socket", path, NULL };
		pid_t pid;
		int status;

		if (find(sockd, sizeof(sockd), "RB2_SOCKD", sockd_rel, RB2_SOCKD_INSTALLED) != 0) {
			fprintf(stderr, "rb2-run: cannot find rb2-sockd (looked at %s): set RB2_SOCKD "
				"or install rb2; running with kernel TCP only\n", sockd);
		} else if (posix_spawn(&pid, sockd, NULL, NULL, args, environ) != 0 ||
			   waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
			   WEXITSTATUS(status) != 0 || !service_up(path)) {
			fprintf(stderr, "rb2-run: could not start %s at %s (see above, and %s.log); "
				"running with kernel TCP only\n", sockd, path, path);
		}
	}
	old = getenv("LD_PRELOAD");
	if (asprintf(&pre, "%s%s%s", lib, old != NULL && old[0] ? ":" : "",
		     old != NULL ? old : "") < 0)
		return 1;
	setenv("LD_PRELOAD", pre, 1);
	/* A set-ID program keeps kernel TCP (above), and its privileges. */
	if (!allow_io_uring && !setid && io_uring_off() != 0) {
		fprintf(stderr, "rb2-run: cannot turn io_uring off (seccomp: %s): %s runs with "
			"it on, and io_uring on an rb2 connection would reach its kernel socket "
			"unseen (--allow-io-uring: the same, without this warning)\n",
			strerror(errno), prog);
	}
	execv(prog, argv + optind);
	fprintf(stderr, "rb2-run: cannot run %s: %s\n", prog, strerror(errno));
	return 126;
}
