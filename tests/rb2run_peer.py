#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
"""Both ends of a TCP connection for tests/test_rb2run.sh, plain sockets
only, so that they run the same under rb2-run and without it.

  rb2run_peer.py server PORT [PAUSE [LATE]]
                                     accept one connection (say "accepted");
                                     PAUSE seconds later, read to the end;
                                     answer "LEN SHA256" of what came, and
                                     then that many bytes of the pattern back;
                                     close. With LATE, the accept comes LATE
                                     seconds after a connection is in the
                                     backlog, which it says ("queued")
  rb2run_peer.py count PORT          accept one connection; read to the end;
                                     print "server got N then the end"
  rb2run_peer.py waitall PORT        accept one connection; one recvmsg_into
                                     with MSG_WAITALL over 3000 + 5000 bytes;
                                     print what it got
  rb2run_peer.py trickle PORT        send 8 writes of 1000 bytes, 20 ms apart
  rb2run_peer.py client PORT BYTES   send BYTES of the pattern in writes of
                                     random sizes, half-close, read the answer
                                     and the bytes back; exit 0 only if both
                                     directions arrived whole. With
                                     PEER_GO_FILE set, it connects once that
                                     file exists (started ahead, ready)
  rb2run_peer.py rawclose PORT       accept a connection into an epoll set,
                                     close it with syscall(SYS_close), accept
                                     a second (on its number) into the set,
                                     and say whether its message woke the
                                     wait, and how soon
  rb2run_peer.py rawclose-client PORT
                                     rawclose's client
  rb2run_peer.py lateadd PORT        a thread sleeps in epoll_wait while the
                                     main thread adds a connection to its
                                     set (Apache's event MPM): with a pipe
                                     alone in it, the message after the add,
                                     then before it; then with a connection
                                     in it already; say how soon each woke
  rb2run_peer.py lateadd-client PORT lateadd's client
  rb2run_peer.py closeatpair PORT    accept one connection 1 s after it
                                     listens, timed; read it to the end;
                                     say how long the accept took and how
                                     the connection ended
  rb2run_peer.py closeatpair-client PORT
                                     a non-blocking connect, closed 1.3 s
                                     later (past the server's accept); say
                                     how long the close took
  rb2run_peer.py selfconnect        a connection from this process to its
                                     own listener: a non-blocking connect
                                     accepted after it, 100000 bytes one
                                     way and an answer back; then a
                                     blocking connect before the accept,
                                     timed
  rb2run_peer.py inherit PORT CMD... listen on PORT, then exec CMD with the
                                     listener's fd number as its last
                                     argument (run plainly: a supervisor's
                                     socket activation)
  rb2run_peer.py inherited FD        on the listener already listening on
                                     FD: accept one connection, echo 5
                                     bytes, close
  rb2run_peer.py inherited-client PORT
                                     send "hello", print what comes back
  rb2run_peer.py connclose PORT [DELAY]
                                     accept one connection DELAY s (1)
                                     after listening; say what it read,
                                     and when
  rb2run_peer.py connclose-client PORT
                                     a blocking connect whose fd another
                                     thread closes 0.3 s in; say what the
                                     connect returned, and then how many
                                     connection arenas this process maps
                                     (once none, or 5 s on)
  rb2run_peer.py spawnpend PORT      accept a connection 1.5 s after
                                     listening: "hi", then "pong" to
                                     "ping"; another 1.5 s after that,
                                     and say what it read
  rb2run_peer.py spawnpend-client PORT
                                     while a non-blocking connect waits
                                     for the accept, a posix_spawn() and
                                     a subprocess.run(), timed; then the
                                     exchange; then another such connect
                                     and an exec, timed by the new program
  rb2run_peer.py closeunder PORT     accept one connection; 1 s later send
                                     "late data"; close 0.5 s after
  rb2run_peer.py closeunder-client PORT
                                     a thread asleep in a read of the
                                     connection while the main thread
                                     closes its fd; say what the read got
  rb2run_peer.py closesweep PORT     as closeunder
  rb2run_peer.py closesweep-client PORT
                                     as closeunder-client, the close
                                     followed by a closefrom() of every fd
                                     from it on; say also the CPU the
                                     read's wait took
  rb2run_peer.py dupclose PORT       accept one connection; 0.3 s later
                                     send "hello", then read the answer
  rb2run_peer.py dupclose-client PORT
                                     dup2 the connection to fd 10, close
                                     the original, read "hello" on 10 (it
                                     sleeps), answer "ok" on it
  rb2run_peer.py closefrom PORT      accept one connection; read it to the
                                     end; say what came
  rb2run_peer.py closefrom-client PORT
                                     send "abc", close the connection with
                                     libc's closefrom(), open /dev/zero (on
                                     its number) and read 4 bytes of it
  rb2run_peer.py keepbelow PORT      accept one connection; send "one" 1 s
                                     on, then "two" and "three", each 1 s
                                     after a "next"; then close
  rb2run_peer.py keepbelow-client PORT
                                     close every fd past the connection with
                                     close_range(), then wait in a read of
                                     it; then the same with libc's
                                     closefrom(), then after a spawn
                                     (subprocess, its stdin a copy of the
                                     connection); say what each read got,
                                     and the CPU time its wait took
  rb2run_peer.py capacity PORT       accept two connections; read nothing
                                     for 3 s
  rb2run_peer.py capacity-client PORT
                                     on each, non-blocking writes (100 B on
                                     one, 64 KiB on the other) until none
                                     goes in for 0.2 s; print JSON: the
                                     bytes and writes that went in
  rb2run_peer.py pollclose PORT      accept one connection; close it 2 s on
  rb2run_peer.py pollclose-client PORT
                                     one thread polls the connection for
                                     POLLIN for 1 s while the main thread
                                     closes it; say what the poll returned
  rb2run_peer.py shutwake PORT [HOLD]
                                     accept three connections; close them
                                     HOLD s on (3)
  rb2run_peer.py shutwake-client PORT [DELAY]
                                     three connections, one with a thread
                                     asleep in an epoll_wait for EPOLLIN,
                                     one in a poll for POLLIN, one in a
                                     read; DELAY s on (0.3) the main
                                     thread shuts each down for reading
                                     in turn; say what each sleeper got,
                                     and how long after its shutdown
  rb2run_peer.py shutearly PORT      accept one connection 1 s after it
                                     listens; read it to the end, answer
                                     "bye" and close
  rb2run_peer.py shutearly-client PORT
                                     a non-blocking connect, then at once
                                     shutdown(SHUT_WR), timed (the server
                                     has not accepted); read the answer
  rb2run_peer.py adoptwake PORT      accept one connection 1.5 s after it
                                     listens; read "ping", answer "pong"
  rb2run_peer.py adoptwake-client PORT
                                     a non-blocking connect; on epoll's
                                     EPOLLOUT (edge-triggered), connect()
                                     again and a non-blocking send, as ab
                                     and edge-triggered loops do; say what
                                     each gave
  rb2run_peer.py echo PORT N          accept N connections one after the
                                     other; send each back what it sent
  rb2run_peer.py fork-echo PORT N     echo's server as Python's
                                     socketserver.ForkingTCPServer: a child
                                     per connection, the parent closing its
                                     copy at once; N connections, then the
                                     children are waited for
  rb2run_peer.py fork-away PORT      a forking server on another host's
                                     rb2-run, three connections: (1) a child
                                     is to serve it and reads, the parent
                                     closing its copy at once; (2) the
                                     parent writes "hello", a child closes
                                     its copy unused, then the parent closes;
                                     (3) the parent echoes to the end and
                                     closes while a child holds its copy
                                     unused for 3 s more. Prints what child
                                     (1) read
  rb2run_peer.py fork-away-client PORT
                                     fork-away's client: (1) reads without
                                     sending, (2) reads to the end, (3)
                                     sends 200000 bytes, half-closes and
                                     reads them back; exit 0 only if (1)
                                     was reset, (2) was "hello" then the
                                     end, (3) came back whole then the end
  rb2run_peer.py many PORT N BYTES   N connections one after the other, from
                                     this one process: each sends BYTES,
                                     half-closes and reads them back
  rb2run_peer.py idle PORT           accept two connections; one thread
                                     blocks in recv on the first, the main
                                     thread in epoll on the second; each
                                     echoes one message and ends
  rb2run_peer.py wake PORT SECONDS   connect twice, stay silent SECONDS,
                                     then send one message on each and read
                                     the echoes
  rb2run_peer.py twice PORT N        N times: write "a", at once "b", then
                                     sleep a second (time.sleep, which
                                     rb2-run does not wrap); half-close,
                                     print what the server answers
  rb2run_peer.py pairs PORT N        accept one connection; read it a byte
                                     at a time; answer and print how long
                                     the longest "b" came after its "a"
  rb2run_peer.py ahead PORT N SECONDS
                                     send N writes of 16 bytes of the
                                     pattern as fast as they go, then sleep
                                     SECONDS (time.sleep, which rb2-run does
                                     not wrap), and read the answer; print
                                     the process's CPU (all its threads)
                                     during the sleep
  rb2run_peer.py late PORT N SECONDS accept one connection; sleep SECONDS
                                     before reading N * 16 bytes, check the
                                     pattern, answer "k"
  rb2run_peer.py exit-ahead PORT N  send N writes of 16 bytes of the
                                     pattern as fast as they go, and exit
                                     (exit(), so its handlers run) with the
                                     socket open
  rb2run_peer.py close-ahead PORT N [linger | CONNS]
                                     send N writes of 16 bytes of the
                                     pattern as fast as they go, close (with
                                     SO_LINGER on, 30 s, if "linger"), and
                                     print how long the close took; exit.
                                     With CONNS, on each of CONNS
                                     connections, and print the longest
                                     close and how many threads the process
                                     gained from before the closes
  rb2run_peer.py late-end PORT N SECONDS [CONNS]
                                     accept one connection (or CONNS); sleep
                                     SECONDS, then read them all to the end,
                                     whichever is readable (epoll); print
                                     what came and how each ended (and,
                                     with CONNS, how far apart the ends
                                     came); exit
                                     0 only if each was N * 16 bytes of the
                                     pattern, then the end
  rb2run_peer.py both-wake PORT     accept one connection; two threads
                                     wait to read it, one in poll(), one in
                                     epoll (5 s at most), while the peer is
                                     silent; when both are back, answer how
                                     long each slept ("woke A B", in ms, or
                                     "slept on"), then end
  rb2run_peer.py poke PORT SECONDS   connect, set TCP_KEEPIDLE to 300 and
                                     print what reads back; stay silent
                                     SECONDS, send one byte, print the
                                     answer; exit 0 only if both of a
                                     both-wake's threads woke
  rb2run_peer.py echo-all PORT N    accept N connections, then echo on
                                     whichever is readable (epoll) until
                                     all have ended
  rb2run_peer.py busy-one PORT N R   open N connections; R round trips of
                                     64 bytes on the first while the others
                                     stay idle, waiting in epoll on all
  rb2run_peer.py pump PORT R BYTES   accept one connection; R times: wait
                                     (epoll) for a line, then send BYTES of
                                     the pattern without blocking, 64 KiB
                                     a send, each followed by a 2 ms pause
                                     and a look into epoll that does not
                                     block; wait in epoll for room whenever
                                     it is short (10 s at most: then
                                     "stalled", exit 1); print the longest
                                     wait for room
  rb2run_peer.py drink PORT R BYTES  R times: ask a pump for BYTES, wait
                                     0.3 s (it fills the ring), then read
                                     them, pausing 1 ms every fourth read;
                                     print how many rounds came whole
  rb2run_peer.py client PORT,PORT... BYTES
                                     the same with several servers at once,
                                     the writes and reads interleaved
  rb2run_peer.py zerocopy PORT       accept one connection, read 196609
                                     bytes, answer "k", read to the end
  rb2run_peer.py zerocopy-client PORT
                                     MSG_ZEROCOPY sends, before and after
                                     SO_ZEROCOPY; say what poll and the
                                     error queue report (the same plainly
                                     and under rb2-run)
  rb2run_peer.py uring               print what io_uring_setup answers (a
                                     raw system call, as liburing makes it)
  rb2run_peer.py source PORT         send the pattern, 16 KiB every 10 ms,
                                     until a write fails
  rb2run_peer.py sink PORT           accept one connection; read until the
                                     end or an error; print how many bytes
                                     came in order, what ended it, and how
                                     long after the last byte
  rb2run_peer.py scale-sink PORT     accept connections for ever; read each
                                     to its end, then answer the byte count
                                     it read ("N\n") and close it
  rb2run_peer.py scale PORT N SECONDS
                                     open N connections to a scale-sink,
                                     count the RDMA QPs this host has then
                                     (iproute2's rdma, if any), write 64 KiB
                                     at a time on whichever can take it for
                                     SECONDS, half-close all, and print JSON:
                                     the bytes the sink read, the seconds
                                     until its last answer, the QPs added
The pattern: byte i is (i * 7 + i // 251) & 0xff.
The host is 127.0.0.1, or RB2_PEER_HOST (across hosts: the server's
address, on both sides); a connect retries for 10 s while it is refused.
"""
import ctypes
import errno
import hashlib
import json
import os
import random
import select
import socket
import struct
import subprocess
import sys
import time


