#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
"""rb2-kv's memcached text protocol against stock memcached, word for word.

  memcached_conformance.py REFERENCE_PORT RB2_KV_PORT

Sends the same commands, in the same order, to stock memcached and to
rb2-kv's TCP front (both on 127.0.0.1), each on a fresh connection per
scenario, and compares every answer byte for byte: storage (set, add,
replace, append, prepend, cas), retrieval (get, gets, gat, gats), incr and
decr, touch, delete, flush_all, verbosity, version's form, and errors.
Prints each difference; exits 1 on any, 0 with a count line.
"""
import re
import socket
import sys
import time
from concurrent.futures import ThreadPoolExecutor

# Each scenario: a list of (request bytes, seconds to sleep before it).
# The keys are prefixed per run, so the two servers' earlier state does
# not matter.
SCENARIOS = {
    "storage": [
        b"set {k}a 5 0 3\r\nabc\r\n", b"get {k}a\r\n", b"add {k}a 0 0 1\r\nx\r\n",
        b"add {k}b 7 0 2\r\nhi\r\n", b"replace {k}c 0 0 1\r\nx\r\n",
        b"replace {k}b 9 0 3\r\nbye\r\n", b"get {k}a {k}b {k}none\r\n",
        b"set {k}n 0 0 1 noreply\r\n1\r\n", b"get {k}n\r\n",
        b"set {k}e 0 0 0\r\n\r\n", b"get {k}e\r\n",
    ],
    "append": [
        b"append {k}a 0 0 1\r\nx\r\n", b"prepend {k}a 0 0 1\r\nx\r\n",
        b"set {k}a 3 0 2\r\nbc\r\n", b"append {k}a 9 0 2\r\nde\r\n",
        b"prepend {k}a 9 0 1\r\na\r\n", b"get {k}a\r\n",
        b"append {k}a 0 0 1 noreply\r\nf\r\n", b"get {k}a\r\n",
    ],
    "cas": [
        b"cas {k}a 0 0 1 1\r\nx\r\n", b"set {k}a 0 0 1\r\nx\r\n",
        b"cas {k}a 0 0 1 999999999\r\ny\r\n", b"get {k}a\r\n",
        b"cas {k}a 0 0 1 CAS({k}a)\r\nz\r\n", b"get {k}a\r\n",
        b"cas {k}a 0 0 1 CAS({k}a) noreply\r\nw\r\n", b"get {k}a\r\n",
        b"cas {k}a 0 0 1\r\nx\r\n",
    ],
    "incr": [
        b"incr {k}a 1\r\n", b"set {k}a 0 0 2\r\n10\r\n", b"incr {k}a 5\r\n",
        b"decr {k}a 6\r\n", b"get {k}a\r\n", b"decr {k}a 100\r\n",
        b"incr {k}a 18446744073709551615\r\n", b"incr {k}a 2\r\n",
        b"set {k}b 0 0 3\r\nabc\r\n", b"incr {k}b 1\r\n", b"incr {k}a x\r\n",
        b"incr {k}a -1\r\n", b"incr {k}a 1 noreply\r\n", b"get {k}a\r\n",
        b"set {k}c 0 0 2\r\n99\r\n", b"incr {k}c 1\r\n", b"get {k}c\r\n",
    ],
    "expiry": [
        b"set {k}a 0 1 1\r\nx\r\n", b"get {k}a\r\n", (b"get {k}a\r\n", 2.1),
        b"set {k}b 0 -1 1\r\nx\r\n", b"get {k}b\r\n",
        b"set {k}c 0 0 1\r\nx\r\n", b"touch {k}c 1\r\n", b"touch {k}none 1\r\n",
        (b"get {k}c\r\n", 2.1), b"set {k}d 0 1 1\r\nx\r\n", b"gat 0 {k}d {k}none\r\n",
        (b"gat 100 {k}d\r\n", 2.1), b"set {k}e 0 0 1\r\ny\r\n", b"add {k}a 0 0 1\r\nn\r\n",
        b"get {k}a\r\n", b"replace {k}b 0 0 1\r\nn\r\n",
    ],
    "gats": [
        b"set {k}a 4 0 1\r\nx\r\n", b"gats 0 {k}a\r\n", b"gat 0\r\n", b"gat\r\n",
    ],
    "delete": [
        b"delete {k}a\r\n", b"set {k}a 0 0 1\r\nx\r\n", b"delete {k}a\r\n",
        b"get {k}a\r\n", b"delete {k}a noreply\r\n", b"delete {k}a 0\r\n",
        b"delete {k}a 5\r\n",
    ],
    "misc": [
        b"verbosity 1\r\n", b"verbosity 0 noreply\r\n", b"verbosity\r\n",
        b"frobnicate\r\n", b"\r\n", b"get\r\n", b"set {k}a 0 0\r\n",
        b"touch {k}a\r\n", b"set {k}a x 0 1\r\n",
    ],
    "flush": [
        b"set {k}a 0 0 1\r\nx\r\n", b"flush_all 1\r\n", b"get {k}a\r\n",
        (b"get {k}a\r\n", 2.1), b"set {k}b 0 0 1\r\ny\r\n", b"get {k}b\r\n",
        b"flush_all noreply\r\n", b"get {k}b\r\n", b"flush_all\r\n",
    ],
}

