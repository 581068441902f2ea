/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_STREAM_H
#define RB2_STREAM_H

/**
 * @file
 * A TCP-like byte stream over an RB² channel pair: what one connection of
 * rb2-run is on one host.
 *
 * Both ends live in one arena (lib/noeal) that holds nothing else: channel
 * "NAME.u" carries the client's bytes, "NAME.d" the server's, and a control
 * zone "NAME.c" the few words the two ends share (who sleeps, who shut
 * down). A write is one or more messages (up to 64 KiB each); a read copies
 * out of as many messages as fit, keeping its place inside a message, so
 * message boundaries never show: partial reads and coalesced writes behave
 * as TCP's do.
 *
 * **Waking a sleeper.** Each end has a "bell", a file descriptor whose
 * readability wakes it. On one host it is an eventfd of the end's own,
 * which the peer holds too (rb2-sockd makes the pair's two); the
 * connection's kernel TCP socket, which carries no data once the stream
 * is up, wakes it too, when the peer's process ends (a FIN), and stands
 * in for the eventfds where there are none. A reader with nothing to read
 * says so in the control zone, looks once more, and then blocks in the
 * kernel on its bells (poll, epoll, select: the program's own call). A
 * writer that publishes sees the flag and rings: one write(2) of the
 * peer's eventfd, or one byte sent on its socket. A writer short of room
 * does the same the other way. Nobody rings while the peer is polling, so
 * a busy stream makes no system calls.
 *
 * All calls are non-blocking; one thread at a time per end (the caller
 * locks).
 */

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The arena one stream needs (two channels of 512 KiB and the control zone). */
#define RB2_STREAM_ARENA_SIZE (4u << 20)

/** Where the host's rb2-sockd puts the arenas of streams on this host: slot
 *  k at RB2_STREAM_ARENA_BASE + k * RB2_STREAM_ARENA_SIZE, one range for every
 *  process on the host, so that a pair's address is free in both. */
#define RB2_STREAM_ARENA_BASE 0x320000000000ull
#define RB2_STREAM_ARENA_SLOTS 65536u

/** The largest message a write makes. */
#define RB2_STREAM_CHUNK (64u << 10)

struct rb2_stream;
struct rb2_xport;

/**
 * Open one end of stream @p name in the current arena (rb2_noeal_arena_use())
 * and connect it to the other end, which must open within @p timeout_ms.
 * @p bell_fd is this end's socket: a byte sent on it wakes the peer.
 * @p efd, if not NULL, holds the two ends' eventfds (non-blocking), the
 * client's and the server's, which both ends hold: each sleeps on its own
 * and rings the other's (rb2_stream_wake_fd()). The stream owns them from
 * the call on, whether it succeeds or not. An end without them sleeps on
 * its socket alone, and its peer rings it there.
 * @return the stream, or NULL with errno (ETIMEDOUT: no peer came).
 */
struct rb2_stream *rb2_stream_open(const char *name, int is_client, int bell_fd,
				   const int efd[2], unsigned int timeout_ms);

/**
 * Open one end of a stream to another host, over @p xp (verbs), through
 * @p sock_fd, a stream socket already connected to the other end: the two
 * exchange their queues' addresses over it (transport rendezvous "fd:N"),
 * and it is the bell after. This end's rings and control words go in the
 * current arena, which nobody else maps. Three queues each side: one per
 * channel, and one for the control words (see rb2_stream.c).
 * @return the stream, or NULL with errno (ETIMEDOUT: the other end did not
 *   answer within @p timeout_ms; EPROTO: it is not an rb2 stream).
 */
struct rb2_stream *rb2_stream_open_remote(struct rb2_xport *xp, int is_client, int sock_fd,
					  unsigned int timeout_ms);

/**
 * The first half of rb2_stream_open_remote(), which needs no peer: an end
 * of a stream to another host, for either role, its rings, control words
 * and queues in the current arena and registered with @p xp. On Soft-RoCE
 * these are system calls that took a quarter of a connection's set-up
 * (doc/eval/rb2-run-two.md): made ahead, off the program's thread, they are
 * off the connect's way. Its stats' open_ns is what making it took. Its
 * zones' names are the same for every end made so: one such end an arena
 * (rb2_stream_open_remote() names them by role, so that two ends can share
 * one).
 * @return the end, or NULL with errno.
 */
struct rb2_stream *rb2_stream_make_remote(struct rb2_xport *xp);

