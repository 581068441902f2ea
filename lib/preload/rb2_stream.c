/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

/* A byte stream over an RB² channel pair in an arena (rb2_stream.h). */

#define _GNU_SOURCE             /* POLLRDHUP */

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_errno.h>
#include <rte_memzone.h>

#include <rb2_chan.h>
#include <rb2_xport.h>

#include "rb2_stream.h"

/* The words both ends share. Direction 0 carries the client's bytes, 1 the
 * server's; end 0 is the client, 1 the server: end e writes direction e. */
/* Laid out by who writes what, how often: every poll reads the state line,
 * and each end bumps its own counters per message, so the state stays in
 * both caches and one end's bumps do not take the other's line away. With
 * all of it in one line, a 64 B round trip through send() and recv() took
 * 340 ns against a bare channel's 150 ns; laid out so, 250-270 ns
 * (tests/rb2run_pingpong, 4 interleaved rounds). */
struct stream_ctl {
	/* State, written once or twice in a stream's life. */
	_Atomic uint32_t shut[2];        /* direction d's writer sent its last byte */
	_Atomic uint32_t closed[2];      /* end e closed: its reads are over */
	_Atomic uint32_t reset[2];       /* end e closed with bytes unread: TCP's RST */
	_Atomic uint32_t ends;           /* ends open; the last to close frees this */
	/* Who sleeps: set by a sleeper, cleared by whoever rings it. */
	alignas(64) _Atomic uint32_t rd_sleeps[2]; /* direction d's reader wants a bell for data */
	_Atomic uint32_t wr_sleeps[2];   /* direction d's writer wants a bell for room */
	/* Per end e, written by e alone: events for edge-triggered waiters, as
	 * the kernel's wake-ups, and its bells. */
	alignas(64) struct {
		_Atomic uint32_t pub;    /* e published on direction e, or shut it down */
		_Atomic uint32_t rel;    /* e freed room on direction !e, or closed */
		_Atomic uint64_t rung;   /* bells e sent, counted before each send */
		char pad[48];
	} by[2];
};

#define RB2_STREAM_SLOTS 256

struct rb2_stream {
	struct rb2_xport *xp;
	struct rb2_tx *tx;
	struct rb2_rx *rx;
	const struct rte_memzone *ctl_mz;
	struct stream_ctl *ctl;
	int me;                  /* 0: client, 1: server */
	int bell;
	int wr_shut;
	int reset;               /* a write after the peer's close was taken */
	int rst_seen;            /* a read reported the peer's reset */
	int corked;              /* the program set TCP_CORK on the bell's socket */
	int broken;              /* bytes came on the bell's socket that no bell sent */
	int peer_gone;           /* the peer's kernel socket closed: its process ended */
	uint64_t bell_bytes;     /* bytes read off the bell's socket */
	uint32_t off;            /* bytes of the first unreleased message already read */
	struct rb2_stream_stats st;
};

static void
params(struct rb2_chan_params *p)
{
	rb2_chan_params_init(p);
	p->slots = RB2_STREAM_SLOTS;   /* 512 KiB each way: a 64 KiB write is an eighth */
	p->slot_size = 2048;
}

/* The bell's system calls, not libc's functions: under rb2-run, libc's
 * send and recv on this socket are the preload library's own, which would
 * come back here. */
static void
ring(struct rb2_stream *s)
{
	static const int off = 0, on = 1;

	/* One byte makes the peer's socket readable; if its buffer is full,
	 * the bytes already there do the same. A program that corks its
	 * socket (nginx's tcp_nopush) would hold the byte for up to 200 ms:
	 * uncorking sends it, and the cork goes back on. */
	if (s->corked)
		(void)syscall(SYS_setsockopt, s->bell, IPPROTO_TCP, TCP_CORK, &off, sizeof(off));
	/* Counted first: the peer never reads more bells than this says. */
	atomic_fetch_add_explicit(&s->ctl->by[s->me].rung, 1, memory_order_release);
	(void)syscall(SYS_sendto, s->bell, "", 1, MSG_DONTWAIT | MSG_NOSIGNAL, NULL, 0);
	if (s->corked)
		(void)syscall(SYS_setsockopt, s->bell, IPPROTO_TCP, TCP_CORK, &on, sizeof(on));
	s->st.bells_rung++;
}

void
rb2_stream_corked(struct rb2_stream *s, int corked)
{
	s->corked = corked != 0;
}

/* After publishing data (@dir = ours) or freeing room (@dir = the peer's):
 * ring the peer if it asked. Seq-cst: our publication before our look at
 * its flag, as its flag before its last look at the ring (Dekker). */
