/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef KV_TEXT_H
#define KV_TEXT_H

/*
 * memcached's text protocol (its doc/protocol.txt) on rb2-kv's table, for
 * the TCP front, so stock clients (memcslap, memccat, memccp, telnet) work:
 * get, gets, set, add, replace, delete, flush_all, version, stats, quit,
 * with noreply. Items never expire: a set with a non-zero exptime gets
 * "CLIENT_ERROR expiry not supported", not a silent change of meaning.
 */

#include <stdint.h>

#include "app_server.h"
#include "kv_store.h"

#define KV_TEXT_LINE_MAX 2048    /* a command line longer is an error */

/*
 * Execute the first command in @p in (@p len bytes received so far),
 * writing its answer to @p out. Room for the command's largest answer is
 * reserved before anything is done.
 *
 * @return the bytes consumed (> 0), 0 (the command is not complete yet:
 *   read more), -EAGAIN (no room for the answer: nothing was done; call
 *   again later), or -EPIPE (close the connection after sending what was
 *   written: quit, a line over KV_TEXT_LINE_MAX, a data block without its
 *   "\r\n").
 */
int kv_text_exec(struct kv_store *s, const char *in, uint32_t len, const struct app_out *out);

#endif /* KV_TEXT_H */