/**
 * The second half: connect end @p s (rb2_stream_make_remote(), never
 * joined) to the other end over @p sock_fd, as rb2_stream_open_remote().
 * @return 0, or -errno: then @p s is closed.
 */
int rb2_stream_join_remote(struct rb2_stream *s, int is_client, int sock_fd,
			   unsigned int timeout_ms);

/**
 * Across hosts, whether the peer's host still answers is the kernel
 * socket's business: rb2_stream_open_remote() turns on TCP keepalive on
 * @p sock_fd (if it is TCP), probing after RB2_STREAM_KEEPIDLE_S silent
 * seconds, every RB2_STREAM_KEEPINTVL_S, RB2_STREAM_KEEPCNT times, and
 * gives bytes sent on it (bells) RB2_STREAM_USER_TIMEOUT_MS to be
 * acknowledged; with TCP_USER_TIMEOUT set, the kernel also ends a socket
 * whose probes go unanswered only once that long passed since its last
 * packet. So a peer host that dies, or a link that stops carrying
 * anything, fails the stream with ETIMEDOUT about 10 s after the last
 * packet from there, where kernel TCP's defaults take 2 h 11 min
 * (keepalive) or 15 min (retransmissions). 5 s failed a live host: 3 of
 * 1273 connections between two TCG guests whose link 1000 connections
 * overran (doc/eval/rb2-run-two.md, "Many connections").
 */
#define RB2_STREAM_KEEPIDLE_S 2
#define RB2_STREAM_KEEPINTVL_S 1
#define RB2_STREAM_KEEPCNT 8
#define RB2_STREAM_USER_TIMEOUT_MS 10000

/**
 * The program set socket option (@p level, @p name) to @p val on the
 * stream's socket, and the kernel took it. If it is one that tells a dead
 * peer host (SO_KEEPALIVE, TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_KEEPCNT,
 * TCP_USER_TIMEOUT) on a stream across hosts over TCP, the stream puts its
 * own value back, and keeps the program's for rb2_stream_opt(): the
 * program's own (Redis: 300 s idle) must not loosen the stream's liveness.
 * @return 1 if so, else 0.
 */
int rb2_stream_keep_opt(struct rb2_stream *s, int level, int name, int val);

/**
 * @return 1 with the program's value of (@p level, @p name) in *@p val if
 *   the stream holds that option (rb2_stream_keep_opt()): what the kernel
 *   said before the stream set its own, or what the program set since;
 *   else 0 (the kernel socket's value is the program's).
 */
int rb2_stream_opt(const struct rb2_stream *s, int level, int name, int *val);

/**
 * Both ends of a stream in this process, as across hosts (their own
 * control words, flags WRITten, counts READ), their queues paired
 * directly: for tests of the remote protocol on any transport. @p bell_a
 * and @p bell_b are the two ends of a connected socket pair.
 * @return 0, or -errno.
 */
int rb2_stream_pair_remote(struct rb2_xport *xp, int bell_a, int bell_b, struct rb2_stream **a,
			   struct rb2_stream **b);

/**
 * Across hosts over verbs, let rb2_stream_send() batch (@p on), or send
 * every write at once (0, the default). Batching: a write made while the
 * end's last publication is still unacknowledged stays in the ring, and
 * goes out with the next write that finds the queue idle, or at
 * rb2_stream_flush(), in one WRITE for them all. A write that finds no
 * room flushes first, so a full ring never waits on itself.
 * @return 0, or -ENOTSUP (one host, or a transport without completions
 *   that wake: every write goes at once).
 */
int rb2_stream_batch(struct rb2_stream *s, int on);

/**
 * Send what batching held back (rb2_stream_batch()), whatever is in
 * flight. The caller must call it before it waits for the peer, and
 * within its own bound of the last write: nothing else sends it.
 * @return 0, or the channel's error.
 */
int rb2_stream_flush(struct rb2_stream *s);

/** Whether batching holds bytes of @p s back now (rb2_stream_flush()). */
int rb2_stream_held(const struct rb2_stream *s);

/**
 * Send up to the bytes of @p iov without blocking.
 * @return the bytes taken (maybe fewer than given), or -EAGAIN (no room
 *   at all), -EPIPE (this end shut down writing, or the peer closed or its
 *   process ended), or another channel error. As TCP's, the first write
 *   after the peer closed is taken and dropped (TCP's peer answers it with
 *   a reset); the ones after it get -EPIPE. Across hosts, when the peer's
 *   host stopped answering: -ETIMEDOUT once (unless a read told it), then
 *   -EPIPE.
 */