static void
ring_if(struct rb2_stream *s, _Atomic uint32_t *flag)
{
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(flag, memory_order_relaxed) != 0 &&
	    atomic_exchange_explicit(flag, 0, memory_order_relaxed) != 0)
		ring(s);
}

/* One more event on @ctr: only this end writes it (its caller holds the
 * end's lock), so a plain increment, published for the peer's next look. */
static void
bump(_Atomic uint32_t *ctr)
{
	atomic_store_explicit(ctr, atomic_load_explicit(ctr, memory_order_relaxed) + 1,
			      memory_order_release);
}

/* The peer closed its end, or its kernel socket closed without that: the
 * kernel closes a process's sockets when it ends, and the FIN reaches this
 * end's bell (read by rb2_stream_disarm()). A sleeper learns of a dead peer
 * so at once, where the channel's liveness look runs only while it polls. */
static inline int
peer_closed(const struct rb2_stream *s)
{
	return s->peer_gone || atomic_load_explicit(&s->ctl->closed[!s->me], memory_order_acquire);
}

/* The connection is reset: the peer closed with our bytes unread (TCP's
 * RST), or this end found bytes on its bell's socket that no bell sent. */
static inline int
peer_reset(const struct rb2_stream *s)
{
	return s->broken || atomic_load_explicit(&s->ctl->reset[!s->me], memory_order_acquire);
}

struct rb2_stream *
rb2_stream_open(const char *name, int is_client, int bell_fd, unsigned int timeout_ms)
{
	struct rb2_stream *s = calloc(1, sizeof(*s));
	struct rb2_chan_params p;
	char up[RB2_CHAN_NAMESIZE], down[RB2_CHAN_NAMESIZE], cz[RTE_MEMZONE_NAMESIZE];
	int ret = -ENOMEM;

	if (s == NULL)
		goto fail;
	s->me = is_client ? 0 : 1;
	s->bell = bell_fd;
	snprintf(up, sizeof(up), "%s.u", name);
	snprintf(down, sizeof(down), "%s.d", name);
	snprintf(cz, sizeof(cz), "%s.c", name);
	/* Whichever end comes first makes the control zone. */
	s->ctl_mz = rte_memzone_reserve(cz, sizeof(struct stream_ctl), 0, 0);
	if (s->ctl_mz == NULL && rte_errno == EEXIST)
		s->ctl_mz = rte_memzone_lookup(cz);
	if (s->ctl_mz == NULL)
		goto fail;
	s->ctl = s->ctl_mz->addr;
	atomic_fetch_add(&s->ctl->ends, 1);
	params(&p);
	s->xp = rb2_xport_open("shm", NULL);
	if (s->xp == NULL)
		goto fail;
	/* Both ends connect "up" first, then "down": no end waits on the
	 * other's second channel before its first. */
	if (is_client) {
		s->tx = rb2_tx_create(up, s->xp, &p);
		s->rx = rb2_rx_create(down, s->xp, &p);
		if (s->tx == NULL || s->rx == NULL)
			goto fail;
		if ((ret = rb2_tx_connect(s->tx, up, timeout_ms)) != 0 ||
		    (ret = rb2_rx_connect(s->rx, down, timeout_ms)) != 0)
			goto fail;
	} else {
		s->rx = rb2_rx_create(up, s->xp, &p);
		s->tx = rb2_tx_create(down, s->xp, &p);
		if (s->tx == NULL || s->rx == NULL)
			goto fail;
		if ((ret = rb2_rx_connect(s->rx, up, timeout_ms)) != 0 ||
		    (ret = rb2_tx_connect(s->tx, down, timeout_ms)) != 0)
			goto fail;
	}
	return s;
fail:
	if (ret == -ENOMEM && rte_errno != 0)
		ret = -rte_errno;
	if (s != NULL)
		rb2_stream_close(s);
	errno = -ret;
	return NULL;
}