# (i * 7 + i // 251) & 0xff repeats every 251 * 256 bytes.
PERIOD = 251 * 256
BASE = bytes(((i * 7 + i // 251) & 0xFF) for i in range(PERIOD)) * 2


def pattern(n, start=0):
    out = bytearray()
    while n > 0:
        o = start % PERIOD
        k = min(n, PERIOD)
        out += BASE[o:o + k]
        start += k
        n -= k
    return bytes(out)


HOST = os.environ.get("RB2_PEER_HOST", "127.0.0.1")


def connect_to(port):
    """A connection to HOST:port, retried while refused (the server on
    another host may not listen yet), for 10 s."""
    until = time.monotonic() + 10
    while True:
        try:
            return socket.create_connection((HOST, port))
        except ConnectionRefusedError:
            if time.monotonic() > until:
                raise
            time.sleep(0.1)


def listen_on(port, backlog):
    """A listener on HOST:port; says "listening" once it is."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((HOST, port))
    s.listen(backlog)
    print("listening", flush=True)
    return s


def server(port, pause=0.0, late=0.0):
    s = listen_on(port, 8)
    if late > 0:
        select.select([s], [], [], 120)
        print("queued", flush=True)
        time.sleep(late)
    c, _ = s.accept()
    print("accepted", flush=True)
    time.sleep(pause)
    h, n = hashlib.sha256(), 0
    while True:
        d = c.recv(random.randint(1, 200000))
        if not d:
            break
        h.update(d)
        n += len(d)
    c.sendall(b"%d %s\n" % (n, h.hexdigest().encode()))
    chunk = 1 << 16
    for off in range(0, n, chunk):
        c.sendall(pattern(min(chunk, n - off), off))
    c.close()


def count(port):
    s = listen_on(port, 1)
    c, _ = s.accept()
    n = 0
    while True:
        d = c.recv(65536)
        if not d:
            break
        n += len(d)
    print("server got", n, "then the end", flush=True)


def allow_all_seccomp():
    """A seccomp filter that allows every call, as a sandbox installs one:
    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER), after no_new_privs."""
    class Filter(ctypes.Structure):
        _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8),
                    ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]

    class Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Filter))]

    libc = ctypes.CDLL(None, use_errno=True)
    ret_allow = Filter(0x06, 0, 0, 0x7fff0000)          # BPF_RET|BPF_K, SECCOMP_RET_ALLOW
    prog = Prog(1, ctypes.pointer(ret_allow))
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p,
                           ctypes.c_ulong, ctypes.c_ulong]
    if libc.prctl(38, 1, None, 0, 0) != 0 or \
            libc.prctl(22, 2, ctypes.cast(ctypes.pointer(prog), ctypes.c_void_p), 0, 0) != 0:
        print("seccomp filter: %s" % os.strerror(ctypes.get_errno()), flush=True)


def client(ports, total):
    go = os.environ.get("PEER_GO_FILE")
    while go and not os.path.exists(go):
        time.sleep(0.01)
    conns = [connect_to(p) for p in ports]
    if os.environ.get("PEER_SECCOMP") == "1":
        allow_all_seccomp()
    sent, rng = 0, random.Random(7)
    while sent < total:
        k = min(total - sent, rng.randint(1, 100000))
        for c in conns:
            c.sendall(pattern(k, sent))
        sent += k
    for c in conns:
        c.shutdown(socket.SHUT_WR)
    want = b"%d %s" % (total, hashlib.sha256(pattern(total)).hexdigest().encode())
    bufs = [bytearray() for _ in conns]
    open_ = set(range(len(conns)))
    while open_:                     # a little from each in turn
        for i in sorted(open_):
            d = conns[i].recv(rng.randint(1, 1 << 16))
            if not d:
                open_.discard(i)
            bufs[i] += d
    rc = 0
    for buf in bufs:
        line, _, back = bytes(buf).partition(b"\n")
        ok_up = line == want
        ok_down = back == pattern(total)
        print("up: %s, down: %s (%d bytes)" % ("whole" if ok_up else "DIFFERS",
                                               "whole" if ok_down else "DIFFERS", len(back)))
        rc |= 0 if ok_up and ok_down else 1
    return rc


def echo(port, n):
    s = listen_on(port, 8)
    for _ in range(n):
        c, _ = s.accept()
        buf = bytearray()
        while True:
            d = c.recv(1 << 16)
            if not d:
                break
            buf += d
        c.sendall(buf)
        c.close()


def fork_echo(port, n):
    import socketserver

    class Echo(socketserver.BaseRequestHandler):
        def handle(self):
            buf = bytearray()
            while True:
                d = self.request.recv(1 << 16)
                if not d:
                    break
                buf += d
            self.request.sendall(buf)

    class Server(socketserver.ForkingTCPServer):
        allow_reuse_address = True

    with Server(("127.0.0.1", port), Echo) as srv:
        print("listening", flush=True)
        for _ in range(n):
            srv.handle_request()
    # Leaving the with block waited for every child (block_on_close).
    print("fork-echo: served %d" % n, flush=True)


def read_to_end(c):
    """What came, and how it ended: "the end" or "a reset"."""
    got = bytearray()
    try:
        while True:
            d = c.recv(1 << 16)
            if not d:
                return bytes(got), "the end"
            got += d
    except ConnectionResetError:
        return bytes(got), "a reset"


def fork_away(port):
    s = listen_on(port, 8)
    # (1) Accept-then-fork: the child serves, the parent lets go at once.
    c, _ = s.accept()
    pid = os.fork()
    if pid == 0:
        s.close()
        c.settimeout(30)
        try:
            what = "read %r" % c.recv(100)
        except ConnectionResetError:
            what = "reset"
        except OSError as e:
            what = "error %s" % e
        print("fork-away child 1: %s" % what, flush=True)
        os._exit(0)
    c.close()
    os.waitpid(pid, 0)
    # (2) The parent wrote; a child closes its copy unused.
    c, _ = s.accept()
    c.sendall(b"hello\n")
    pid = os.fork()
    if pid == 0:
        c.close()
        os._exit(0)
    os.waitpid(pid, 0)
    c.close()
    # (3) The parent serves and closes; a child holds its copy on, unused.
    c, _ = s.accept()
    pid = os.fork()
    if pid == 0:
        time.sleep(3)
        os._exit(0)
    buf, _ = read_to_end(c)
    c.sendall(buf)
    c.close()
    os.waitpid(pid, 0)
    print("fork-away: served 3", flush=True)


def fork_away_client(port):
    c = connect_to(port)
    c.settimeout(60)
    got, how = read_to_end(c)
    one = "reset" if how == "a reset" and not got else "%r then %s" % (got, how)
    c.close()
    c = connect_to(port)
    c.settimeout(60)
    got, how = read_to_end(c)
    two = "%r then %s" % (got, how)
    c.close()
    c = connect_to(port)
    c.settimeout(60)
    c.sendall(pattern(200000))
    c.shutdown(socket.SHUT_WR)
    got, how = read_to_end(c)
    three = "%s then %s" % ("whole" if got == pattern(200000) else
                            "DIFFERS (%d bytes)" % len(got), how)
    c.close()
    print("fork-away: (1) %s; (2) %s; (3) %s" % (one, two, three), flush=True)
    return 0 if (one == "reset" and two == "b'hello\\n' then the end" and
                 three == "whole then the end") else 1


def many(port, n, total):
    whole = 0
    for i in range(n):
        c = connect_to(port)
        c.sendall(pattern(total, i))
        c.shutdown(socket.SHUT_WR)
        back = bytearray()
        while True:
            d = c.recv(1 << 16)
            if not d:
                break
            back += d
        c.close()
        whole += bytes(back) == pattern(total, i)
    print("many: %d of %d whole" % (whole, n))
    return 0 if whole == n else 1


def idle(port):
    import selectors
    import threading
    s = listen_on(port, 2)
    a, _ = s.accept()
    b, _ = s.accept()

    def blocked_recv():
        a.sendall(a.recv(100))

    t = threading.Thread(target=blocked_recv)
    t.start()
    sel = selectors.EpollSelector()
    sel.register(b, selectors.EVENT_READ)
    print("asleep", flush=True)           # the measurer's cue: both accepted
    sel.select()                          # no timeout: asleep until data
    b.sendall(b.recv(100))
    t.join()
    print("echoed", flush=True)


def wake(port, seconds):
    a = connect_to(port)
    b = connect_to(port)
    time.sleep(seconds)
    a.sendall(b"ping-a")
    b.sendall(b"ping-b")
    ok = a.recv(100) == b"ping-a" and b.recv(100) == b"ping-b"
    print("woken: %s" % ("both" if ok else "WRONG"))
    return 0 if ok else 1


def waitall(port):
    s = listen_on(port, 1)
    c, _ = s.accept()
    bufs = [bytearray(3000), bytearray(5000)]
    n = c.recvmsg_into(bufs, 0, socket.MSG_WAITALL)[0]
    print("waitall %d %s" % (n, "whole" if bytes(bufs[0] + bufs[1]) == pattern(8000) else "DIFFERS"))


def trickle(port):
    c = connect_to(port)
    for i in range(8):
        c.sendall(pattern(1000, 1000 * i))
        time.sleep(0.02)
    time.sleep(0.2)
    c.close()


def source(port):
    c = connect_to(port)
    sent = 0
    try:
        while True:
            c.sendall(pattern(16384, sent))
            sent += 16384
            time.sleep(0.01)
    except OSError as e:
        print("source: %d bytes, then %s" % (sent, errno.errorcode.get(e.errno, e)), flush=True)


def sink(port):
    s = listen_on(port, 1)
    c, _ = s.accept()
    n, last, why = 0, time.monotonic(), "the end"
    while True:
        try:
            d = c.recv(1 << 16)
        except OSError as e:
            why = errno.errorcode.get(e.errno, str(e))
            break
        if not d:
            break
        if d != pattern(len(d), n):
            why = "bytes out of order at %d" % n
            break
        n += len(d)
        last = time.monotonic()
    print("sink: %d bytes in order, then %s, %.1f s after the last byte"
          % (n, why, time.monotonic() - last), flush=True)


def scale_sink(port):
    import selectors
    s = listen_on(port, 1024)
    sel = selectors.DefaultSelector()
    sel.register(s, selectors.EVENT_READ, None)
    got = {}
    while True:
        for key, _ in sel.select():
            if key.data is None:
                c, _ = s.accept()
                c.setblocking(False)
                got[c] = 0
                sel.register(c, selectors.EVENT_READ, c)
                continue
            c = key.data
            try:
                d = c.recv(1 << 16)
            except BlockingIOError:
                continue
            if d:
                got[c] += len(d)
                continue
            sel.unregister(c)
            c.setblocking(True)
            c.sendall(b"%d\n" % got.pop(c))
            c.close()


def rdma_qps():
    """QPs on this host's RDMA devices (iproute2's rdma), or None."""
    import re
    import subprocess
    try:
        out = subprocess.run(["rdma", "resource", "show"], capture_output=True, text=True,
                             timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    qps = [int(m) for m in re.findall(r"\bqp (\d+)", out)]
    return sum(qps) if qps else None


def scale(port, n, seconds):
    import json
    import selectors
    q0 = rdma_qps()
    t0 = time.monotonic()
    conns = [connect_to(port) for _ in range(n)]
    t_conn = time.monotonic() - t0
    q1 = rdma_qps()
    sel = selectors.DefaultSelector()
    for c in conns:
        c.setblocking(False)
        sel.register(c, selectors.EVENT_WRITE, c)
    chunk = pattern(1 << 16)
    start = time.monotonic()
    until = start + seconds
    while time.monotonic() < until:
        for key, _ in sel.select(timeout=max(0.0, until - time.monotonic())):
            try:
                key.data.send(chunk)
            except BlockingIOError:
                pass
    total = 0
    for c in conns:
        sel.unregister(c)
        c.setblocking(True)
        c.shutdown(socket.SHUT_WR)
    for c in conns:
        line = b""
        while not line.endswith(b"\n"):
            d = c.recv(64)
            if not d:
                break
            line += d
        total += int(line or b"0")
        c.close()
    took = time.monotonic() - start
    print(json.dumps({"connections": n, "bytes": total, "seconds": took,
                      "connect_seconds": t_conn,
                      "qps_added": None if q0 is None or q1 is None else q1 - q0}), flush=True)


def twice(port, n):
    c = connect_to(port)
    for _ in range(n):
        c.send(b"a")
        c.send(b"b")
        time.sleep(1.0)
    c.shutdown(socket.SHUT_WR)
    ans = c.makefile("rb").readline().decode().strip()
    print(ans, flush=True)
    return 0 if ans.startswith("pairs ") else 1


def pairs(port, n):
    s = listen_on(port, 1)
    c, _ = s.accept()
    gaps, t_a = [], None
    while True:
        d = c.recv(1)
        if not d:
            break
        if d == b"a":
            t_a = time.monotonic()
        elif d == b"b" and t_a is not None:
            gaps.append(time.monotonic() - t_a)
            t_a = None
    line = "pairs %d of %d, b after a at most %.1f ms" % (len(gaps), n,
                                                         1e3 * max(gaps, default=0))
    c.sendall(line.encode() + b"\n")
    c.close()
    print(line, flush=True)


def ahead(port, n, seconds):
    c = connect_to(port)
    for i in range(n):
        c.send(pattern(16, 16 * i))
    t0, c0 = time.monotonic(), time.process_time()
    time.sleep(seconds)
    wall, cpu = time.monotonic() - t0, time.process_time() - c0
    ans = c.recv(1)
    print("ahead: %d writes of 16 B, then %.0f ms of CPU in %.0f ms asleep; answer %r"
          % (n, 1e3 * cpu, 1e3 * wall, ans), flush=True)
    return 0 if ans == b"k" else 1


def late(port, n, seconds):
    s = listen_on(port, 1)
    c, _ = s.accept()
    time.sleep(seconds)
    got = bytearray()
    while len(got) < 16 * n:
        d = c.recv(16 * n - len(got))
        if not d:
            break
        got += d
    whole = bytes(got) == pattern(16 * n)
    c.sendall(b"k")
    print("late: %d of %d bytes, %s" % (len(got), 16 * n, "whole" if whole else "NOT whole"),
          flush=True)
    c.close()
    return 0 if whole else 1


def exit_ahead(port, n):
    c = connect_to(port)
    for i in range(n):
        c.send(pattern(16, 16 * i))
    c.detach()  # Python's teardown does not close it: the process's exit does
    print("exit-ahead: %d writes of 16 B, exiting with the socket open" % n, flush=True)
    return 0


def close_ahead(port, n, linger, conns=1):
    cs = [connect_to(port) for _ in range(conns)]
    for c in cs:
        if linger:
            c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 30))
        for i in range(n):
            c.send(pattern(16, 16 * i))
    threads = len(os.listdir("/proc/self/task"))
    took = 0.0
    for c in cs:
        t0 = time.monotonic()
        c.close()
        took = max(took, time.monotonic() - t0)
    if conns == 1:
        print("close-ahead: %d writes of 16 B; the close took %.0f ms"
              % (n, 1e3 * took), flush=True)
    else:
        print("close-ahead: %d connections, %d writes of 16 B each; the longest "
              "close took %.0f ms; %d threads more after the closes"
              % (conns, n, 1e3 * took, len(os.listdir("/proc/self/task")) - threads),
              flush=True)
    return 0


def late_end(port, n, seconds, conns=1):
    import selectors
    s = listen_on(port, conns)
    cs = [s.accept()[0] for _ in range(conns)]
    time.sleep(seconds)
    got = [bytearray() for _ in cs]
    ends = ["the end"] * conns
    # One connection: a blocking recv. Several: whichever is readable, so
    # that each writer's close goes on while the others are read.
    sel = selectors.DefaultSelector()
    for i, c in enumerate(cs):
        sel.register(c, selectors.EVENT_READ, i)
    left = conns
    ended = []
    while left > 0:
        ready = [0] if conns == 1 else [key.data for key, _ in sel.select()]
        for i in ready:
            try:
                d = cs[i].recv(65536)
            except OSError as e:
                ends[i], d = os.strerror(e.errno), b""
            if d:
                got[i] += d
            else:
                sel.unregister(cs[i])
                ended.append(time.monotonic())
                left -= 1
    if conns > 1:
        print("late-end: the %d ends came within %.0f ms of each other"
              % (conns, 1e3 * (max(ended) - min(ended))), flush=True)
    ok = True
    for i, c in enumerate(cs):
        whole = bytes(got[i]) == pattern(16 * n)
        print("late-end: %d of %d bytes, %s, then %s"
              % (len(got[i]), 16 * n, "whole" if whole else "NOT whole", ends[i]), flush=True)
        c.close()
        ok = ok and whole and ends[i] == "the end"
    return 0 if ok else 1


def both_wake(port):
    import select
    import threading
    s = listen_on(port, 1)
    c, _ = s.accept()
    woke = [None, None]

    def sleeper(i):
        if i == 0:
            p = select.poll()
            p.register(c, select.POLLIN)
            got = p.poll(5000)
        else:
            p = select.epoll()
            p.register(c.fileno(), select.EPOLLIN)
            got = p.poll(5.0)
        woke[i] = time.monotonic() if got else None

    ts = [threading.Thread(target=sleeper, args=(i,)) for i in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    c.recv(1)
    if woke[0] is None or woke[1] is None:
        c.sendall(b"slept on")
    else:
        first = min(woke)
        c.sendall(b"woke %.1f %.1f" % ((woke[0] - first) * 1000, (woke[1] - first) * 1000))
    c.close()


def poke(port, seconds):
    c = connect_to(port)
    # The program's own keepalive reads back as it set it: across hosts
    # rb2-run keeps the stream's tighter one on the socket underneath.
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, 300)
    print("poke: TCP_KEEPIDLE set to 300, read back %d"
          % c.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE), flush=True)
    time.sleep(seconds)
    c.sendall(b"x")
    got = b""
    while True:
        b = c.recv(100)
        if not b:
            break
        got += b
    print("both-wake: %s (ms after the first)" % got.decode(errors="replace"), flush=True)
    return 0 if got.startswith(b"woke ") else 1


def echo_all(port, n):
    import selectors
    s = listen_on(port, n)
    sel = selectors.EpollSelector()
    for _ in range(n):
        c, _ = s.accept()
        sel.register(c, selectors.EVENT_READ, c)
    s.close()
    left = n
    while left:
        for key, _ in sel.select():
            d = key.data.recv(1 << 16)
            if d:
                key.data.sendall(d)
            else:
                sel.unregister(key.data)
                key.data.close()
                left -= 1


def busy_one(port, n, rounds):
    import selectors
    conns = [connect_to(port) for _ in range(n)]
    sel = selectors.EpollSelector()
    for c in conns:
        sel.register(c, selectors.EVENT_READ, c)
    msg, done = pattern(64), 0
    for _ in range(rounds):
        conns[0].sendall(msg)
        got = b""
        while len(got) < len(msg):
            for key, _ in sel.select():
                d = key.data.recv(1 << 16)
                if key.data is not conns[0] or not d:
                    print("an idle connection woke with %r" % d[:16], flush=True)
                    return 1
                got += d
        done += got == msg
    for c in conns:
        c.close()
    print("round trips %d of %d whole, over %d connections" % (done, rounds, n), flush=True)
    return 0 if done == rounds else 1


def pump(port, rounds, nbytes):
    import selectors
    s = listen_on(port, 1)
    c, _ = s.accept()
    c.setblocking(False)
    sel = selectors.EpollSelector()
    sel.register(c, selectors.EVENT_READ)
    data, asked, longest = pattern(nbytes), b"", 0.0
    for r in range(rounds):
        # The next request: a wait that reads only, while the last
        # round's sends complete
        while b"\n" not in asked:
            sel.modify(c, selectors.EVENT_READ)
            if not sel.select(10):
                print("stalled waiting for request %d" % r, flush=True)
                return 1
            try:
                d = c.recv(64)
            except BlockingIOError:
                continue
            if not d:
                print("the client left at round %d" % r, flush=True)
                return 1
            asked += d
        asked = asked[asked.index(b"\n") + 1:]
        off = 0
        while off < nbytes:
            try:
                off += c.send(data[off:off + (1 << 16)])
                # A look that does not block between sends, as an event
                # loop with work pending makes (Redis's AE_DONT_WAIT),
                # after a pause in which the send completes (the other
                # host's ACK): the look is told of the sender's channel
                time.sleep(0.002)
                sel.select(0)
                continue
            except BlockingIOError:
                pass
            sel.modify(c, selectors.EVENT_WRITE)
            t0 = time.monotonic()
            ready = sel.select(10)
            longest = max(longest, time.monotonic() - t0)
            if not ready:
                print("stalled for room in round %d at byte %d of %d" % (r, off, nbytes),
                      flush=True)
                return 1
    c.close()
    print("pumped %d rounds, the longest wait for room %.0f ms" % (rounds, 1e3 * longest),
          flush=True)
    return 0


def drink(port, rounds, nbytes):
    c = connect_to(port)
    want, whole = pattern(nbytes), 0
    for _ in range(rounds):
        c.sendall(b"go\n")
        time.sleep(0.3)             # the pump fills the ring and waits for room
        got, reads = bytearray(), 0
        while len(got) < nbytes:
            d = c.recv(min(1 << 16, nbytes - len(got)))
            if not d:
                break
            got += d
            reads += 1
            if reads % 4 == 0:
                time.sleep(0.001)
        whole += bytes(got) == want
    c.close()
    print("drank %d of %d rounds whole" % (whole, rounds), flush=True)
    return 0 if whole == rounds else 1


def raw_close(port):
    """rawclose's server: two connections in turn, each added to one epoll
    set; the first closed with syscall(SYS_close), past close(), as libuv
    closes its descriptors, so the second gets its number. The second's
    byte must wake the epoll wait: prints how long after its send."""
    libc = ctypes.CDLL(None, use_errno=True)
    s = listen_on(port, 2)
    ep = select.epoll()
    a, _ = s.accept()
    first = a.fileno()
    ep.register(first, select.EPOLLIN)
    ep.poll(5)
    a.recv(10)
    libc.syscall(3, a.detach())          # SYS_close (x86_64)
    b, _ = s.accept()
    try:
        ep.register(b.fileno(), select.EPOLLIN)
    except FileExistsError:              # libuv's answer to EEXIST
        ep.modify(b.fileno(), select.EPOLLIN)
    woke = ep.poll(5)
    got = b.recv(100) if woke else b""
    late = time.time() - float(got) if got else None
    print("second connection on %s fd: %s" % (
        "the first's" if b.fileno() == first else "another",
        "woken %.0f ms after the send" % (late * 1000) if got else "not woken in 5 s"),
        flush=True)


def raw_close_client(port):
    """rawclose's client: the first connection until the server closes it,
    then the second, whose one message, sent once the server sleeps, is the
    time it was sent."""
    a = connect_to(port)
    a.sendall(b"a")
    a.recv(1)                            # the end: closed past close()
    a.close()
    b = connect_to(port)
    time.sleep(0.5)
    b.sendall(b"%.6f" % time.time())
    b.recv(1)


def late_add(port):
    """lateadd's server: each round, a thread sleeps in epoll_wait (5 s at
    most) while this one adds a connection to its set; the connection's
    message must wake it. Prints the three wake-ups' delays."""
    import threading
    s = listen_on(port, 2)
    c0, _ = s.accept()
    c1, _ = s.accept()
    late = []

    def round_(ep, c, tell):
        woke = []
        t = threading.Thread(target=lambda: woke.append((ep.poll(5), time.time())))
        t.start()
        time.sleep(0.3)                      # asleep in the kernel's wait by now
        ep.register(c.fileno(), select.EPOLLIN)
        added = time.time()
        if tell:
            c.sendall(b"g")                  # the message comes after the add
        t.join()
        got, when = woke[0]
        stamp = float(c.recv(100)) if got else None
        if not got:
            late.append("not woken in 5 s")
        else:
            late.append("%.0f ms" % ((when - max(stamp, added)) * 1000))
        return ep

    r, w = os.pipe()
    for c, tell in ((c0, True), (c1, False)):
        ep = select.epoll()
        ep.register(r, select.EPOLLIN)       # kernel fds alone in the set
        round_(ep, c, tell)
        ep.close()
    ep = select.epoll()
    ep.register(c0.fileno(), select.EPOLLIN)  # a connection in it already
    round_(ep, c1, True)
    print("late adds woke: %s" % ", ".join(late), flush=True)
    c0.close()
    c1.close()