ssize_t rb2_stream_send(struct rb2_stream *s, const struct iovec *iov, int iovcnt);

/**
 * Receive into @p iov without blocking; @p peek leaves the bytes there.
 * @return the bytes copied, 0 at the end of the stream (the peer shut down
 *   writing, closed, or its process ended, and everything it sent was read:
 *   the kernel sends a FIN for a process that exits with sockets open),
 *   -EAGAIN (nothing yet), or another channel error (-EPROTO). Across
 *   hosts, once everything that arrived is read: -ETIMEDOUT (or the kernel
 *   socket's other error) once when the peer's host stopped answering
 *   (RB2_STREAM_KEEPIDLE_S), as TCP's after its timeout, then 0.
 */
ssize_t rb2_stream_recv(struct rb2_stream *s, const struct iovec *iov, int iovcnt, int peek);

/** Bytes a read would get now (FIONREAD): everything published and unread. */
size_t rb2_stream_nread(struct rb2_stream *s);

/** POLLIN, POLLOUT, POLLRDHUP, POLLHUP and POLLERR as they stand now. */
int rb2_stream_poll(struct rb2_stream *s);

/**
 * A new wait's name: the process's pid in the top 22 bits, a count from a
 * random start in the low 42, never 0. No two live processes of one pid
 * namespace share one (a fork child names by its own pid), and a process
 * repeats one after 2^42 waits. rb2_stream_want() and rb2_stream_arm() take
 * it. The calling thread is about to wait: it forgets which wait it rang.
 *
 * A thread that sleeps on many streams at once (epoll over 50 connections)
 * asks each for a bell, and one bell wakes it, to look at them all. A peer
 * that publishes on several of them rings the first, and then, seeing the
 * same wait named on the others, rings no more: its thread rang that wait
 * already. Without it, redis-benchmark's 50 connections rang Redis's one
 * wait up to 50 times per sleep, a write(2) each. Redis and
 * redis-benchmark -c 50 did 0.48-0.97 M SETs/s that way, and 1.05-1.11 M
 * with it (two runs each; doc/eval/rb2-run.md).
 */
uint64_t rb2_stream_wait_id(void);

/** Not a poll event: what a wait arms for a publication of ours held
 *  across hosts (rb2_stream_sleep_events()). Never ready itself. */
#define RB2_STREAM_HELD (1 << 24)

/**
 * The events a wait for @p events arms on this stream, asks its wake fds
 * for, and disarms: @p events, and RB2_STREAM_HELD too while a publication
 * of ours is held across hosts (its slots are in the peer's ring, its tail
 * waits for the peer's credits), whose return rings the sender's completion
 * channel as room does. The wait sleeps until then, where without it it
 * could only look again at once. Readiness is still what @p events asks:
 * the held publication is sent by the next write, wait or flush.
 */
int rb2_stream_sleep_events(const struct rb2_stream *s, int events);

/**
 * About to block waiting for @p events (POLLIN: data; POLLOUT: room) in the
 * wait named @p wait (rb2_stream_wait_id(); 0: none): tell the peer to ring
 * the bell, then look once more.
 * @return the events ready after all (do not block then; nothing is left
 *   armed), or 0: block on the bell, then call rb2_stream_disarm(). A
 *   thread waiting to read and one waiting to write may arm one end at once,
 *   and so may two waiting for the same: each arm is disarmed once, with
 *   the same @p events (the stream counts its sleepers, so that a disarm
 *   leaves the bell to another reader still asleep while there is data).
 */
int rb2_stream_arm(struct rb2_stream *s, int events, uint64_t wait);

/**
 * Ask for bells for @p events without looking: the caller looks itself
 * afterwards (rb2_stream_poll(), rb2_stream_edges()) and blocks only if
 * nothing it waits for came; either way it calls rb2_stream_disarm() once
 * done. What an edge-triggered wait needs, where data may already sit
 * there, reported.
 * @return 0, or the events that are on their way (across hosts: data or
 *   room the peer made before our request for a bell reached it, which
 *   comes without one): then do not block, look again.
 */
int rb2_stream_want(struct rb2_stream *s, int events, uint64_t wait);

/**
 * The kernel's edges, counted: @p in moves on whenever the peer publishes
 * bytes or shuts down writing, @p out whenever it frees room or closes. An
 * edge-triggered waiter reports POLLIN again after @p in moved, as epoll's
 * EPOLLET reports each arrival even into unread data, and POLLOUT after
 * @p out moved.
 */