ssize_t
rb2_stream_send(struct rb2_stream *s, const struct iovec *iov, int iovcnt)
{
	size_t total = 0, left = 0;
	int i = 0, ret = 0;
	size_t ioff = 0;

	for (int k = 0; k < iovcnt; k++)
		left += iov[k].iov_len;
	if (s->wr_shut || peer_reset(s))
		return -EPIPE;
	if (peer_closed(s)) {
		/* As TCP: the first write after the peer closed is taken (and
		 * answered with a reset), the next ones fail. */
		if (s->reset)
			return -EPIPE;
		s->reset = 1;
		return (ssize_t)left;
	}
	while (left > 0) {
		uint32_t len = (uint32_t)RTE_MIN(left, (size_t)RB2_STREAM_CHUNK);
		uint8_t *slot;
		uint32_t done = 0;

		/* A big write that does not fit whole goes in what fits, down
		 * to one byte: whenever rb2_stream_poll() says POLLOUT (a byte
		 * fits), a send takes something, or a writer would spin. */
		while ((ret = rb2_tx_reserve(s->tx, len, (void **)&slot)) == -ENOBUFS && len > 1)
			len /= 2;
		if (ret < 0)
			break;
		while (done < len) {            /* gather from the iovecs */
			size_t n = RTE_MIN((size_t)(len - done), iov[i].iov_len - ioff);

			rb2_msg_copy(slot + done, (const uint8_t *)iov[i].iov_base + ioff, n);
			done += (uint32_t)n;
			ioff += n;
			if (ioff == iov[i].iov_len) {
				i++;
				ioff = 0;
			}
		}
		rb2_tx_commit(s->tx, len);
		total += len;
		left -= len;
	}
	if (total > 0) {
		int f = rb2_tx_flush(s->tx);

		s->st.bytes_out += total;
		bump(&s->ctl->by[s->me].pub);
		ring_if(s, &s->ctl->rd_sleeps[s->me]);
		if (f < 0)
			return f;
		return (ssize_t)total;
	}
	if (ret == -ECONNRESET) {
		/* The peer's process is gone: its sockets closed with it. */
		if (s->reset)
			return -EPIPE;
		s->reset = 1;
		return (ssize_t)left;
	}
	return ret == -ENOBUFS ? -EAGAIN : ret;
}

/* The peer shut its direction down, and everything it sent is read. */
static int
at_eof(struct rb2_stream *s)
{
	struct rb2_msg m;

	if (!s->peer_gone && !atomic_load_explicit(&s->ctl->shut[!s->me], memory_order_acquire))
		return 0;
	/* It shut down after its last publication: look once more. */
	return rb2_rx_peek_burst(s->rx, &m, 1) == 0;
}

ssize_t
rb2_stream_recv(struct rb2_stream *s, const struct iovec *iov, int iovcnt, int peek)
{
	struct rb2_msg m[32];
	size_t total = 0, ioff = 0;
	uint32_t off = s->off;
	unsigned int released = 0;
	int n, i = 0;

	/* The peer closed with our bytes unread: as TCP's RST, one read fails
	 * with ECONNRESET, and what it had sent is dropped; then the end. */
	if (peer_reset(s)) {
		if (s->rst_seen || peek)
			return s->rst_seen ? 0 : -ECONNRESET;
		s->rst_seen = 1;
		return -ECONNRESET;
	}
	while (i < iovcnt && iov[i].iov_len == 0)
		i++;
	if (i == iovcnt)
		return 0;
	/* Rounds of up to 32 messages: a peek shows what the receiver last
	 * saw of the tail, and looks again only once that is read, so one
	 * read takes what arrived meanwhile too, as the kernel's does. */
	for (;;) {
		unsigned int done_msgs = 0;

		n = rb2_rx_peek_burst(s->rx, m, 32);
		if (n <= 0)
			break;
		for (int k = 0; k < n && i < iovcnt; k++) {
			uint32_t mlen = rb2_msg_len(&m[k]);

			while (off < mlen && i < iovcnt) {
				size_t c = RTE_MIN((size_t)(mlen - off), iov[i].iov_len - ioff);

				rb2_msg_copy((uint8_t *)iov[i].iov_base + ioff,
					     (const uint8_t *)m[k].data + off, c);
				off += (uint32_t)c;
				ioff += c;
				total += c;
				if (ioff == iov[i].iov_len) {
					i++;
					ioff = 0;
					while (i < iovcnt && iov[i].iov_len == 0)
						i++;
				}
			}
			if (off < mlen)
				break;               /* the buffer is full mid-message */
			done_msgs++;
			off = 0;
		}
		if (peek)
			break;
		s->off = off;
		if (done_msgs > 0) {
			rb2_rx_release_burst(s->rx, m, done_msgs);
			released += done_msgs;
		}
		if (i == iovcnt || done_msgs < (unsigned int)n)
			break;               /* full, or stopped mid-message */
	}
	if (released > 0) {
		/* The writer learns of freed room from the head the receiver
		 * stores when a look finds the ring drained (lazy head: no push
		 * until gamma slots). So look once more, which stores it if
		 * drained, and only then wake a writer short of room: woken
		 * first, it could read the old head and sleep for good. */
		if (n > 0)
			(void)rb2_rx_peek_burst(s->rx, m, 1);
		bump(&s->ctl->by[s->me].rel);
		ring_if(s, &s->ctl->wr_sleeps[!s->me]);
	}
	if (total > 0) {
		if (!peek)
			s->st.bytes_in += total;
		return (ssize_t)total;
	}
	if (n == 0)
		return at_eof(s) ? 0 : -EAGAIN;
	/* The peer's process is gone and we read all it sent: the end, as
	 * the kernel's FIN when a process exits with its sockets open. */
	return at_eof(s) || n == -ECONNRESET ? 0 : n;
}