def late_add_client(port):
    """lateadd's client: the first connection's stamp when asked; the
    second's at once, and again when asked."""
    c0 = connect_to(port)
    c1 = connect_to(port)
    c0.recv(1)
    c0.sendall(b"%.6f" % time.time())
    c1.sendall(b"%.6f" % time.time())
    c1.recv(1)
    c1.sendall(b"%.6f" % time.time())
    c0.recv(1)
    c1.recv(1)


def slow_accept(port):
    """slowaccept's server: accepts its four connections 1.5 s after the
    first is in its backlog (not after it listens: a client that started
    late under TCG made its connects as the accepts came), each accept
    timed. The first, which its client closed before this accept, must read
    the end; then says "hi" on each of the others, and answers "ping" with
    "pong"."""
    s = listen_on(port, 8)
    select.select([s], [], [], 60)
    time.sleep(1.5)
    c, _ = s.accept()
    first = c.recv(10)
    c.close()
    cs, took = [], []
    for _ in range(3):
        t = time.time()
        c, _ = s.accept()
        took.append((time.time() - t) * 1000)
        cs.append(c)
    for c in cs:
        c.sendall(b"hi")
    for c in cs:
        if read_exactly(c, 4) == b"ping":
            c.sendall(b"pong")
        c.close()
    print("accepts took %s ms; the connection closed before its accept read %s" % (
        ", ".join("%.1f" % x for x in took), "the end" if first == b"" else repr(first)),
        flush=True)


