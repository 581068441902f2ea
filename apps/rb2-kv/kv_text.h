/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef KV_TEXT_H
#define KV_TEXT_H

/*
 * memcached's classic text protocol (its doc/protocol.txt) on rb2-kv's
 * table, for the TCP front, so stock clients (memcslap, memccat, memccp,
 * telnet) work: set, add, replace, append, prepend, cas; get, gets, gat,
 * gats; incr, decr; touch; delete; flush_all (with a delay); stats, version,
 * verbosity, quit; noreply wherever memcached takes it. Every reply and
 * error is memcached 1.6's, word for word (tests/memcached_conformance.py
 * checks them against a stock memcached): expiry in memcached's three forms
 * (seconds, a unix time past 30 days, negative), incr's wrap and decr's
 * floor, the space padding a shorter number leaves. What differs: stats
 * gives rb2-kv's own counters, and verbosity changes nothing (rb2-kv logs
 * through rte_log).
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