void rb2_stream_edges(const struct rb2_stream *s, uint32_t *in, uint32_t *out);

/**
 * The bell's socket, for a wait to sleep on; -1 once its end was read (the
 * peer's process closed it): at its end a socket stays readable, and a
 * poll on it would return at once, again and again, while the peer's last
 * WRITEs, which its FIN may overtake across hosts, are still on their way.
 */
int rb2_stream_bell_fd(const struct rb2_stream *s);

/** Room rb2_stream_own_fds() needs. */
#define RB2_STREAM_OWN_FDS 4

/**
 * The descriptors @p s holds open itself, into @p fds: the bell's socket,
 * and on one host both ends' eventfds, across hosts its two completion
 * channels and its eventfd (rb2_stream_shut_fd()). A close of a range of
 * descriptors (close_range()) must leave them while the stream lives on.
 * The device's own descriptors, across hosts, are its transport's, not the
 * stream's.
 *
 * @return how many were written (at most RB2_STREAM_OWN_FDS).
 */
unsigned int rb2_stream_own_fds(const struct rb2_stream *s, int fds[RB2_STREAM_OWN_FDS]);

/**
 * A second fd to sleep on, beside the bell's socket, for @p events (POLLIN,
 * POLLOUT or RB2_STREAM_HELD): on one host, this end's eventfd (both
 * events), which the peer rings; across hosts on verbs, the receiver's
 * completion channel, which the peer's data itself makes readable
 * (POLLIN), or the sender's, which the peer's head push, as it frees room,
 * and its return of credits make readable (POLLOUT, RB2_STREAM_HELD);
 * else -1. Fixed for the stream's life: an epoll set holds it as long as
 * the stream.
 */
int rb2_stream_wake_fd(const struct rb2_stream *s, int events);

/**
 * Across hosts, a third fd for a wait that reads (armed for POLLIN): the
 * eventfd this process's own shutdown(SHUT_RD) rings
 * (rb2_stream_shutdown_rd()), since only the device rings the completion
 * channel. Read away by the next disarm. -1 on one host, where
 * rb2_stream_wake_fd() is that eventfd already. Fixed for the stream's life.
 */
int rb2_stream_shut_fd(const struct rb2_stream *s);

/** rb2_stream_heard(): the socket was readable (a bell on it, the peer's
 *  FIN, bytes written past rb2-run), or the eventfd was; across hosts, an
 *  edge-triggered set reported the receiver's (RX_EDGE) or the sender's
 *  (TX_EDGE) completion channel, which the disarm then reads whether or not
 *  this wait armed it (an edge is reported once: rb2_rx_wait_drain()). */
#define RB2_STREAM_HEARD_SOCK 1
#define RB2_STREAM_HEARD_WAKE 2
#define RB2_STREAM_HEARD_RX_EDGE 4
#define RB2_STREAM_HEARD_TX_EDGE 8

/**
 * The caller's wait saw what @p what names readable (RB2_STREAM_HEARD_*),
 * or does not know (a wait that failed): the next rb2_stream_disarm()
 * reads it. A disarm reads the socket only then; every wait that sleeps
 * on the socket must say what it saw there.
 */
void rb2_stream_heard(struct rb2_stream *s, int what);

/** Awake: stop asking for bells for @p events (as armed), and read away
 *  the bells that rang (rb2_stream_heard()). errno is left as the caller's
 *  wait set it. */
void rb2_stream_disarm(struct rb2_stream *s, int events);

/**
 * As rb2_stream_disarm(), from a wait that held this stream's wake fds
 * (rb2_stream_wake_fd()) and told rb2_stream_heard() of each it saw
 * readable (RB2_STREAM_HEARD_RX_EDGE, RB2_STREAM_HEARD_TX_EDGE), or from no
 * wait at all (the stream's own look found what it waited for). Across
 * hosts, a completion channel it did not tell of is not read: the read is
 * a system call, which a wait over many streams would make for each idle
 * one at every wake. An event that came since stays there, and keeps the
 * fd readable for the next wait (rb2_xport_doorbell_leave()). A wait that
 * cannot tell (a nested epoll set's) calls rb2_stream_disarm().
 */
void rb2_stream_disarm_seen(struct rb2_stream *s, int events);

/** The program corked (TCP_CORK) the bell's socket, or uncorked it: a
 *  bell then uncorks it for its byte (else held up to 200 ms). */