def spawn_pend(port):
    """spawnpend's server: each accept 1.5 s late, while the client's
    connect waits for it; the second connection's client execs meanwhile,
    and its end is read."""
    s = listen_on(port, 2)
    time.sleep(1.5)
    c, _ = s.accept()
    c.sendall(b"hi")
    if read_exactly(c, 4) == b"ping":
        c.sendall(b"pong")
    c.close()
    time.sleep(1.5)
    c, _ = s.accept()
    got = c.recv(10)
    print("the connection of the program that exec'd read %s" % (
        "the end" if got == b"" else repr(got)), flush=True)
    c.close()


def zero_copy(port):
    """zerocopy's server: reads what the client sent, answers "k" once
    all of it came, then reads to the end."""
    s = listen_on(port, 2)
    c, _ = s.accept()
    read_exactly(c, 3 * 65536 + 1)
    c.sendall(b"k")
    while c.recv(65536):
        pass
    c.close()


def close_at_pair(port):
    """closeatpair's server: accepts 1 s after it listens, when its client
    waits for the pairing in the background; the client closes while its
    set-up thread holds the service's answer (RB2_RUN_FAULT_PAIR_LATE_MS).
    The accept must not wait for a client end that never opens."""
    s = listen_on(port, 2)
    time.sleep(1.0)
    t = time.time()
    c, _ = s.accept()
    took = (time.time() - t) * 1000
    try:
        got = c.recv(10)
        how = "the end" if got == b"" else repr(got)
    except OSError as e:
        how = errno.errorcode.get(e.errno, str(e.errno))
    c.close()
    print("the accept took %.0f ms; the connection read %s" % (took, how), flush=True)


