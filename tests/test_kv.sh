#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
#
# rb2-kv end to end:
#   - every YCSB workload (A, B, C, D, F) and distribution, over rb2
#     connections (each ring design) and over TCP, many connections with
#     requests outstanding: every value read checked (rb2-kv exits 1 on any
#     wrong value or failed operation);
#   - the TCP front with stock memcached clients: memcslap's load, memccp
#     and memccat byte for byte; memcached's whole text protocol answered
#     as a stock memcached answers it (memcached_conformance.py); malformed
#     requests of both protocols get their errors; a client that never reads does not stall another;
#     telemetry;
#   - through rb2-raasd (needs hugepages: skipped without, and said so): a
#     server and two YCSB clients as the service's secondaries, one killed
#     mid-run, after which the server still serves another (two lcores).
#
#   test_kv.sh BUILD_DIR
build=$1
kv=$build/apps/rb2-kv/rb2-kv
pfx=rb2t-kv-$$
. "$(dirname "$0")/case_study_lib.sh"

# A free TCP port on loopback.
port=$(free_port)

# 1. Every workload, in one process (server on lcore 1, client on 0), over
#    the ring designs and TCP, each checking every value.
# L5's own ring where the build has the baselines (meson -Dbaselines).
designs=rb2,l5,l5-chan,farm,socksdirect,tcp
[ "${RB2_BASELINES:-1}" = 1 ] || designs=rb2,l5-chan,farm,socksdirect,tcp
for w in a b c d f; do
	out=$tmp/bench-$w
	if $kv $(eal 0-1 b$w) -- bench --workload $w --records 2000 --operations 20000 \
		--rounds 1 --conns 8 --depth 4 --designs $designs >"$out" 2>&1 &&
		python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["designs"]) == int(sys.argv[2])' \
			<(sed -n '/^{/,$p' "$out") "$(echo $designs | tr ',' '\n' | wc -l)"; then
		ok "workload $w: 8 connections x 4 outstanding, every value checked, 5 ring designs (L5's own ring among them) and TCP"
	else
		fail "workload $w"; cat "$out"
	fi
done
for d in uniform latest; do
	if $kv $(eal 0-1 bd$d) -- bench --workload a --distribution $d --records 1000 \
		--operations 20000 --rounds 1 --designs rb2,tcp >"$tmp/dist-$d" 2>&1; then
		ok "workload a with the $d distribution"
	else
		fail "distribution $d"; cat "$tmp/dist-$d"
	fi
done

# 2. The TCP front, the server as a primary with no service.
( trap - EXIT; exec $kv $(eal 1 srv) -m 512 -- server --no-rb2 --tcp 127.0.0.1:$port --records 6000 \
	--key-max 250 --value-max 10000 >"$tmp/server" 2>&1 ) &
srv=$!; pids+=("$srv")
for _ in $(seq 100); do grep -q "serving" "$tmp/server" && break; sleep 0.05; done
if ! grep -q "serving" "$tmp/server"; then
	echo "rb2-kv server did not start:"; cat "$tmp/server"; exit 1
fi
mc=127.0.0.1:$port

if command -v memcslap >/dev/null; then
	if timeout 60 memcslap --servers=$mc --test=get --concurrency=2 --execute-number=2000 \
		>"$tmp/slap" 2>&1 && grep -q "Time to get" "$tmp/slap" &&
		! grep -qi "error\|fail" "$tmp/slap"; then
		ok "memcslap --test=get: 2000 keys set, then 4000 gets by 2 threads, no errors"
	else
		fail "memcslap"; cat "$tmp/slap"
	fi
	head -c 9000 /dev/urandom >"$tmp/blob"
	( cd "$tmp" && timeout 20 memccp --servers=$mc blob ) &&
		timeout 20 memccat --servers=$mc blob >"$tmp/blob.back" 2>"$tmp/memccat.err"
	# memccat ends what it prints with a newline of its own.
	if [ "$(stat -c %s "$tmp/blob.back")" = 9001 ] && cmp -s "$tmp/blob" <(head -c 9000 "$tmp/blob.back")
	then ok "memccp then memccat: 9000 bytes back byte for byte"
	else fail "memccp/memccat"; cat "$tmp/memccat.err"; fi
else
	echo "note: memcslap not found (Debian's libmemcached-tools): stock clients not run"
fi

if python3 - "$port" <<'PY'
import socket, struct, sys, time
port = int(sys.argv[1])
def conn():
    s = socket.create_connection(("127.0.0.1", port)); s.settimeout(5); return s
def talk(s, data, want):
    s.sendall(data); got = b""
    while len(got) < len(want):
        chunk = s.recv(65536)
        if not chunk: break
        got += chunk
    assert got == want, (data[:60], got, want)
s = conn()
talk(s, b"frobnicate\r\n", b"ERROR\r\n")
talk(s, b"set k 0 0 3\r\nabc\r\n", b"STORED\r\n")
talk(s, b"get k nokey\r\n", b"VALUE k 0 3\r\nabc\r\nEND\r\n")
talk(s, b"set k 0 0 x\r\nabc\r\n", b"CLIENT_ERROR bad command line format\r\nERROR\r\n")
talk(s, b"set t 0 30 1\r\nx\r\n", b"STORED\r\n")
talk(s, b"set big 0 0 10001\r\n" + b"x" * 10001 + b"\r\n",
     b"SERVER_ERROR object too large for cache\r\n")
talk(s, b"get " + b"k" * 251 + b"\r\n", b"CLIENT_ERROR bad command line format\r\n")
s.sendall(b"set k 0 0 3\r\nabcdef\r\n")       # a data block without its end
assert s.recv(100) == b"CLIENT_ERROR bad data chunk\r\n" and s.recv(100) == b""
s = conn(); s.sendall(b"a" * 3000)            # a line with no end
assert s.recv(100) == b"CLIENT_ERROR line too long\r\n" and s.recv(100) == b""
# The binary protocol on the same port: a GET, an unknown op, a length that lies.
s = conn()
hdr = lambda op, k, vlen, tag: struct.pack("<BBHI", op, len(k), vlen, tag) + k
talk(s, hdr(0xb2, b"bk", 2, 1) + b"hi", struct.pack("<BBHI", 0, 0xb0, 0, 1))
talk(s, hdr(0xb1, b"bk", 0, 2), struct.pack("<BBHI", 0, 0xb0, 2, 2) + b"hi")
talk(s, hdr(0xb1, b"none", 0, 3), struct.pack("<BBHI", 1, 0xb0, 0, 3))
talk(s, hdr(0x99, b"bk", 0, 4), struct.pack("<BBHI", 4, 0xb0, 0, 4))
# A slow client: asks for a lot and reads nothing; another is served meanwhile.
slow = conn()
slow.sendall(b"get bk\r\n" * 1 + b"get k\r\n" * 200000)
t0 = time.time()
fast = conn()
for i in range(200):
    talk(fast, b"get k\r\n", b"VALUE k 0 3\r\nabc\r\nEND\r\n")
assert time.time() - t0 < 5, "the fast client waited"
got = 0
slow.settimeout(10)
while got < 200001 * 23:
    c = slow.recv(1 << 20)
    assert c, "the slow client's answers were cut"
    got += len(c)
assert got == 200001 * 23, got
print("protocol checks passed")
PY
then ok "TCP: malformed text and binary requests get their errors; a client that never reads does not stall another"
else fail "TCP protocol checks"; fi

# memcached's text protocol, word for word against a stock memcached
# (Debian's, which the quickstart installs): the same commands to both.
if command -v memcached >/dev/null; then
	mport=$(free_port)
	user=(); [ "$(id -u)" = 0 ] && user=(-u root)
	memcached "${user[@]}" -l 127.0.0.1 -p "$mport" -U 0 -t 1 >"$tmp/memcached" 2>&1 &
	pids+=("$!")
	for _ in $(seq 100); do python3 -c "import socket,sys; socket.create_connection(('127.0.0.1',$mport))" 2>/dev/null && break; sleep 0.05; done
	if python3 "$(dirname "$0")/memcached_conformance.py" "$mport" "$port" >"$tmp/conf" 2>&1
	then ok "memcached's text protocol: $(tail -1 "$tmp/conf") against stock memcached, byte for byte"
	else fail "memcached conformance"; cat "$tmp/conf"; fi
else
	fail "memcached not found (Debian's memcached; usertools/rb2-quickstart.sh installs it)"
fi

# The YCSB client over TCP, and telemetry.
if $kv $(eal 0 cli) -- client --tcp $mc --workload f --records 2000 --operations 20000 \
	--conns 4 --depth 8 --quiet >"$tmp/ycsb-tcp" 2>&1 && grep -q "^\[READ-MODIFY-WRITE\], Return=OK" "$tmp/ycsb-tcp"; then
	ok "YCSB workload f over TCP: every value checked"
else
	fail "YCSB over TCP"; cat "$tmp/ycsb-tcp"
fi
tel=$(command -v dpdk-telemetry.py || true)
if [ -n "$tel" ]; then
	echo /rb2/kv/stats | python3 "$tel" -f "${pfx}srv" >"$tmp/tel" 2>&1
	if python3 -c '
import json, re, sys
d = [json.loads(m) for m in re.findall(r"^\{.*\}$", open(sys.argv[1]).read(), re.M)]
st = next(x["/rb2/kv/stats"] for x in d if "/rb2/kv/stats" in x)
print("telemetry:", st)
assert st["keys"] >= 2000 and st["gets"] > 0 and st["bad_requests"] > 0' "$tmp/tel"; then
		ok "telemetry: /rb2/kv/stats"
	else fail "telemetry"; cat "$tmp/tel"; fi
fi
kill -INT "$srv"; wait "$srv"
grep -q "stopped" "$tmp/server" && ok "the server stops on SIGINT and reports" || fail "server stop"

# 3. Through the host service.
if ! have_hugepages; then
	echo "SKIP (part 3 only): DPDK multi-process needs hugepages: as root, usertools/rb2-hugepages.sh 1024"
	[ $fails -eq 0 ]; exit
fi
start_raasd
# The server on two lcores: rb2 ports 7000 (lcore 0) and 7001 (lcore 1).
( trap - EXIT; exec $kv $(sec 0-1) -- server --port 7000 --records 50000 >"$tmp/rserver" 2>&1 ) &
rsrv=$!; pids+=("$rsrv")
for _ in $(seq 200); do grep -q "serving" "$tmp/rserver" && break; sleep 0.05; done
( trap - EXIT; exec $kv $(sec 1) -- client --port 7000 --workload a --records 5000 \
	--operations 100000000 --key-space 1 --conns 4 --depth 4 >"$tmp/victim" 2>&1 ) &
victim=$!; pids+=("$victim")
for _ in $(seq 200); do grep -q "load phase" "$tmp/victim" && break; sleep 0.05; done
sleep 0.5
kill -9 "$victim"
if $kv $(sec 0-1) -- client --port 7000 --ports 2 --workload a --records 5000 --operations 10000 \
	--key-space 2 --conns 8 --depth 2 --quiet >"$tmp/survivor" 2>&1 &&
	grep -q "^\[UPDATE\], Return=OK" "$tmp/survivor"; then
	ok "through rb2-raasd: a client killed mid-run, another then runs workload a (2 lcores x 8 connections over both server ports), every value checked"
else
	fail "through rb2-raasd"; cat "$tmp/victim" "$tmp/survivor" "$tmp/rserver" "$tmp/raasd"
fi
if kill -0 "$rsrv" 2>/dev/null; then
	ok "the server outlived its killed client"
	# Stopped, it says what each of its lcores served: both did.
	kill -INT "$rsrv"
	wait_for "$tmp/rserver" "lcore 1 served"
	if python3 - "$tmp/rserver" <<'PY'
import re, sys
served = {int(l): int(n) for l, n in re.findall(r"lcore (\d+) served (\d+) requests", open(sys.argv[1]).read())}
sys.exit(0 if sorted(served) == [0, 1] and min(served.values()) > 0 else 1)
PY
	then ok "a server on two lcores: both served ($(grep -o 'lcore . served [0-9]*' "$tmp/rserver" | tr '\n' ' '))"
	else fail "a server on two lcores"; cat "$tmp/rserver"; fi
else
	fail "the server died"
fi

[ $fails -eq 0 ]
