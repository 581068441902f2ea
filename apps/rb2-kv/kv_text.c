/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* memcached's text protocol on rb2-kv's table (kv_text.h). */

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>

#include "kv_proto.h"
#include "kv_text.h"

#define MAX_TOKENS 24

/* The answer being written: room reserved once, for the worst case of
 * the command, before anything is done, and committed at the end. */
struct answer {
	char *p;
	uint32_t len, cap;
};

static void
emit(struct answer *a, const char *s, uint32_t n)
{
	n = RTE_MIN(n, a->cap - a->len);
	memcpy(a->p + a->len, s, n);
	a->len += n;
}

#define EMIT(a, lit) emit(a, lit, sizeof(lit) - 1)

static void
emitf(struct answer *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
emitf(struct answer *a, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	emit(a, line, (uint32_t)(n < (int)sizeof(line) ? n : (int)sizeof(line) - 1));
}

/* Split a command line in place at spaces. @return the token count. */
static int
tokenize(char *line, char **tok)
{
	int n = 0;

	for (char *p = line; *p != '\0';) {
		while (*p == ' ')
			p++;
		if (*p == '\0')
			break;
		if (n == MAX_TOKENS)
			return -1;
		tok[n++] = p;
		while (*p != ' ' && *p != '\0')
			p++;
		if (*p == ' ')
			*p++ = '\0';
	}
	return n;
}

static int
parse_u32(const char *s, uint32_t *v)
{
	char *end;
	unsigned long x;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	x = strtoul(s, &end, 10);
	if (errno != 0 || *end != '\0' || x > UINT32_MAX)
		return -1;
	*v = (uint32_t)x;
	return 0;
}

/* A decimal number that may be negative (memcached's safe_strtol). */
static int
parse_i64(const char *s, int64_t *v)
{
	char *end;
	long long x;

	if (!((*s >= '0' && *s <= '9') || (*s == '-' && s[1] >= '0' && s[1] <= '9')))
		return -1;
	errno = 0;
	x = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0')
		return -1;
	*v = x;
	return 0;
}

static int
parse_u64(const char *s, uint64_t *v)
{
	char *end;
	unsigned long long x;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0')
		return -1;
	*v = x;
	return 0;
}

#define VALUE_HEAD_MAX (KV_KEY_MAX + 64)   /* "VALUE <key> <flags> <bytes> <cas>\r\n" */

/* get and gets (keys from tok[1]); gat and gats (tok[1] the exptime, keys
 * from tok[2]: each touched, then read). */
static void
get(struct kv_store *s, char **tok, int n, int with_cas, int touch, struct answer *a)
{
	uint32_t cap = kv_store_value_max(s);
	int64_t exptime = 0, expires = 0;

	if (touch) {
		if (parse_i64(tok[1], &exptime) < 0) {
			EMIT(a, "CLIENT_ERROR invalid exptime argument\r\n");
			return;
		}
		expires = kv_store_expiry(exptime);
	}
	for (int i = 1 + touch; i < n; i++) {
		uint32_t klen = (uint32_t)strlen(tok[i]);
		struct kv_meta m;
		char head[VALUE_HEAD_MAX];
		int hl, vl;
		char *r = a->p + a->len;

		if (klen > kv_store_key_max(s)) {
			EMIT(a, "CLIENT_ERROR bad command line format\r\n");
			return;
		}
		if (touch && kv_store_touch(s, tok[i], klen, expires) < 0)
			continue;
		/* The value is read straight into the answer, after room for
		 * its header, which is written once its length is known. */
		vl = kv_store_get(s, tok[i], klen, r + sizeof(head), cap, NULL, &m);
		if (vl < 0)
			continue;
		if (with_cas)
			hl = snprintf(head, sizeof(head), "VALUE %s %" PRIu32 " %d %" PRIu64 "\r\n",
				      tok[i], m.flags, vl, m.cas);
		else
			hl = snprintf(head, sizeof(head), "VALUE %s %" PRIu32 " %d\r\n", tok[i],
				      m.flags, vl);
		memmove(r + hl, r + sizeof(head), (size_t)vl);
		memcpy(r, head, (size_t)hl);
		memcpy(r + hl + vl, "\r\n", 2);
		a->len += (uint32_t)(hl + vl + 2);
	}
	EMIT(a, "END\r\n");
}

/* set|add|replace|append|prepend <key> <flags> <exptime> <bytes> [noreply],
 * cas <key> <flags> <exptime> <bytes> <cas unique> [noreply]: @return the
 * bytes consumed, 0 for more, -EPIPE. */
static int
store(struct kv_store *s, char **tok, int n, const char *data, uint32_t avail,
      uint32_t line_len, struct answer *out)
{
	static const struct { const char *cmd; enum kv_put_mode mode; } cmds[] = {
		{ "set", KV_PUT_SET }, { "add", KV_PUT_ADD }, { "replace", KV_PUT_REPLACE },
		{ "append", KV_PUT_APPEND }, { "prepend", KV_PUT_PREPEND }, { "cas", KV_PUT_CAS },
	};
	struct kv_write w = { .mode = KV_PUT_SET };
	int args = 5, noreply, ret;
	int64_t exptime;
	uint32_t bytes;

	for (unsigned int i = 0; i < RTE_DIM(cmds); i++)
		if (strcmp(tok[0], cmds[i].cmd) == 0)
			w.mode = cmds[i].mode;
	if (w.mode == KV_PUT_CAS)
		args = 6;
	noreply = n == args + 1 && strcmp(tok[args], "noreply") == 0;
	if (n != args && n != args + 1) {
		EMIT(out, "ERROR\r\n");         /* memcached's word for a wrong count */
		return (int)line_len;
	}
	if (parse_u32(tok[2], &w.flags) < 0 || parse_i64(tok[3], &exptime) < 0 ||
	    parse_u32(tok[4], &bytes) < 0 ||
	    (w.mode == KV_PUT_CAS && parse_u64(tok[5], &w.cas) < 0)) {
		/* memcached cannot tell where the data ends either: it
		 * reads the next line as a command. */
		EMIT(out, "CLIENT_ERROR bad command line format\r\n");
		return (int)line_len;
	}
	if (avail < (uint64_t)bytes + 2) {
		if (bytes > KV_VALUE_MAX + 2 * KV_TEXT_LINE_MAX)  /* never buffered */
			goto too_large_close;
		return 0;
	}
	if (data[bytes] != '\r' || data[bytes + 1] != '\n') {
		EMIT(out, "CLIENT_ERROR bad data chunk\r\n");
		return -EPIPE;
	}
	w.expires = kv_store_expiry(exptime);
	ret = kv_store_write(s, tok[1], (uint32_t)strlen(tok[1]), data, bytes, &w);
	if (!noreply || ret == -ENAMETOOLONG) {
		switch (ret) {
		case 0: EMIT(out, "STORED\r\n"); break;
		case -EEXIST:
			if (w.mode == KV_PUT_CAS)
				EMIT(out, "EXISTS\r\n");
			else
				EMIT(out, "NOT_STORED\r\n");
			break;
		case -ENOENT:
			if (w.mode == KV_PUT_CAS)
				EMIT(out, "NOT_FOUND\r\n");
			else
				EMIT(out, "NOT_STORED\r\n");
			break;
		case -E2BIG: EMIT(out, "SERVER_ERROR object too large for cache\r\n"); break;
		case -ENOSPC: EMIT(out, "SERVER_ERROR out of memory storing object\r\n"); break;
		default: EMIT(out, "CLIENT_ERROR bad command line format\r\n"); break;
		}
	}
	return (int)(line_len + bytes + 2);
too_large_close:
	EMIT(out, "SERVER_ERROR object too large for cache\r\n");
	return -EPIPE;
}

/* incr|decr <key> <value> [noreply] */
static void
incr(struct kv_store *s, char **tok, int n, struct answer *out)
{
	int noreply = n == 4 && strcmp(tok[3], "noreply") == 0;
	uint64_t delta, v;
	int ret;

	if (parse_u64(tok[2], &delta) < 0) {
		EMIT(out, "CLIENT_ERROR invalid numeric delta argument\r\n");
		return;
	}
	ret = kv_store_incr(s, tok[1], (uint32_t)strlen(tok[1]), delta, tok[0][0] == 'd', &v);
	if (noreply && ret != -ENAMETOOLONG)
		return;
	if (ret == 0)
		emitf(out, "%" PRIu64 "\r\n", v);
	else if (ret == -ENOENT)
		EMIT(out, "NOT_FOUND\r\n");
	else if (ret == -EINVAL)
		EMIT(out, "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
	else
		EMIT(out, "CLIENT_ERROR bad command line format\r\n");
}

/* touch <key> <exptime> [noreply] */
static void
touch(struct kv_store *s, char **tok, int n, struct answer *out)
{
	int noreply = n == 4 && strcmp(tok[3], "noreply") == 0;
	int64_t exptime;
	int ret;

	if (parse_i64(tok[2], &exptime) < 0) {
		EMIT(out, "CLIENT_ERROR invalid exptime argument\r\n");
		return;
	}
	ret = kv_store_touch(s, tok[1], (uint32_t)strlen(tok[1]), kv_store_expiry(exptime));
	if (noreply && ret != -ENAMETOOLONG)
		return;
	if (ret == 0)
		EMIT(out, "TOUCHED\r\n");
	else if (ret == -ENOENT)
		EMIT(out, "NOT_FOUND\r\n");
	else
		EMIT(out, "CLIENT_ERROR bad command line format\r\n");
}

static void
stats(struct kv_store *s, struct answer *out)
{
	struct kv_store_stats st;

	kv_store_stats_get(s, &st);
	emitf(out, "STAT cmd_get %" PRIu64 "\r\nSTAT get_hits %" PRIu64
	      "\r\nSTAT get_misses %" PRIu64 "\r\nSTAT cmd_set %" PRIu64
	      "\r\nSTAT cmd_delete %" PRIu64 "\r\nSTAT curr_items_max %" PRIu64
	      "\r\nEND\r\n", st.gets, st.hits, st.gets - st.hits, st.puts, st.dels, st.keys);
}

/* The command's answer, at most: a get's is a value per key; others'
 * are a line. */
static uint32_t
answer_max(const struct kv_store *s, char **tok, int n_tok)
{
	if (n_tok >= 2 && (strcmp(tok[0], "get") == 0 || strcmp(tok[0], "gets") == 0))
		return (uint32_t)(n_tok - 1) * (VALUE_HEAD_MAX + kv_store_value_max(s) + 2) + 8;
	if (n_tok >= 3 && (strcmp(tok[0], "gat") == 0 || strcmp(tok[0], "gats") == 0))
		return (uint32_t)(n_tok - 2) * (VALUE_HEAD_MAX + kv_store_value_max(s) + 2) + 8;
	return 512;
}

static int
exec_line(struct kv_store *s, const char *in, uint32_t len, uint32_t line_len, char *line,
	  char **tok, int n, struct answer *out)
{
	if ((strcmp(tok[0], "get") == 0 || strcmp(tok[0], "gets") == 0) && n >= 2) {
		get(s, tok, n, tok[0][3] == 's', 0, out);
	} else if ((strcmp(tok[0], "gat") == 0 || strcmp(tok[0], "gats") == 0) && n >= 2) {
		get(s, tok, n, tok[0][3] == 's', 1, out);
	} else if (strcmp(tok[0], "set") == 0 || strcmp(tok[0], "add") == 0 ||
		   strcmp(tok[0], "replace") == 0 || strcmp(tok[0], "append") == 0 ||
		   strcmp(tok[0], "prepend") == 0 || strcmp(tok[0], "cas") == 0) {
		return store(s, tok, n, in + line_len, len - line_len, line_len, out);
	} else if ((strcmp(tok[0], "incr") == 0 || strcmp(tok[0], "decr") == 0) &&
		   (n == 3 || n == 4)) {
		incr(s, tok, n, out);
	} else if (strcmp(tok[0], "touch") == 0 && (n == 3 || n == 4)) {
		touch(s, tok, n, out);
	} else if (strcmp(tok[0], "delete") == 0 && n >= 2 && n <= 4) {
		/* delete <key> [0] [noreply]: the 0 is an old client's hold time. */
		int noreply = strcmp(tok[n - 1], "noreply") == 0;
		int ret;

		if (n - noreply > 3 || (n - noreply == 3 && strcmp(tok[2], "0") != 0)) {
			EMIT(out, "CLIENT_ERROR bad command line format.  Usage: delete <key> "
			     "[noreply]\r\n");
			return (int)line_len;
		}
		ret = kv_store_del(s, tok[1], (uint32_t)strlen(tok[1]));
		if (noreply && ret != -ENAMETOOLONG)
			return (int)line_len;
		if (ret == 0)
			EMIT(out, "DELETED\r\n");
		else if (ret == -ENOENT)
			EMIT(out, "NOT_FOUND\r\n");
		else
			EMIT(out, "CLIENT_ERROR bad command line format\r\n");
	} else if (strcmp(tok[0], "verbosity") == 0 && (n == 2 || n == 3)) {
		/* Accepted, as memcached does; rb2-kv logs through rte_log. */
		if (!(n == 3 && strcmp(tok[2], "noreply") == 0))
			EMIT(out, "OK\r\n");
	} else if (strcmp(tok[0], "flush_all") == 0 && n <= 3) {
		/* flush_all [delay] [noreply] */
		int noreply = strcmp(tok[n - 1], "noreply") == 0;
		int64_t delay = 0;

		if (n - noreply == 2 && parse_i64(tok[1], &delay) < 0) {
			EMIT(out, "CLIENT_ERROR bad command line format\r\n");
			return (int)line_len;
		}
		kv_store_flush_at(s, delay > 0 ? kv_store_expiry(delay) - 1 : 0);
		if (!noreply)
			EMIT(out, "OK\r\n");
	} else if (strcmp(tok[0], "version") == 0) {
		EMIT(out, "VERSION rb2-kv-" RB2_VERSION "\r\n");
	} else if (strcmp(tok[0], "stats") == 0 && n == 1) {
		stats(s, out);
	} else if (strcmp(tok[0], "quit") == 0) {
		return -EPIPE;
	} else {
		EMIT(out, "ERROR\r\n");
	}
	(void)line;
	return (int)line_len;
}

int
kv_text_exec(struct kv_store *s, const char *in, uint32_t len, const struct app_out *out)
{
	char line[KV_TEXT_LINE_MAX + 1], *tok[MAX_TOKENS];
	const char *nl = memchr(in, '\n', len < KV_TEXT_LINE_MAX ? len : KV_TEXT_LINE_MAX);
	struct answer a = {0};
	uint32_t line_len, n_line;
	int n, ret;

	if (nl == NULL) {
		if (len < KV_TEXT_LINE_MAX)
			return 0;
		n = -1;
		line_len = 0;
		ret = -EPIPE;
		goto answer;
	}
	line_len = (uint32_t)(nl - in) + 1;
	n_line = line_len - 1;
	if (n_line > 0 && in[n_line - 1] == '\r')
		n_line--;
	memcpy(line, in, n_line);
	line[n_line] = '\0';
	n = memchr(line, '\0', n_line) != NULL ? -1 : tokenize(line, tok);
	ret = (int)line_len;
answer:
	/* Room for the worst case first: a command that finds none has
	 * done nothing, and runs again when the client has read. */
	a.cap = answer_max(s, tok, n);
	if (a.cap > out->max) {
		a.cap = out->max;
		if (n > 2)
			n = -2;         /* a get of more keys than an answer holds */
	}
	a.p = out->reserve(out->ctx, a.cap);
	if (a.p == NULL)
		return -EAGAIN;
	if (line_len == 0)
		EMIT(&a, "CLIENT_ERROR line too long\r\n");
	else if (n == -2)
		EMIT(&a, "SERVER_ERROR too many keys for one answer\r\n");
	else if (n < 0)
		EMIT(&a, "CLIENT_ERROR bad command line format\r\n");
	else if (n == 0)
		EMIT(&a, "ERROR\r\n");
	else
		ret = exec_line(s, in, len, line_len, line, tok, n, &a);
	if (a.len > 0)
		out->commit(out->ctx, a.len);
	else
		out->cancel(out->ctx);         /* noreply, quit */
	return ret;
}