def close_at_pair_client(port):
    """closeatpair's client: connects without blocking (EINPROGRESS: the
    server has not accepted), then closes 1.3 s later."""
    c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    c.setblocking(False)
    e = c.connect_ex((HOST, port))
    time.sleep(1.3)
    t = time.time()
    c.close()
    print("connect said %s; the close took %.0f ms" % (errno.errorcode.get(e, e),
                                                      (time.time() - t) * 1000), flush=True)


def self_connect():
    """selfconnect: one process at both ends of its connections, as a
    program's own loopback plumbing may be (a wakeup socket pair made over
    TCP, a test harness)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((HOST, 0))
    s.listen(4)
    port = s.getsockname()[1]
    c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    c.setblocking(False)
    c.connect_ex((HOST, port))
    a, _ = s.accept()
    c.setblocking(True)
    c.sendall(b"x" * 100000)
    got = read_exactly(a, 100000)
    a.sendall(b"pong")
    print("%d bytes one way, %r back" % (len(got), read_exactly(c, 4)), flush=True)
    # A blocking connect, before this process's accept: the kernel's
    # returns at once (its backlog holds the connection).
    t = time.time()
    b = socket.create_connection((HOST, port))
    ms = (time.time() - t) * 1000
    a2, _ = s.accept()
    b.sendall(b"ping")
    print("a blocking connect before the accept took %.0f ms, and %r arrived" %
          (ms, read_exactly(a2, 4)), flush=True)


def inherit(port, cmd):
    """inherit: a listener made here and passed on across an exec, as
    systemd's socket activation or an inetd passes it."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((HOST, port))
    s.listen(8)
    os.set_inheritable(s.fileno(), True)
    os.execvp(cmd[0], cmd + [str(s.fileno())])


def inherited(fd):
    """inherited: a server that never calls listen(); its listener came
    listening."""
    s = socket.socket(fileno=fd)
    print("listening", flush=True)
    c, _ = s.accept()
    c.sendall(read_exactly(c, 5))
    c.close()


def inherited_client(port):
    c = connect_to(port)
    c.sendall(b"hello")
    print("got %r" % read_exactly(c, 5), flush=True)


def conn_close(port, delay=1.0):
    """connclose's server: its accept comes after the client's close."""
    s = listen_on(port, 2)
    time.sleep(delay)
    c, _ = s.accept()
    c.settimeout(10)
    t = time.monotonic()
    try:
        got = "%d bytes, then the end" % len(c.recv(100))
    except OSError as e:
        got = errno.errorcode.get(e.errno, str(e.errno))
    print("the server read %s, %.0f ms after its accept" % (got, (time.monotonic() - t) * 1000),
          flush=True)


def arenas_mapped():
    with open("/proc/self/maps") as f:
        return sum("rb2-arena" in line for line in f)


def conn_close_client(port):
    """connclose's client: a blocking connect, waiting for the server's
    accept, while another thread closes its fd. The kernel's connect goes
    on (the call holds the socket's file) and the socket closes when it
    returns; the connection must end then, not stay open in the process."""
    import threading
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    fd = s.fileno()

    def closer():
        time.sleep(0.3)
        os.close(fd)
    t = threading.Thread(target=closer)
    t.start()
    try:
        s.connect((HOST, port))
        ret = "0"
    except OSError as e:
        ret = errno.errorcode.get(e.errno, str(e.errno))
    s.detach()                  # closed already
    t.join()
    until = time.monotonic() + 5    # the end goes on meanwhile
    while arenas_mapped() > 0 and time.monotonic() < until:
        time.sleep(0.1)
    print("connect returned %s; %d arenas mapped after" % (ret, arenas_mapped()), flush=True)


