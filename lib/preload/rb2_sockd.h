/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The rb2 authors
 */

#ifndef RB2_SOCKD_H
#define RB2_SOCKD_H

/**
 * @file
 * What librb2_preload.so and the host's rb2-sockd say to each other: one
 * request and its reply on a fresh connection to the service's unix socket
 * (SOCK_SEQPACKET), so threads never queue behind each other's requests.
 *
 * The service decides, for each TCP connection between two programs under
 * rb2-run on this host, whether it goes over rb2, and if so hands both ends
 * one arena (a memfd, SCM_RIGHTS) holding nothing but that connection's
 * stream (rb2_stream.h). It never carries data.
 *
 * **Nobody is taken at their word.** Every request that names a socket
 * passes the socket itself (SCM_RIGHTS), and the service reads its
 * addresses from the kernel (getsockname, getpeername). A client's local
 * port is its own (the kernel bound it); a server gets the arena only for a
 * connection the kernel handed it, from that port. So only a process that
 * could talk to the other over TCP gets the arena of their connection, and
 * the kernel's rules (users, namespaces, filters) stay the rules.
 *
 * The pairing:
 *   client                               service                     server
 *   CONNECT(bound socket, to R) ---->    R an rb2 listener on this host?
 *           <---- GO  (or PLAIN: stays kernel TCP, with the reason)
 *   kernel connect()
 *   CONNECTED(socket) ------------>      waits for the accept ...   accept()
 *                                        ... <---- ACCEPTED(accepted socket)
 *        <---- PAIR(arena, bells, name) -- by port -- PAIR(arena, bells, name) ---->
 *   rb2_stream_open(client)                                   rb2_stream_open(server)
 * The bells are two eventfds the service makes for the pair, one each end
 * sleeps on and the other rings: a wake-up without the loopback TCP path.
 * A server that does not accept within the timeout: the client gets PLAIN,
 * and the service remembers, so that the late accept gets PLAIN too: both
 * ends always agree. To a loopback address the client sends CONNECTED
 * right behind CONNECT, with no GO between (RB2_SOCKD_F_PIPE): its CONNECT
 * is queued before its SYN leaves, so before the server's ACCEPTED, which
 * the service matches only after reading everything queued.
 */

#include <stdint.h>
#include <sys/socket.h>

/**
 * Services of two hosts. Before a connect to another host goes ahead, the
 * client's service asks that host's, over TCP to port RB2_SOCKD_PEER_PORT
 * at the address connected to: a question (RB2_SOCKD_PEER_ASK: the port
 * connected to, and the client's own port, or 0 when the client cannot use
 * an RDMA device) and an answer: whether a program under rb2-run listens
 * there. The answering service takes the addresses from its end of that
 * TCP connection, not from the question. The connection stays for the next
 * questions, one line each, answered in order, until the asking side has
 * been idle for a while (the answering side waits longer), so a connect
 * after the first costs one round trip, not a TCP handshake more. A host
 * where nothing answers runs no rb2 service. A service with too many
 * connections open says RB2_SOCKD_PEER_BUSY at once and closes.
 *
 * RB2_SOCKD_PEER_RB2: a program under rb2-run listens there, both ends can
 * use RDMA, and the answering service now expects that connection, from
 * the asking host's address and the client's port, for
 * RB2_SOCKD_EXPECT_MS: its accept() gets RB2_SOCKD_REMOTE, as the client's
 * connect() does, and the two open an rb2 stream over verbs whose queues
 * connect over that TCP connection itself (rb2_stream_open_remote()).
 * RB2_SOCKD_PEER_YES: one listens, but kernel TCP (one end has no device).
 */
#define RB2_SOCKD_PEER_PORT 7472
#define RB2_SOCKD_PEER_ASK "rb2-sockd 2 listener %u from %u\n"
#define RB2_SOCKD_PEER_RB2 "rb2-sockd 2 rb2\n"
#define RB2_SOCKD_PEER_YES "rb2-sockd 2 yes\n"
#define RB2_SOCKD_PEER_NO "rb2-sockd 2 no\n"
#define RB2_SOCKD_PEER_BUSY "rb2-sockd 2 busy\n"
#define RB2_SOCKD_EXPECT_MS 15000