void rb2_stream_corked(struct rb2_stream *s, int corked);

/** Shut down reading (SHUT_RD): a read with nothing there returns 0, and
 *  poll reports the end (POLLIN | POLLRDHUP), as TCP's; bytes that come
 *  later are still read, as Linux's are. The peer is not told. A thread
 *  asleep in a read of it already sleeps on until something comes (the
 *  kernel's would return 0): its bells are the peer's to ring. */
void rb2_stream_shutdown_rd(struct rb2_stream *s);

/** Shut down writing (SHUT_WR): the peer reads what was sent, then 0. */
void rb2_stream_shutdown_wr(struct rb2_stream *s);

/** Close this end: the peer reads what was sent, then 0; its writes get EPIPE.
 *  If bytes the peer sent are still unread here, it is TCP's reset instead:
 *  the peer's next read fails with ECONNRESET (what this end had sent is
 *  dropped), its poll says POLLERR|POLLHUP, its writes get EPIPE. */
void rb2_stream_close(struct rb2_stream *s);

/**
 * The first step of rb2_stream_close(), across hosts: shut down writing, and
 * send the held writes and the end if the reader's credits and room let
 * them go now. @return 1 if the rest of the close would wait for the reader
 * (writes held for its credits, or the end for room: up to
 * RB2_STREAM_LINGER_MS without progress), else 0; always 0 on one host.
 */
int rb2_stream_close_would_wait(struct rb2_stream *s);

/**
 * One step of a close that rb2_stream_close_would_wait() said would wait,
 * for a thread that finishes many (rb2-run's closer) rather than blocking in
 * each: send what the reader's credits and room let go now, without
 * waiting. Once everything and the end went, the wait for them to land in
 * the peer's memory (rb2_tx_drain_start()) is stepped too, so that one
 * close's slow fence does not hold up the others. @return 2 while the
 * close still waits, having sent more since the last step (or on the first,
 * or the end's send), 1 while it waits with nothing sent; 0 once
 * rb2_stream_close() will not wait: everything went and landed (or its
 * wait gave up after RB2_POST_WAIT_MS, failing the sender), the peer
 * closed, or the reader took nothing for RB2_STREAM_LINGER_MS, in which
 * case the reader is reset here, as the blocking close does.
 */
int rb2_stream_close_step(struct rb2_stream *s);

/**
 * Ring and read bells on @p fd from now on: a duplicate of the bell's socket
 * that outlives the program's descriptor, for a close finished in the
 * background. Messages still name the program's descriptor.
 */
void rb2_stream_move_bell(struct rb2_stream *s, int fd);

/**
 * The process ends with @p s open, across hosts: send what rb2_stream_close()
 * sends (what was written, then the end; a reset if bytes the peer sent are
 * unread, or if some of ours cannot go), waiting at most @p ms for the
 * reader's credits and room, as the kernel goes on sending a dead
 * process's bytes; then for the NIC to send what was posted (a fence,
 * with its own bound, over once the peer has closed). The stream stays
 * allocated, shut both ways: the process is ending. Without it, the
 * peer's read, finding the process gone and its queues with it, fails with
 * ECONNRESET, since nobody can say what did not arrive. Once; a no-op on one host, where the ring outlives the process.
 * @return 0, or -ETIMEDOUT: the end may not have reached the peer.
 */
int rb2_stream_end_at_exit(struct rb2_stream *s, unsigned int ms);

/**
 * A fork() is about to copy this process's end of @p s, and the child holds
 * the end too. Call it in the parent before the fork (a forking server
 * closes its copy as soon as fork() returns), once per fork and stream;
 * rb2_stream_fork_release() undoes it if the fork fails. The holds are in
 * the end's control words, which parent and child share (one host: the
 * memory both ends share; across hosts: this end's own copy, in memory the
 * fork shares): whichever process lets its copy go last closes the end, as
 * the kernel's last close of a socket shared across fork() does. Across
 * hosts only the process that opened the end can post on its queues, so
 * there the last holder to go must be that process (rb2_stream_fork_others()).
 */
void rb2_stream_fork_hold(struct rb2_stream *s);

/** How many holders of one end are named (rb2_stream_fork_child()). */
#define RB2_STREAM_HOLDERS 8