def close_under(port):
    """closeunder's server: its bytes come after the client's close."""
    s = listen_on(port, 2)
    c, _ = s.accept()
    time.sleep(1.0)
    try:
        c.sendall(b"late data")
    except OSError:
        pass
    time.sleep(0.5)
    c.close()


def close_under_client(port, sweep=False):
    """closeunder's client: one thread reads the connection (os.read, so
    no Python object holds the fd), asleep, while the main thread closes
    the fd 0.3 s on. The kernel's socket lives on while the read holds
    its file, and the read gets the bytes that come. With @sweep, a
    closefrom() of every descriptor from that fd on follows the close: it
    must leave what the read still uses, so that its wait sleeps (the CPU
    it took is said)."""
    import threading
    c = connect_to(port)
    fd = c.detach()
    got = []

    def reader():
        try:
            got.append(repr(os.read(fd, 100)))
        except OSError as e:
            got.append(errno.errorcode.get(e.errno, str(e.errno)))
    t = threading.Thread(target=reader)
    t.start()
    time.sleep(0.3)
    os.close(fd)
    cpu = time.process_time()
    if sweep:
        ctypes.CDLL(None).closefrom(fd)
    t.join(10)
    print("the read under the close%s got %s" % (" and the sweep" if sweep else "",
                                                 got[0] if got else "nothing in 10 s"),
          flush=True)
    if sweep:
        print("the wait took %d ms of CPU" % ((time.process_time() - cpu) * 1000), flush=True)


KEEP_BELOW_STEPS = (("close_range", b"one"), ("closefrom", b"two"), ("a spawn", b"three"))


def keep_below(port):
    """keepbelow's server: a word 1 s after each of its client's steps."""
    s = listen_on(port, 2)
    c, _ = s.accept()
    for _, word in KEEP_BELOW_STEPS:
        time.sleep(1.0)
        c.sendall(word)
        read_exactly(c, 4)
    c.close()


def keep_below_client(port):
    """keepbelow's client: a sweep of the descriptors past a connection it
    keeps (close_range, then glibc's closefrom, which goes past the wrapped
    close_range) must leave what the connection still uses: its waits then
    sleep, as the kernel's, and do not spin a core. Then a spawn, whose
    vfork child copies the connection to its stdin and sweeps its other
    descriptors before its exec (Python's subprocess), must leave the
    connection, and this process's stdin, as they were: the child's copy
    reads as a closed connection (rb2-run's exec), never as the stream."""
    c = connect_to(port)
    fd = c.fileno()
    libc = ctypes.CDLL(None, use_errno=True)
    for how, _ in KEEP_BELOW_STEPS:
        if how == "close_range":
            libc.close_range(ctypes.c_uint(fd + 1), ctypes.c_uint(0xFFFFFFFF), 0)
        elif how == "closefrom":
            libc.closefrom(fd + 1)
        else:
            # The child's stdin a copy of the connection (a dup2 in the
            # vfork child), and this process's own stdin /dev/null.
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.close(null)
            child = subprocess.run(["cat"], stdin=fd, stdout=subprocess.PIPE, close_fds=True,
                                   timeout=10).stdout
            print("the spawned cat read %r from its copy of the connection; this process's "
                  "stdin read %r" % (child, os.read(0, 100)), flush=True)
        cpu = time.process_time()
        got = c.recv(100)
        cpu = time.process_time() - cpu
        try:
            c.sendall(b"next")
        except OSError as e:
            got += (" (then %s)" % errno.errorcode.get(e.errno, e.errno)).encode()
        print("after %s: read %r, its wait took %d ms of CPU" % (how, got, cpu * 1000),
              flush=True)
    c.close()


def capacity(port):
    """capacity's server: takes its client's two connections, reads nothing."""
    s = listen_on(port, 2)
    conns = [s.accept()[0] for _ in range(2)]
    time.sleep(3.0)
    for c in conns:
        c.close()


def capacity_client(port):
    """capacity's client: how much a connection takes in before its reader
    reads anything, in small writes and in large ones."""
    out = {}
    for size in (100, 65536):
        c = connect_to(port)
        c.setblocking(False)
        buf, n, writes, last = b"x" * size, 0, 0, time.monotonic()
        while time.monotonic() - last < 0.2:
            try:
                n += c.send(buf)
                writes += 1
                last = time.monotonic()
            except BlockingIOError:
                time.sleep(0.005)
        out["writes_of_%d" % size] = {"bytes": n, "writes": writes}
    print(json.dumps(out), flush=True)


def accept_quiet(port, seconds):
    """Accept one connection, send nothing, and close it @seconds on."""
    s = listen_on(port, 2)
    c, _ = s.accept()
    time.sleep(seconds)
    c.close()


def poll_close(port):
    """pollclose's server: sends nothing; its close comes 2 s on."""
    accept_quiet(port, 2.0)


def poll_close_client(port):
    """pollclose's client: a poll asleep on a connection that another thread
    closes returns at its timeout with POLLNVAL on it, as the kernel's: its
    last look finds the fd closed."""
    import threading
    c = connect_to(port)
    fd = c.fileno()
    got = {}

    def poller():
        p = select.poll()
        p.register(fd, select.POLLIN)
        t0 = time.monotonic()
        got["r"] = p.poll(1000)
        got["s"] = time.monotonic() - t0
    t = threading.Thread(target=poller)
    t.start()
    time.sleep(0.2)
    c.close()
    t.join(10)
    print("the poll under the close returned %s after %.1f s" %
          ([(f == fd, "POLLNVAL" if ev == select.POLLNVAL else ev) for f, ev in got.get("r", [])],
           got.get("s", -1)), flush=True)


def shut_wake(port, hold=3.0):
    """shutwake's server: takes three connections, sends nothing, and
    closes them HOLD s on."""
    s = listen_on(port, 4)
    conns = [s.accept()[0] for _ in range(3)]
    time.sleep(hold)
    for c in conns:
        c.close()


def shut_wake_client(port, delay=0.3):
    """shutwake's client: shutdown(SHUT_RD) wakes a thread asleep in an
    epoll_wait (EPOLLIN), one asleep in a poll (POLLIN) and one in a read
    (which reads the end), at once, as the kernel's wakes them: a common way
    to stop a reader thread. Each on a connection of its own, shut down in
    turn once the last woke, so that no wake-up comes from another's."""
    import threading
    import select
    conns = [connect_to(port) for _ in range(3)]
    got = {}

    def epoller(c):
        ep = select.epoll()
        ep.register(c.fileno(), select.EPOLLIN)
        r = ep.poll(10)
        got["epoll"] = ("EPOLLIN" if r and r[0][1] & select.EPOLLIN else repr(r),
                        time.monotonic())

    def poller(c):
        p = select.poll()
        p.register(c, select.POLLIN)
        r = p.poll(10000)
        got["poll"] = ("POLLIN" if r and r[0][1] & select.POLLIN else repr(r),
                       time.monotonic())

    def reader(c):
        d = c.recv(100)
        got["read"] = (repr(d), time.monotonic())
    sleepers = (("epoll", epoller), ("poll", poller), ("read", reader))
    ts = [threading.Thread(target=f, args=(c,)) for (_, f), c in zip(sleepers, conns)]
    for t in ts:
        t.start()
    time.sleep(delay)           # all three asleep (TCG is slow to start them)
    for (k, _), c, t in zip(sleepers, conns, ts):
        t0 = time.monotonic()
        c.shutdown(socket.SHUT_RD)
        t.join(15)
        what, t = got.get(k, ("nothing in 15 s", t0))
        print("the %s got %s, %d ms after the shutdown" % (k, what, (t - t0) * 1000),
              flush=True)


def dup_close(port):
    """dupclose's server: "hello" 0.3 s after the accept, then the answer."""
    s = listen_on(port, 2)
    c, _ = s.accept()
    time.sleep(0.3)
    c.sendall(b"hello")
    print("the answer: %r" % read_exactly(c, 2), flush=True)
    c.close()


def dup_close_client(port):
    """dupclose's client: the connection moved to fd 10 as an inetd-style
    child moves it to 0 and 1 (dup2, then the original closed); a read that
    sleeps on it, then a write."""
    c = connect_to(port)
    fd = c.detach()
    os.dup2(fd, 10)
    os.close(fd)
    d = socket.socket(fileno=10)
    try:
        got = read_exactly(d, 5)
        d.sendall(b"ok")
        print("on the dup: %r, answered" % got, flush=True)
    except OSError as e:
        print("on the dup: %s" % errno.errorcode.get(e.errno, e.errno), flush=True)
    d.close()