size_t
rb2_stream_nread(struct rb2_stream *s)
{
	struct rb2_msg m[RB2_STREAM_SLOTS];     /* a message takes a slot at least */
	size_t bytes = 0;
	int n;

	/* Everything published, not only what the last read saw: nginx
	 * reads exactly FIONREAD's count after a full read, then waits for
	 * the next edge, which never comes if the count fell short. */
	rb2_rx_look_again(s->rx);
	n = rb2_rx_peek_burst(s->rx, m, RB2_STREAM_SLOTS);
	for (int k = 0; k < n; k++)
		bytes += rb2_msg_len(&m[k]);
	return bytes > s->off ? bytes - s->off : 0;
}

int
rb2_stream_poll(struct rb2_stream *s)
{
	struct rb2_msg m;
	void *slot;
	int ev = 0, n, w;

	if (peer_reset(s))
		return POLLIN | POLLOUT | POLLRDHUP | POLLHUP | (s->rst_seen ? 0 : POLLERR);
	n = rb2_rx_peek_burst(s->rx, &m, 1);

	if (n > 0)
		ev |= POLLIN;
	else if (n < 0)
		ev |= at_eof(s) || n == -ECONNRESET ? POLLIN | POLLRDHUP : POLLIN | POLLERR | POLLHUP;
	else if (at_eof(s))
		ev |= POLLIN | POLLRDHUP;
	if (peer_closed(s))
		ev |= POLLOUT | (s->wr_shut ? POLLHUP : 0);  /* a write fails at once */
	else if (!s->wr_shut && (w = rb2_tx_reserve(s->tx, 1, &slot)) != -ENOBUFS)
		ev |= POLLOUT | (w < 0 ? POLLERR : 0);     /* reserving again returns it */
	if (s->wr_shut && (ev & POLLRDHUP))
		ev |= POLLHUP;
	return ev;
}

void
rb2_stream_edges(const struct rb2_stream *s, uint32_t *in, uint32_t *out)
{
	*in = atomic_load_explicit(&s->ctl->by[!s->me].pub, memory_order_acquire);
	*out = atomic_load_explicit(&s->ctl->by[!s->me].rel, memory_order_acquire);
}

void
rb2_stream_want(struct rb2_stream *s, int events)
{
	if (events & POLLIN)
		atomic_store_explicit(&s->ctl->rd_sleeps[!s->me], 1, memory_order_relaxed);
	if (events & POLLOUT)
		atomic_store_explicit(&s->ctl->wr_sleeps[s->me], 1, memory_order_relaxed);
	s->st.sleeps++;
	/* The flag before the caller's last look (ring_if()'s other half). */
	atomic_thread_fence(memory_order_seq_cst);
}

int
rb2_stream_arm(struct rb2_stream *s, int events)
{
	int ev;

	rb2_stream_want(s, events);
	ev = rb2_stream_poll(s) & (events | POLLERR | POLLHUP | POLLRDHUP);
	if (ev != 0)
		rb2_stream_disarm(s, events);
	return ev;
}

/* Reset the connection both ways, count what was lost, and say why. */
static void
found_foreign(struct rb2_stream *s)
{
	uint64_t rung = atomic_load_explicit(&s->ctl->by[!s->me].rung, memory_order_acquire);

	s->broken = 1;
	s->st.foreign_bytes = s->bell_bytes - rung;
	atomic_store_explicit(&s->ctl->reset[s->me], 1, memory_order_release);
	atomic_store_explicit(&s->ctl->closed[s->me], 1, memory_order_release);
	bump(&s->ctl->by[s->me].pub);
	bump(&s->ctl->by[s->me].rel);
	ring_if(s, &s->ctl->rd_sleeps[s->me]);
	ring_if(s, &s->ctl->wr_sleeps[!s->me]);
	fprintf(stderr, "rb2-run: pid %d: fd %d: at least %" PRIu64 " bytes came on the kernel "
		"socket under an rb2 connection, past rb2-run's calls (io_uring, a raw system "
		"call, or a program started by posix_spawn() or system()); they cannot join the "
		"stream in order, so the connection is reset\n", (int)getpid(), s->bell,
		s->st.foreign_bytes);
}