/**
 * The fork that rb2_stream_fork_hold() held @p s for made process @p child:
 * name it among the end's holders, in the parent, before the fork returns
 * to the program (whose first act may be to close its copy). A named holder
 * that a signal kills is counted out by the next rb2_stream_fork_release();
 * one that is not named (a fork made past the wrappers, or more than
 * RB2_STREAM_HOLDERS holders) keeps its hold for good, as if alive.
 */
void rb2_stream_fork_child(struct rb2_stream *s, pid_t child);

/** The fork that rb2_stream_fork_hold() held @p s for failed: the hold
 *  goes back. */
void rb2_stream_fork_unhold(struct rb2_stream *s);

/**
 * This process lets its copy of its end of @p s go. Named holders that
 * have ended without letting theirs go (killed by a signal: a zombie
 * counts as ended) are counted out first.
 * @return 1: another process still holds the end (a fork's hold was given
 *   up): forget the copy (rb2_stream_forget()), do not close it; 0: no
 *   other holder, the caller's close is the end's.
 */
int rb2_stream_fork_release(struct rb2_stream *s);

/**
 * Whether another process holds this process's end of @p s too, without
 * letting this process's copy go: named holders that have ended are
 * counted out first, as rb2_stream_fork_release() does. Across hosts the
 * process that opened the end closes it only once this is 0: its fork
 * children cannot post on its queues.
 * @return 1 if another process holds the end, else 0.
 */
int rb2_stream_fork_others(struct rb2_stream *s);

/**
 * Across hosts: a fork child was to use its copy of @p s, which it cannot
 * (only the process that opened the end posts on its queues). Marks the
 * end, in the control words parent and child share, for a reset: the
 * close that the opening process makes once its children let their
 * copies go (rb2_stream_fork_others()) sends a reset, not the end, so the
 * peer never takes a connection nobody served for a clean close. Posts
 * nothing.
 */
void rb2_stream_fork_reset(struct rb2_stream *s);

/** A copy of a stream that another process holds on (one inherited across
 *  fork(), or one whose fork child holds it: rb2_stream_fork_release()):
 *  close this process's descriptors of it (its eventfds), and touch
 *  nothing the two share. */
void rb2_stream_forget(struct rb2_stream *s);

/**
 * The error that ended the stream without an end from the peer, for
 * getsockopt(SO_ERROR): once, as the kernel's, then 0. Across hosts,
 * ETIMEDOUT when the peer's host stopped answering; else 0.
 */
int rb2_stream_take_error(struct rb2_stream *s);

/** What went through this end. */
struct rb2_stream_stats {
	uint64_t bytes_out, bytes_in, bells_rung, sleeps;
	/* Bytes found on the bell's socket that no bell sent (the connection
	 * was reset for them): a lower bound of what was lost. */
	uint64_t foreign_bytes;
	/* Across hosts: the send WRs this end posted (data and its
	 * publication, head and credit WRITEs, wake-ups, control words) and
	 * the posts that carried them, a doorbell each. 0 on one host. */
	uint64_t wrs, doorbells;
	/* Across hosts, batching (rb2_stream_batch()): writes held back
	 * while the last publication was in flight, and flushes of them. */
	uint64_t held, flushes;
	/* Across hosts: the wake-ups its queues asked of the device for
	 * its sleeps (CQ arms: asked again only once the last one's event
	 * was taken). 0 on one host. */
	uint64_t wake_requests;
	/* Across hosts: the reads of its queues' completion channels on
	 * waking, a system call each: only of those the wait saw readable
	 * where it could tell (rb2_stream_disarm_seen()). 0 on one host. */
	uint64_t wake_reads;
	/* Across hosts: publications that waited for the peer's credits
	 * (each look counted), and sleeps with one held, until the credits'
	 * return woke it (rb2_stream_sleep_events()). 0 on one host. */
	uint64_t credit_waits, held_sleeps;
	/* Across hosts, how long rb2_stream_open_remote() took: making this
	 * end's queues, rings and registrations, then connecting them to the
	 * peer's over the socket (which waits for the peer's end too). 0 on
	 * one host. */
	uint64_t open_ns, connect_ns;
};

void rb2_stream_stats(const struct rb2_stream *s, struct rb2_stream_stats *st);

/** One line of @p s's state (pointers, who sleeps, edges) to @p f, for
 *  diagnosis: rb2-run dumps every stream on signal SIGRTMIN+3 with RB2_RUN_DEBUG=1. */
void rb2_stream_dump(struct rb2_stream *s, int fd, FILE *f);

#ifdef __cplusplus
}
#endif

#endif /* RB2_STREAM_H */