def close_from(port):
    """closefrom's server: reads its one connection to the end."""
    s = listen_on(port, 2)
    c, _ = s.accept()
    got = b""
    while True:
        b = c.recv(100)
        if not b:
            break
        got += b
    print("read %r then the end" % got, flush=True)


def close_from_client(port):
    """closefrom's client: closes its connection with glibc's closefrom(),
    which closes through glibc's own close_range, past the wrapped one;
    then a file opened on the connection's number must read as that file,
    not as the connection (no stale entry)."""
    c = connect_to(port)
    c.sendall(b"abc")
    fd = c.detach()
    ctypes.CDLL(None).closefrom(fd)
    f = os.open("/dev/zero", os.O_RDONLY)
    got = os.read(f, 4)
    os.close(f)
    print("closefrom(%d); /dev/zero opened on fd %d read %r" % (fd, f, got), flush=True)


def shut_early(port):
    """shutearly's server: accepts 1 s after it listens; its client shut
    its side down before that. Reads to the end, answers "bye", closes."""
    s = listen_on(port, 2)
    time.sleep(1.0)
    c, _ = s.accept()
    got = c.recv(10)
    c.sendall(b"bye")
    c.close()
    print("read %s, answered" % ("the end" if got == b"" else repr(got)), flush=True)


def shut_early_client(port):
    """shutearly's client: a non-blocking connect, at once shutdown(SHUT_WR)
    (the kernel's returns at once, whether the server accepted or not),
    then the server's answer read to the end."""
    c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    c.setblocking(False)
    e = c.connect_ex((HOST, port))
    t = time.time()
    c.shutdown(socket.SHUT_WR)
    took = (time.time() - t) * 1000
    c.setblocking(True)
    got = read_exactly(c, 10)
    print("connect said %s; the shutdown took %.0f ms; read %r then the end" % (
        errno.errorcode.get(e, e), took, got), flush=True)


def adopt_wake(port):
    """adoptwake's server: accepts 1.5 s late, so that the client's set-up
    goes on in the background; "ping" read, "pong" sent."""
    s = listen_on(port, 2)
    time.sleep(1.5)
    c, _ = s.accept()
    if read_exactly(c, 4) == b"ping":
        c.sendall(b"pong")
    c.close()


def adopt_wake_client(port):
    """adoptwake's client: once epoll says EPOLLOUT the socket is
    connected: a second connect() says EISCONN, as the kernel's, not
    EALREADY, and a send takes its bytes (ab calls connect() again to learn
    the result; an edge-triggered writer told EAGAIN would wait for good)."""
    c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    c.setblocking(False)
    e = c.connect_ex((HOST, port))
    ep = select.epoll()
    ep.register(c.fileno(), select.EPOLLOUT | select.EPOLLET)
    ev = ep.poll(10)
    again = c.connect_ex((HOST, port))
    try:
        sent = "%d bytes" % c.send(b"ping")
    except BlockingIOError:
        sent = "EAGAIN"
    c.setblocking(True)
    print("connect said %s; epoll said %s; connect again said %s; send took %s; read %r" % (
        errno.errorcode.get(e, e), "EPOLLOUT" if ev and ev[0][1] & select.EPOLLOUT else ev,
        errno.errorcode.get(again, again), sent, read_exactly(c, 4)), flush=True)


def read_exactly(c, n):
    got = b""
    while len(got) < n:
        b = c.recv(n - len(got))
        if not b:
            break
        got += b
    return got


def spawn_pend_client(port):
    """spawnpend's client: a spawn while a non-blocking connect (on a
    close-on-exec socket, Python's default) waits for the server's accept
    need not wait for that set-up, which the new program never sees: a
    posix_spawn() and a subprocess.run() (vfork, then execve), each timed.
    A fork does wait for it (the child holds the connection too), and must
    return once the accept came. The connection then pairs and talks, over
    rb2. Then another such connect, and an exec: the new program says how
    long after the exec call it ran."""
    c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    c.setblocking(False)
    e = c.connect_ex((HOST, port))
    if e not in (0, errno.EINPROGRESS):
        print("connect: %s" % os.strerror(e), flush=True)
        return
    t = time.monotonic()
    pid = os.posix_spawn("/bin/true", ["true"], dict(os.environ))
    os.waitpid(pid, 0)
    spawn = (time.monotonic() - t) * 1000
    t = time.monotonic()
    subprocess.run(["true"], check=True)
    sub = (time.monotonic() - t) * 1000
    t = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    print("a fork while it waited returned in %d ms" % ((time.monotonic() - t) * 1000),
          flush=True)
    p = select.poll()
    p.register(c, select.POLLOUT)
    p.poll(10000)
    c.setblocking(True)
    hi = read_exactly(c, 2)
    c.sendall(b"ping")
    pong = read_exactly(c, 4)
    print("while a connect waited for its accept: posix_spawn %d ms, subprocess.run %d ms; "
          "then %r and %r" % (spawn, sub, hi, pong), flush=True)
    c.close()
    d = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    d.setblocking(False)
    d.connect_ex((HOST, port))
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, "-c",
                              "import sys, time; print('the exec took %d ms' % "
                              "((time.monotonic() - float(sys.argv[1])) * 1000))",
                              repr(time.monotonic())])


def zero_copy_client(port):
    """zerocopy's client: a send with MSG_ZEROCOPY before SO_ZEROCOPY is
    set (the flag is ignored: no report), then three after it. Once the
    server has it all, poll must say POLLERR, and the error queue must
    report ids 0 to 2, from the zero-copy origin, as copied (loopback
    copies), and then be empty; the poll after it must say nothing."""
    so_zerocopy, msg_zerocopy = 60, 0x4000000
    c = connect_to(port)
    c.sendall(b"x", msg_zerocopy)
    c.setsockopt(socket.SOL_SOCKET, so_zerocopy, 1)
    for _ in range(3):
        c.sendall(b"z" * 65536, msg_zerocopy)
    if read_exactly(c, 1) != b"k":
        print("zerocopy: no answer", flush=True)
        return
    p = select.poll()
    p.register(c, select.POLLIN)
    r = p.poll(2000)
    print("zerocopy: poll before the reports: %s" % (
        "POLLERR" if r and r[0][1] & select.POLLERR else repr(r)), flush=True)
    ids, seen = [], []
    while True:
        try:
            _, anc, flags, _ = c.recvmsg(0, 256, socket.MSG_ERRQUEUE)
        except BlockingIOError:
            break
        for level, typ, data in anc:
            eno, origin, _, code, _, lo, hi = struct.unpack_from("=IBBBBII", data)
            seen.append("level %d type %d errno %d origin %d code %d" % (
                level, typ, eno, origin, code))
            ids.extend(range(lo, hi + 1))
        if flags & socket.MSG_CTRUNC:
            seen.append("truncated")
    print("zerocopy: ids reported %s; %s" % (
        ids, ", ".join(sorted(set(seen))) or "no report"), flush=True)
    r = p.poll(0)
    print("zerocopy: poll after them: %r" % r, flush=True)
    c.shutdown(socket.SHUT_WR)
    c.close()


def slow_accept_client(port):
    """slowaccept's client, while the server does not accept yet: first a
    non-blocking connect, timed, closed at once (its close must not wait
    for the accept); then three more, each timed. Of those, one waits in
    poll, one in an epoll set it joined before its connect (nginx's
    upstreams), one in a set it joins after. A read and a write before
    each is writable must say EAGAIN (they may not touch the kernel socket
    under a stream), and a second connect EALREADY; after it, the server's
    "hi" and the echo come whole, and a connect says 0 (connected, as the
    kernel's first connect after one completed; EISCONN after that)."""
    c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    c.setblocking(False)
    t = time.time()
    c.connect_ex((HOST, port))
    t1 = time.time()
    c.close()
    closed, connected = (time.time() - t1) * 1000, (t1 - t) * 1000
    ep_before = select.epoll()
    socks, took = [], []
    for i in range(3):
        c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        c.setblocking(False)
        if i == 1:
            ep_before.register(c.fileno(), select.EPOLLOUT | select.EPOLLET)
        t = time.time()
        e = c.connect_ex((HOST, port))
        took.append((time.time() - t) * 1000)
        if e not in (0, errno.EINPROGRESS):
            print("connect %d: %s" % (i, os.strerror(e)), flush=True)
            return
        socks.append(c)
    early = []
    for c in socks:
        e = c.connect_ex((HOST, port))       # still connecting: EALREADY
        early.append("connect %s" % errno.errorcode.get(e, e))
        for what, call in (("read", lambda: c.recv(10)), ("write", lambda: c.send(b"ping"))):
            try:
                r = call()
                # Kernel TCP: the handshake is done, so a write goes to
                # the server's queue; under rb2-run it waits for accept.
                early.append("%s %r" % (what, r))
            except BlockingIOError:
                early.append("%s EAGAIN" % what)
    ep_after = select.epoll()
    ep_after.register(socks[2].fileno(), select.EPOLLOUT)
    waits = []
    t = time.time()
    po = select.poll()
    po.register(socks[0].fileno(), select.POLLOUT)
    for how, wait in (("poll", lambda: po.poll(5000)), ("epoll before", lambda: ep_before.poll(5)),
                      ("epoll after", lambda: ep_after.poll(5))):
        ev = wait()
        waits.append("%s %s at %.0f ms" % (how, "writable" if ev else "NOT writable",
                                          (time.time() - t) * 1000))
    said = []
    for i, c in enumerate(socks):
        e = c.connect_ex((HOST, port))       # connected: 0 (EISCONN after)
        c.setblocking(True)
        err = c.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        hi = read_exactly(c, 2)
        if early[3 * i + 2] != "write 4":    # not sent early (kernel TCP)
            c.sendall(b"ping")
        said.append("%s/%s/%d/%s" % (hi.decode(errors="replace"),
                                     read_exactly(c, 4).decode(errors="replace"), err,
                                     errno.errorcode.get(e, e)))
        c.close()
    print("connects returned in %s ms; before accept: %s; %s; said %s" % (
        ", ".join("%.0f" % x for x in took), ", ".join(early), ", ".join(waits),
        ", ".join(said)), flush=True)
    print("a close before the accept took %.0f ms, after a connect of %.0f ms" % (
        closed, connected), flush=True)