void
rb2_stream_disarm(struct rb2_stream *s, int events)
{
	char buf[64];
	long n;
	int err = errno;         /* the caller's wait's errno (EINTR) survives */

	if (events & POLLIN)
		atomic_store_explicit(&s->ctl->rd_sleeps[!s->me], 0, memory_order_relaxed);
	if (events & POLLOUT)
		atomic_store_explicit(&s->ctl->wr_sleeps[s->me], 0, memory_order_relaxed);
	/* The bell's bytes: read them away, so the socket stops being readable.
	 * A read that did not fill the buffer found them all: no second call
	 * to learn so (a bell after it makes the socket readable again, and
	 * a kernel epoll entry fires anew). */
	do {
		n = syscall(SYS_recvfrom, s->bell, buf, sizeof(buf), MSG_DONTWAIT, NULL, NULL);
		if (n > 0)
			s->bell_bytes += (uint64_t)n;
		else if (n == 0 || errno == ECONNRESET)
			s->peer_gone = 1;    /* every holder of the peer's socket closed it */
	} while (n == (long)sizeof(buf));
	/* More than the peer rang: someone wrote on the kernel socket past
	 * rb2-run's calls, and those bytes cannot join the stream in order. */
	if (!s->broken &&
	    s->bell_bytes > atomic_load_explicit(&s->ctl->by[!s->me].rung, memory_order_acquire))
		found_foreign(s);
	errno = err;
}

void
rb2_stream_shutdown_wr(struct rb2_stream *s)
{
	if (s->wr_shut)
		return;
	rb2_tx_flush(s->tx);
	s->wr_shut = 1;
	/* Release: every byte published before the flag. */
	atomic_store_explicit(&s->ctl->shut[s->me], 1, memory_order_release);
	bump(&s->ctl->by[s->me].pub);
	/* A reader asleep must wake to see the end. */
	ring_if(s, &s->ctl->rd_sleeps[s->me]);
}

void
rb2_stream_close(struct rb2_stream *s)
{
	if (s->ctl != NULL) {
		struct rb2_msg m;

		if (s->tx != NULL)
			rb2_stream_shutdown_wr(s);
		/* Bytes the peer sent that nobody read: TCP answers with a
		 * reset, not a FIN. */
		if (s->rx != NULL && (s->off > 0 || rb2_rx_peek_burst(s->rx, &m, 1) > 0))
			atomic_store_explicit(&s->ctl->reset[s->me], 1, memory_order_release);
		atomic_store_explicit(&s->ctl->closed[s->me], 1, memory_order_release);
		bump(&s->ctl->by[s->me].rel);
		/* A writer waiting for room learns that nobody will read. */
		ring_if(s, &s->ctl->wr_sleeps[!s->me]);
	}
	if (s->tx != NULL)
		rb2_tx_destroy(s->tx);
	if (s->rx != NULL)
		rb2_rx_destroy(s->rx);
	if (s->xp != NULL)
		rb2_xport_close(s->xp);
	if (s->ctl != NULL && atomic_fetch_sub(&s->ctl->ends, 1) == 1)
		rte_memzone_free(s->ctl_mz);
	free(s);
}

void
rb2_stream_stats(const struct rb2_stream *s, struct rb2_stream_stats *st)
{
	*st = s->st;
}

void
rb2_stream_dump(struct rb2_stream *s, int fd, FILE *f)
{
	struct rb2_tx_ptrs tp;
	struct rb2_rx_ptrs rp;
	struct stream_ctl *c = s->ctl;
	int d = s->me, e = !s->me;

	rb2_tx_pointers(s->tx, &tp);
	rb2_rx_pointers(s->rx, &rp);
	fprintf(f, "rb2 stream fd %d (%s): poll 0x%x; out: tail %" PRIu64 " synced %" PRIu64
		" head seen %" PRIu64 ", peer reader sleeps %u, writer (us) sleeps %u, pub %u rel %u;"
		" in: head %" PRIu64 " synced %" PRIu64 " tail seen %" PRIu64 ", reader (us) sleeps %u,"
		" peer writer sleeps %u, pub %u rel %u; shut %u/%u closed %u/%u; off %u\n",
		fd, s->me ? "server" : "client", rb2_stream_poll(s), tp.tail, tp.synced_tail,
		tp.local_head, c->rd_sleeps[d], c->wr_sleeps[d], c->by[d].pub, c->by[e].rel, rp.head,
		rp.synced_head, rp.local_tail, c->rd_sleeps[e], c->wr_sleeps[e], c->by[e].pub, c->by[d].rel,
		c->shut[d], c->shut[e], c->closed[d], c->closed[e], s->off);
}
