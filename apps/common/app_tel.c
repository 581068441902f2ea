/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* An application's counters in telemetry, in a secondary too (app_tel.h). */

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <jansson.h>
#include <rte_common.h>
#include <rte_eal.h>
#include <rte_telemetry.h>
#include <rte_version.h>

#include "app_tel.h"

#define MAX_CMDS 8
#define OUT_MAX 16384            /* DPDK's max_output_len */

static struct {
	struct {
		const char *cmd, *help;
		void (*fill)(struct app_tel_dict *d);
	} cmds[MAX_CMDS];
	unsigned int n;
	int fd;                  /* a secondary's listening socket, or -1 */
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	pthread_t thread;        /* detached */
} T = { .fd = -1 };

void
app_tel_add(struct app_tel_dict *d, const char *name, uint64_t value)
{
	if (d->n == APP_TEL_MAX)
		return;
	d->name[d->n] = name;
	d->value[d->n++] = value;
}

static int
find(const char *cmd)
{
	for (unsigned int i = 0; i < T.n; i++)
		if (strcmp(T.cmds[i].cmd, cmd) == 0)
			return (int)i;
	return -1;
}

/* DPDK's handler: the same counters as an rte_tel_data dictionary. */
static int
dpdk_handler(const char *cmd, const char *params __rte_unused, struct rte_tel_data *d)
{
	struct app_tel_dict x = {0};
	int i = find(cmd);

	if (i < 0)
		return -EINVAL;
	T.cmds[i].fill(&x);
	rte_tel_data_start_dict(d);
	for (unsigned int k = 0; k < x.n; k++)
		rte_tel_data_add_dict_u64(d, x.name[k], x.value[k]);
	return 0;
}

/* The answer to one request of the v2 protocol, as DPDK gives it. */
static json_t *
answer(const char *req)
{
	char cmd[128];
	const char *comma = strchr(req, ',');
	size_t n = comma != NULL ? (size_t)(comma - req) : strlen(req);
	json_t *val;
	int i;

	snprintf(cmd, sizeof(cmd), "%.*s", (int)n, req);
	if (strcmp(cmd, "/") == 0) {
		val = json_array();
		json_array_append_new(val, json_string("/"));
		json_array_append_new(val, json_string("/help"));
		for (unsigned int k = 0; k < T.n; k++)
			json_array_append_new(val, json_string(T.cmds[k].cmd));
	} else if (strcmp(cmd, "/help") == 0) {
		i = comma != NULL ? find(comma + 1) : -1;
		val = json_object();
		json_object_set_new(val, comma != NULL ? comma + 1 : "/help",
				    i >= 0 ? json_string(T.cmds[i].help) : json_null());
	} else if ((i = find(cmd)) >= 0) {
		struct app_tel_dict x = {0};

		T.cmds[i].fill(&x);
		val = json_object();
		for (unsigned int k = 0; k < x.n; k++)
			json_object_set_new(val, x.name[k], json_integer((json_int_t)x.value[k]));
	} else {
		val = json_null();
	}
	json_t *o = json_object();

	json_object_set_new(o, cmd, val);
	return o;
}

static void
send_json(int fd, json_t *o)
{
	char *s = json_dumps(o, JSON_COMPACT);

	if (s != NULL) {
		(void)!send(fd, s, strnlen(s, OUT_MAX), MSG_NOSIGNAL);
		free(s);
	}
	json_decref(o);
}

/* One client at a time, as DPDK's own socket; a client is short. */
static void *
serve(void *arg)
{
	int lfd = (int)(intptr_t)arg;

	for (;;) {
		int c = accept(lfd, NULL, NULL);
		char req[1024];
		ssize_t n;

		if (c < 0) {
			if (errno == EINTR)
				continue;
			return NULL;    /* shut down by app_tel_close() */
		}
		send_json(c, json_pack("{s:s, s:i, s:i}", "version", rte_version(), "pid",
				       (int)getpid(), "max_output_len", OUT_MAX));
		while ((n = recv(c, req, sizeof(req) - 1, 0)) > 0) {
			req[n] = '\0';
			send_json(c, answer(req));
		}
		close(c);
	}
}

/* Bind @p fd to @p sa, taking over a file a dead process left there. */
static int
bind_fresh(int fd, const struct sockaddr_un *sa)
{
	int probe;

	if (bind(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0)
		return 0;
	if (errno != EADDRINUSE)
		return -1;
	probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (probe < 0)
		return -1;
	if (connect(probe, (const struct sockaddr *)sa, sizeof(*sa)) == 0 ||
	    errno != ECONNREFUSED) {
		close(probe);
		errno = EADDRINUSE;
		return -1;              /* a live one */
	}
	close(probe);
	unlink(sa->sun_path);
	return bind(fd, (const struct sockaddr *)sa, sizeof(*sa));
}

/* Listen on the first free dpdk_telemetry.v2:N of the prefix. */
static int
secondary_socket(const char *app)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *dir = rte_eal_get_runtime_dir();
	int err = 0;

	for (int i = 1; i < 64; i++) {
		int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

		if (fd < 0) {
			err = errno;
			break;
		}
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/dpdk_telemetry.v2:%d", dir, i);
		if (bind_fresh(fd, &sa) < 0 || listen(fd, 4) < 0) {
			err = errno;
			close(fd);
			continue;
		}
		if (pthread_create(&T.thread, NULL, serve, (void *)(intptr_t)fd) != 0) {
			err = errno;
			close(fd);
			unlink(sa.sun_path);
			break;
		}
		pthread_detach(T.thread);
		T.fd = fd;
		snprintf(T.path, sizeof(T.path), "%s", sa.sun_path);
		printf("%s: telemetry: dpdk-telemetry.py -f %s -i %d\n", app,
		       strrchr(dir, '/') + 1, i);
		fflush(stdout);
		return 0;
	}
	fprintf(stderr, "%s: telemetry: no socket of its own under %s: %s (its counters are "
		"not readable while it runs)\n", app, dir, strerror(err));
	return -1;
}

int
app_tel_register(const char *app, const char *cmd, void (*fill)(struct app_tel_dict *d),
		 const char *help)
{
	if (T.n == MAX_CMDS)
		return -1;
	T.cmds[T.n].cmd = cmd;
	T.cmds[T.n].help = help;
	T.cmds[T.n].fill = fill;
	T.n++;
	rte_telemetry_register_cmd(cmd, dpdk_handler, help);
	if (rte_eal_process_type() == RTE_PROC_SECONDARY && T.fd < 0)
		return secondary_socket(app);
	return 0;
}

void
app_tel_close(void)
{
	if (T.fd < 0)
		return;
	/* Wakes the thread's accept(); it returns on its own (detached). */
	shutdown(T.fd, SHUT_RDWR);
	unlink(T.path);
	T.fd = -1;
}