VERSION = re.compile(rb"^VERSION \S+\r\n$")


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.s.settimeout(0.3)
        self.cas = {}

    def talk(self, req):
        # CAS(key): the cas unique this connection last read for key.
        req = re.sub(rb"CAS\(([^)]*)\)", lambda m: self.cas.get(m.group(1), b"0"), req)
        self.s.sendall(req)
        got = b""
        # An answer comes within milliseconds on loopback; "noreply" gets
        # none, which half a second of silence shows.
        deadline = time.time() + (0.5 if b"noreply" in req else 2)
        while time.time() < deadline:
            try:
                c = self.s.recv(65536)
            except socket.timeout:
                if got:
                    break
                continue
            if not c:
                break
            got += c
            if got.endswith(b"\r\n") and (not got.startswith(b"VALUE") or
                                          got.endswith(b"END\r\n")):
                break
        for m in re.finditer(rb"VALUE (\S+) \d+ \d+ (\d+)\r\n", got):
            self.cas[m.group(1)] = m.group(2)
        return got


def run(port, name, prefix):
    c = Conn(port)
    out = []
    for step in SCENARIOS[name]:
        req, wait = step if isinstance(step, tuple) else (step, 0)
        if wait:
            time.sleep(wait)
        req = req.replace(b"{k}", prefix + name.encode() + b"_")
        got = c.talk(req)
        # cas uniques differ between servers: compare their presence only.
        got = re.sub(rb"(VALUE \S+ \d+ \d+) \d+\r\n", rb"\1 <cas>\r\n", got)
        out.append((req, got))
    return out


def main():
    ref, rb2 = int(sys.argv[1]), int(sys.argv[2])
    prefix = b"c%d_" % (int(time.time() * 1000) % 1000000)
    checked = diffs = 0
    # Both servers at once, each its scenarios in order: their expiry waits
    # and silences overlap (the keys are the run's own on each server).
    with ThreadPoolExecutor(2) as ex:
        runs = [ex.submit(lambda p: {n: run(p, n, prefix) for n in SCENARIOS}, port)
                for port in (ref, rb2)]
        a_all, b_all = runs[0].result(), runs[1].result()
    for name in SCENARIOS:
        a, b = a_all[name], b_all[name]
        for (req, want), (_, got) in zip(a, b):
            checked += 1
            if want != got:
                diffs += 1
                print(f"DIFF {name}: {req!r}\n  memcached: {want!r}\n  rb2-kv:    {got!r}")
    for port in (ref, rb2):
        v = Conn(port).talk(b"version\r\n")
        checked += 1
        if not VERSION.match(v):
            diffs += 1
            print(f"DIFF version on port {port}: {v!r}")
    print(f"{checked - diffs} passed, {diffs} failed")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
