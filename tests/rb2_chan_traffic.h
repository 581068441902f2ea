/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_CHAN_TRAFFIC_H
#define RB2_CHAN_TRAFFIC_H

/*
 * Channel traffic for the cross-process tests (with the EAL and without):
 * a sender sends numbered messages of 9-208 bytes, 1 to 2 slots of 128; a
 * receiver checks that they arrive exactly once, in order and intact.
 * Message i: [u64 i][bytes of i & 0xff].
 */

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <stdio.h>

#include <rte_memzone.h>

#include <rb2_chan.h>

static inline uint64_t
chan_traffic_len(uint64_t seq)
{
	return 9 + (seq * 2654435761u) % 200;
}

/* Send messages 0..@count-1 and flush. @return 0, or a negative errno. */
static inline int
chan_traffic_send(struct rb2_tx *tx, uint64_t count)
{
	for (uint64_t seq = 0; seq < count;) {
		uint32_t len = (uint32_t)chan_traffic_len(seq);
		void *slot;
		int ret = rb2_tx_reserve(tx, len, &slot);

		if (ret == -ENOBUFS)
			continue;
		if (ret < 0)
			return ret;
		memset(slot, (int)(seq & 0xff), len);
		memcpy(slot, &seq, 8);
		rb2_tx_commit(tx, len);
		seq++;
	}
	return rb2_tx_flush(tx);
}

/* Check a burst of @n received messages, the next expected being *@got
 * (advanced past them). @return how many were not the expected message. */
static inline uint64_t
chan_traffic_check(const struct rb2_msg *m, int n, uint64_t *got)
{
	uint64_t bad = 0;

	for (int i = 0; i < n; i++, (*got)++) {
		const uint8_t *d = m[i].data;
		uint64_t seq;

		memcpy(&seq, d, 8);
		bad += seq != *got || m[i].len != chan_traffic_len(*got) ||
			d[m[i].len - 1] != (uint8_t)(*got & 0xff);
	}
	return bad;
}

/* Receive and check until @count messages have come (with @until_error:
 * until the channel fails instead), for at most @secs seconds. *@got and
 * *@bad count what came. @return the last burst's result: a negative
 * errno when a failure ended it. */
static inline int
chan_traffic_recv(struct rb2_rx *rx, uint64_t count, int until_error, unsigned int secs,
		  uint64_t *got, uint64_t *bad)
{
	time_t t0 = time(NULL);
	struct rb2_msg m[32];
	int n = 0;

	while ((until_error || *got < count) && time(NULL) - t0 < (time_t)secs) {
		n = rb2_rx_peek_burst(rx, m, 32);
		if (n < 0)
			break;
		*bad += chan_traffic_check(m, n, got);
		if (n > 0)
			rb2_rx_release_burst(rx, m, (unsigned int)n);
	}
	return n;
}

/*
 * Once both halves are destroyed, or one is and the other's process died,
 * both rings are freed, whichever process owned them: the survivor frees a
 * dead process's ring (or a clean one leaves it to the last user). A ring
 * left reserved would refuse the name to the next channel.
 */
static inline int
chan_traffic_rings_freed(const char *name)
{
	int left = 0;

	for (const char *k = "rs"; *k; k++) {
		char zname[RTE_MEMZONE_NAMESIZE];

		snprintf(zname, sizeof(zname), "rb2%c.%s", *k, name);
		if (rte_memzone_lookup(zname) != NULL) {
			printf("FAILED: ring %s still reserved after both halves let go\n", zname);
			left++;
		}
	}
	return left == 0;
}

#endif /* RB2_CHAN_TRAFFIC_H */