#ifdef __cplusplus
extern "C" {
#endif

#define RB2_SOCKD_MAGIC 0x72623273u          /* "rb2s" */
#define RB2_SOCKD_VERSION 3

/** The most fds one message carries: PAIR's arena and the two ends' bells. */
#define RB2_SOCKD_MAX_FDS 3

/** rb2_sockd_msg.flags of LISTEN and CONNECT: the asking process can open
 *  an RDMA device, so its connections to other hosts may go over verbs. */
#define RB2_SOCKD_F_VERBS 1u
/** rb2_sockd_msg.flags of GO: the listener is the asking process's own
 *  registration. Of CONNECTED: the asking process alone holds that
 *  listener (no fork, spawn, exec or SCM_RIGHTS handed it on), so only
 *  its own accept can take the connection: both ends go kernel TCP at
 *  once. */
#define RB2_SOCKD_F_SELF 2u
/** rb2_sockd_msg.flags of CONNECT, to a loopback address: the client does
 *  not wait for GO, but connects at once and sends CONNECTED behind its
 *  CONNECT (one round trip to the service fewer). The service sends no GO
 *  then, only PLAIN at once where it would have, and, where the listener
 *  is the client's own registration, GO with RB2_SOCKD_F_SELF as the reply
 *  to the first CONNECTED, which the client answers with a second
 *  CONNECTED saying whether it holds the listener alone. Loopback only: a
 *  connection to another host must be expected there before its SYN goes
 *  (RB2_SOCKD_PEER_ASK). */
#define RB2_SOCKD_F_PIPE 4u

enum rb2_sockd_op {
	/* requests */
	RB2_SOCKD_LISTEN = 1,    /**< fd: a listening socket; the request's connection
				  *   stays open as long as the listener is registered */
	RB2_SOCKD_CONNECT,       /**< fd: a bound socket; addr: where it connects */
	RB2_SOCKD_CONNECTED,     /**< fd: the same socket, connected (same connection) */
	RB2_SOCKD_ACCEPTED,      /**< fd: an accepted socket */
	RB2_SOCKD_STATS,         /**< the service's counters, in why */
	/* replies */
	RB2_SOCKD_GO = 100,      /**< connect, then send CONNECTED */
	RB2_SOCKD_PLAIN,         /**< kernel TCP; why says why */
	RB2_SOCKD_PAIR,          /**< fds: the arena, then the client's and the
				  *   server's bells (eventfds: rb2_stream_open());
				  *   name: the stream's */
	RB2_SOCKD_OK,            /**< LISTEN registered, STATS answered */
	RB2_SOCKD_REMOTE,        /**< CONNECT: connect, then open the stream over verbs;
				  *   ACCEPTED: the same, this end the server */
};

/** One message each way; fds travel beside it (SCM_RIGHTS, at most
 *  RB2_SOCKD_MAX_FDS). */
struct rb2_sockd_msg {
	uint32_t magic;
	uint16_t version;
	uint16_t op;
	uint32_t flags;                /**< LISTEN, CONNECT: RB2_SOCKD_F_* */
	struct sockaddr_storage addr;  /**< CONNECT: the address connected to */
	char name[24];                 /**< PAIR: the stream's name */
	char why[160];                 /**< PLAIN: the reason; STATS: the counters */
};

/** The service's socket: $RB2_SOCKD_PATH, else /run/rb2/sockd.sock for root,
 *  else $XDG_RUNTIME_DIR/rb2/sockd.sock, else /tmp/rb2-UID/sockd.sock. */
int rb2_sockd_path(char *buf, unsigned int len);

/** Send @p m with the @p nfds fds of @p fds (at most RB2_SOCKD_MAX_FDS)
 *  on @p sock. @return 0 or -errno. */
int rb2_sockd_send(int sock, const struct rb2_sockd_msg *m, const int *fds, unsigned int nfds);

/** Receive into @p m, and the fds that came with it into @p fds (up to
 *  @p max; the others -1).
 *  @return 0, -EPROTO (not one of ours: also more fds than @p max, all
 *  closed), -ECONNRESET (closed), or -errno. */
int rb2_sockd_recv(int sock, struct rb2_sockd_msg *m, int *fds, unsigned int max);

#ifdef __cplusplus
}
#endif

#endif /* RB2_SOCKD_H */
