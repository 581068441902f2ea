#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
"""A hostile client of rb2-sockd for tests/test_rb2run_isolation.sh: it
sends the service every kind of bad request and prints, for each, what came
back. Each must be refused (a PLAIN reply that says so, or the connection
closed); none may get an arena.

  rb2run_hostile.py SOCKET_PATH VICTIM_PORT

VICTIM_PORT: a port where a program under rb2-run listens, which this
process tries to get into without a connection of its own.
"""
import os
import socket
import struct
import sys
import time

MAGIC, VERSION = 0x72623273, 3
LISTEN, CONNECT, CONNECTED, ACCEPTED, STATS = 1, 2, 3, 4, 5
GO, PLAIN, PAIR, OK, REMOTE = 100, 101, 102, 103, 104
# struct rb2_sockd_msg: magic, version, op, flags, 4 bytes of padding (the
# address is 8-aligned), addr (sockaddr_storage), name, why
WHY_AT = 4 + 2 + 2 + 4 + 4 + 128 + 24
SIZE = WHY_AT + 160


def msg(op, addr=b"", magic=MAGIC, version=VERSION):
    return (struct.pack("<IHHI", magic, version, op, 0) + bytes(4) + addr.ljust(128, b"\0") +
            bytes(24 + 160))


def inet(port):
    # struct sockaddr_in: family (host order), port and address (network order)
    return struct.pack("<H", socket.AF_INET) + struct.pack(">H", port) + socket.inet_aton("127.0.0.1")


def ask(path, data, fds=()):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(5)
    s.connect(path)
    try:
        if fds:
            socket.send_fds(s, [data], list(fds))
        elif data is not None:
            s.send(data)
        got, rfds, _, _ = socket.recv_fds(s, SIZE, 4)
    except (ConnectionResetError, BrokenPipeError):
        return "closed", []
    except socket.timeout:
        return "no answer", []
    finally:
        s.close()
    if not got:
        return "closed", rfds
    if len(got) != SIZE:
        return "a reply of %d bytes" % len(got), rfds
    op = struct.unpack_from("<H", got, 6)[0]
    why = got[WHY_AT:].split(b"\0")[0].decode(errors="replace")
    name = {GO: "GO", PLAIN: "PLAIN", PAIR: "PAIR", OK: "OK", REMOTE: "REMOTE"}.get(op, str(op))
    return "%s%s" % (name, ": " + why if why else ""), rfds


def main():
    path, victim = sys.argv[1], int(sys.argv[2])
    r, w = os.pipe()
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    unbound = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    stray = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    stray.bind(("127.0.0.1", 0))
    lone = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lone.bind(("127.0.0.1", 0))
    lone.listen(1)
    # A real connection of its own to the victim, plain (this process is
    # not under rb2-run): it may pretend it was paired.
    mine = socket.create_connection(("127.0.0.1", victim))
    cases = [
        ("garbage bytes", b"\x01\x02garbage", ()),
        ("a short message", msg(LISTEN)[:40], ()),
        ("a wrong magic", msg(LISTEN, magic=0xdeadbeef), ()),
        ("a wrong version", msg(LISTEN, version=99), ()),
        ("an unknown request", msg(999), ()),
        ("a reply sent as a request", msg(PAIR), ()),
        ("LISTEN without a socket", msg(LISTEN), ()),
        ("LISTEN with a pipe", msg(LISTEN), (r,)),
        ("LISTEN with a UDP socket", msg(LISTEN), (udp.fileno(),)),
        ("LISTEN with a socket that does not listen", msg(LISTEN), (stray.fileno(),)),
        ("CONNECT with an unbound socket", msg(CONNECT, inet(victim)), (unbound.fileno(),)),
        ("CONNECT with no address", msg(CONNECT), (stray.fileno(),)),
        ("CONNECTED without CONNECT", msg(CONNECTED), (mine.fileno(),)),
        ("ACCEPTED with a socket never accepted", msg(ACCEPTED), (stray.fileno(),)),
        ("ACCEPTED with its own connection to the victim", msg(ACCEPTED), (mine.fileno(),)),
        ("ACCEPTED with a listening socket", msg(ACCEPTED), (lone.fileno(),)),
        ("three fds at once", msg(LISTEN), (lone.fileno(), r, w)),
        ("nothing at all", None, ()),
    ]
    arenas = 0
    for name, data, fds in cases:
        t0 = time.monotonic()
        what, rfds = ask(path, data, fds)
        arenas += len(rfds)
        for f in rfds:
            os.close(f)
        print("%-48s -> %s%s" % (name, what, " (an fd came back!)" if rfds else ""), flush=True)
    print("arenas handed out: %d" % arenas)
    return 0 if arenas == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