def uring():
    libc = ctypes.CDLL(None, use_errno=True)
    params = ctypes.create_string_buffer(120)       # struct io_uring_params
    r = libc.syscall(425, 4, params)                # SYS_io_uring_setup (x86_64)
    print("io_uring_setup:", "ok" if r >= 0 else os.strerror(ctypes.get_errno()))
    if r >= 0:
        os.close(r)


if __name__ == "__main__":
    if sys.argv[1] == "server":
        server(int(sys.argv[2]), float(sys.argv[3]) if len(sys.argv) > 3 else 0.0,
               float(sys.argv[4]) if len(sys.argv) > 4 else 0.0)
    elif sys.argv[1] == "source":
        source(int(sys.argv[2]))
    elif sys.argv[1] == "sink":
        sink(int(sys.argv[2]))
    elif sys.argv[1] == "count":
        count(int(sys.argv[2]))
    elif sys.argv[1] == "waitall":
        waitall(int(sys.argv[2]))
    elif sys.argv[1] == "idle":
        idle(int(sys.argv[2]))
    elif sys.argv[1] == "wake":
        sys.exit(wake(int(sys.argv[2]), float(sys.argv[3])))
    elif sys.argv[1] == "echo":
        echo(int(sys.argv[2]), int(sys.argv[3]))
    elif sys.argv[1] == "fork-echo":
        fork_echo(int(sys.argv[2]), int(sys.argv[3]))
    elif sys.argv[1] == "fork-away":
        fork_away(int(sys.argv[2]))
    elif sys.argv[1] == "fork-away-client":
        sys.exit(fork_away_client(int(sys.argv[2])))
    elif sys.argv[1] == "many":
        sys.exit(many(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])))
    elif sys.argv[1] == "trickle":
        trickle(int(sys.argv[2]))
    elif sys.argv[1] == "twice":
        sys.exit(twice(int(sys.argv[2]), int(sys.argv[3])))
    elif sys.argv[1] == "pairs":
        pairs(int(sys.argv[2]), int(sys.argv[3]))
    elif sys.argv[1] == "ahead":
        sys.exit(ahead(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])))
    elif sys.argv[1] == "late":
        sys.exit(late(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])))
    elif sys.argv[1] == "exit-ahead":
        sys.exit(exit_ahead(int(sys.argv[2]), int(sys.argv[3])))
    elif sys.argv[1] == "close-ahead":
        more = sys.argv[4] if len(sys.argv) > 4 else ""
        sys.exit(close_ahead(int(sys.argv[2]), int(sys.argv[3]), more == "linger",
                             int(more) if more.isdigit() else 1))
    elif sys.argv[1] == "late-end":
        sys.exit(late_end(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]),
                          int(sys.argv[5]) if len(sys.argv) > 5 else 1))
    elif sys.argv[1] == "both-wake":
        both_wake(int(sys.argv[2]))
    elif sys.argv[1] == "poke":
        sys.exit(poke(int(sys.argv[2]), float(sys.argv[3])))
    elif sys.argv[1] == "echo-all":
        echo_all(int(sys.argv[2]), int(sys.argv[3]))
    elif sys.argv[1] == "busy-one":
        sys.exit(busy_one(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])))
    elif sys.argv[1] == "pump":
        sys.exit(pump(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])))
    elif sys.argv[1] == "drink":
        sys.exit(drink(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])))
    elif sys.argv[1] == "rawclose":
        raw_close(int(sys.argv[2]))
    elif sys.argv[1] == "rawclose-client":
        raw_close_client(int(sys.argv[2]))
    elif sys.argv[1] == "lateadd":
        late_add(int(sys.argv[2]))
    elif sys.argv[1] == "lateadd-client":
        late_add_client(int(sys.argv[2]))
    elif sys.argv[1] == "spawnpend":
        spawn_pend(int(sys.argv[2]))
    elif sys.argv[1] == "spawnpend-client":
        spawn_pend_client(int(sys.argv[2]))
    elif sys.argv[1] == "zerocopy":
        zero_copy(int(sys.argv[2]))
    elif sys.argv[1] == "zerocopy-client":
        zero_copy_client(int(sys.argv[2]))
    elif sys.argv[1] == "slowaccept":
        slow_accept(int(sys.argv[2]))
    elif sys.argv[1] == "slowaccept-client":
        slow_accept_client(int(sys.argv[2]))
    elif sys.argv[1] == "closeatpair":
        close_at_pair(int(sys.argv[2]))
    elif sys.argv[1] == "closeatpair-client":
        close_at_pair_client(int(sys.argv[2]))
    elif sys.argv[1] == "selfconnect":
        self_connect()
    elif sys.argv[1] == "inherit":
        inherit(int(sys.argv[2]), sys.argv[3:])
    elif sys.argv[1] == "inherited":
        inherited(int(sys.argv[2]))
    elif sys.argv[1] == "inherited-client":
        inherited_client(int(sys.argv[2]))
    elif sys.argv[1] == "connclose":
        conn_close(int(sys.argv[2]), *[float(a) for a in sys.argv[3:4]])
    elif sys.argv[1] == "connclose-client":
        conn_close_client(int(sys.argv[2]))
    elif sys.argv[1] == "closeunder":
        close_under(int(sys.argv[2]))
    elif sys.argv[1] == "closeunder-client":
        close_under_client(int(sys.argv[2]))
    elif sys.argv[1] == "closesweep":
        close_under(int(sys.argv[2]))
    elif sys.argv[1] == "closesweep-client":
        close_under_client(int(sys.argv[2]), sweep=True)
    elif sys.argv[1] == "dupclose":
        dup_close(int(sys.argv[2]))
    elif sys.argv[1] == "dupclose-client":
        dup_close_client(int(sys.argv[2]))
    elif sys.argv[1] == "closefrom":
        close_from(int(sys.argv[2]))
    elif sys.argv[1] == "closefrom-client":
        close_from_client(int(sys.argv[2]))
    elif sys.argv[1] == "keepbelow":
        keep_below(int(sys.argv[2]))
    elif sys.argv[1] == "keepbelow-client":
        keep_below_client(int(sys.argv[2]))
    elif sys.argv[1] == "capacity":
        capacity(int(sys.argv[2]))
    elif sys.argv[1] == "capacity-client":
        capacity_client(int(sys.argv[2]))
    elif sys.argv[1] == "pollclose":
        poll_close(int(sys.argv[2]))
    elif sys.argv[1] == "pollclose-client":
        poll_close_client(int(sys.argv[2]))
    elif sys.argv[1] == "shutwake":
        shut_wake(int(sys.argv[2]), *[float(a) for a in sys.argv[3:4]])
    elif sys.argv[1] == "shutwake-client":
        shut_wake_client(int(sys.argv[2]), *[float(a) for a in sys.argv[3:4]])
    elif sys.argv[1] == "shutearly":
        shut_early(int(sys.argv[2]))
    elif sys.argv[1] == "shutearly-client":
        shut_early_client(int(sys.argv[2]))
    elif sys.argv[1] == "adoptwake":
        adopt_wake(int(sys.argv[2]))
    elif sys.argv[1] == "adoptwake-client":
        adopt_wake_client(int(sys.argv[2]))
    elif sys.argv[1] == "uring":
        uring()
    elif sys.argv[1] == "scale-sink":
        scale_sink(int(sys.argv[2]))
    elif sys.argv[1] == "scale":
        scale(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]))
    else:
        sys.exit(client([int(p) for p in sys.argv[2].split(",")], int(sys.argv[3])))
