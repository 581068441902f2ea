#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
#
# rb2-run between two hosts, here two network namespaces joined by a veth
# pair (doc/guides/apps/rb2-run.md, "Other hosts"): a connect to the other
# host asks that host's rb2-sockd whether a program under rb2-run listens
# there, and the stats lines of both ends say what it learnt:
#
#   - the other host runs no rb2-sockd: the client's line says so, and the
#     next connect there does not ask again (the service's hosts_asked);
#   - it runs one, with an rb2-run listener at that port, or without one;
#   - a question that is not one is refused and logged, and the service
#     answers the next; a flood of idle connections from the other host is
#     cut at 256 open at once, and the service goes on answering and pairing;
#   - the server's line says its client is on another host;
#   - questions share one link between the services, and one asked on a
#     link the other side closes is asked again on a new one;
#   - a pair on one host through its own address that is not loopback goes
#     over rb2 (such a connect waits for the service's GO; to loopback it
#     does not).
# Every transfer between the hosts is whole, over kernel TCP.
#
#   test_rb2run_hosts.sh BUILD_DIR
# Needs root (network namespaces); skips (77) without.
set -uo pipefail

build=$(cd "$1" && pwd)
run=$build/apps/rb2-run/rb2-run
sockd=$build/apps/rb2-sockd/rb2-sockd
pp=$build/tests/rb2run_pingpong
tmp=$(mktemp -d)
a=rb2hA$$ b=rb2hB$$
ipa=10.231.77.1 ipb=10.231.77.2
fails=0

cleanup() {
	for ns in "$a" "$b"; do
		RB2_SOCKD_PATH=$tmp/$ns.sock ip netns exec "$ns" "$sockd" --stop >/dev/null 2>&1
		ip netns pids "$ns" 2>/dev/null | xargs -r kill 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
	[ -n "${KEEP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

if [ "$(id -u)" != 0 ]; then
	echo "SKIP: network namespaces need root"; exit 77
fi
if ! ip netns add "$a" 2>"$tmp/ns.err" || ! ip netns add "$b" 2>>"$tmp/ns.err" ||
	! ip link add "v$a" netns "$a" type veth peer name "v$b" netns "$b" 2>>"$tmp/ns.err"; then
	echo "SKIP: cannot make two network namespaces joined by veth: $(head -1 "$tmp/ns.err")"
	exit 77
fi
ip -n "$a" addr add "$ipa/24" dev "v$a"
ip -n "$b" addr add "$ipb/24" dev "v$b"
for ns in "$a" "$b"; do
	ip -n "$ns" link set lo up
	ip -n "$ns" link set "v$ns" up
done

# inns NS CMD...: CMD in namespace NS, with NS's own rb2-sockd (root's, so it
# answers other hosts at TCP 7472).
inns() {
	local ns=$1; shift
	RB2_SOCKD_PATH=$tmp/$ns.sock RB2_RUN_STATS=1 ip netns exec "$ns" "$@"
}

# once NAME SERVER_PREFIX CLIENT_PREFIX: one 64 B ping-pong of 200 round
# trips, the server in B at $ipb, the client in A; their stderr kept.
once() {
	local name=$1 sp=$2 cp=$3 port=$((20000 + RANDOM % 20000))
	# shellcheck disable=SC2086 # a prefix of words, or none
	inns "$b" timeout 30 $sp "$pp" server "$port" "$ipb" >"$tmp/$name.srv" 2>"$tmp/$name.srv.err" &
	local spid=$!
	for _ in $(seq 400); do grep -q listening "$tmp/$name.srv" 2>/dev/null && break; sleep 0.05; done
	# shellcheck disable=SC2086
	inns "$a" timeout 30 $cp "$pp" client "$port" 64 200 "$ipb" >"$tmp/$name.cli" \
		2>"$tmp/$name.cli.err"
	local rc=$?
	wait "$spid" || rc=1
	grep -q '"p50_ns"' "$tmp/$name.cli" || rc=1
	return $rc
}

# said NAME SIDE TEXT: the stats line of SIDE (cli, srv) counts a kernel TCP
# connection for TEXT.
said() {
	grep -q "1 kernel TCP: .*$3" "$tmp/$1.$2.err"
}

stats() {
	inns "$1" "$sockd" --stats 2>/dev/null | python3 -c "import json,sys; print(json.load(sys.stdin)['$2'])"
}

# B runs no service yet: A's asks once, then knows for a while.
if once nosvc "" "$run" && said nosvc cli "another host, which runs no rb2-sockd (port 7472: Connection refused)" &&
	once nosvc2 "" "$run" && said nosvc2 cli "another host, which runs no rb2-sockd (port 7472, asked lately)" &&
	[ "$(stats "$a" hosts_asked)" = 1 ]; then
	ok "a host without rb2-sockd: said so, asked once for two connects"
else
	fail "a host without rb2-sockd"; tail -n 3 "$tmp"/nosvc*.err
fi
# The cache is A's: stop its service, so that the next cases ask afresh.
inns "$a" "$sockd" --stop >/dev/null 2>&1
sleep 0.2

# B's server under rb2-run (it starts B's rb2-sockd): A's service asks B's.
if once listener "$run" "$run" &&
	said listener cli "another host: rb2-run listens there; kernel TCP: no RDMA device here" &&
	said listener srv "the client is on another host"; then
	ok "an rb2-run listener on another host: both ends' lines say where, kernel TCP, whole"
else
	fail "an rb2-run listener on another host"; tail -n 3 "$tmp"/listener.*.err
fi

# B's service runs, and its program is not under rb2-run.
if once plainsrv "" "$run" &&
	said plainsrv cli "another host: no program under rb2-run listens there"; then
	ok "a plain listener on a host with rb2-sockd: said so"
else
	fail "a plain listener on a host with rb2-sockd"; tail -n 3 "$tmp"/plainsrv.*.err
fi
answered=$(stats "$b" hosts_answered)
[ "$answered" = 2 ] && ok "B's service answered 2 questions" ||
	fail "B's service answered $answered questions, not 2"
# Both over one link between the services, still open for the next.
links_a=$(inns "$a" ss -Htn state established "( dport = :7472 )" | wc -l)
links_b=$(inns "$b" ss -Htn state established "( sport = :7472 )" | wc -l)
[ "$links_a" = 1 ] && [ "$links_b" = 1 ] &&
	ok "the 2 questions went over 1 link between the services, kept open" ||
	fail "links between the services: A has $links_a, B has $links_b, not 1 and 1"

# Not a question: refused and logged; the next one is answered.
bad0=$(stats "$b" bad)
inns "$a" python3 -c "
import socket
s = socket.create_connection(('$ipb', 7472), timeout=5)
s.sendall(b'GET / HTTP/1.0\r\n\r\n')
print(repr(s.recv(100)))" >"$tmp/bad.out" 2>&1
if [ "$(cat "$tmp/bad.out")" = "b''" ] && [ "$(stats "$b" bad)" = $((bad0 + 1)) ] &&
	grep -q "refused a request from $ipa: not an rb2-sockd question" "$tmp/$b.sock.log" &&
	once after "$run" "$run" && said after cli "rb2-run listens there"; then
	ok "a question that is none: closed, counted, logged; the next is answered"
else
	fail "a question that is none"; cat "$tmp/bad.out"; tail -n 3 "$tmp/$b.sock.log"
fi

# A flood of idle connections to B's port 7472: past 256 open at once they
# are told busy and closed at once, and logged; meanwhile (the others are closed after
# 2 s) B's programs still pair on their host, and once the flood ends a
# question is answered again. A's service goes first, and its link with it,
# so that the flood's connections are the only ones open.
inns "$a" "$sockd" --stop >/dev/null 2>&1
sleep 0.2
inns "$a" python3 -c "
import os, socket, time
socks = [socket.create_connection(('$ipb', 7472), timeout=5) for _ in range(300)]
time.sleep(0.3)
busy = 0
for s in socks:
    s.setblocking(False)
    try:
        busy += s.recv(100) == b'rb2-sockd 2 busy\\n'
    except BlockingIOError:
        pass
print('connected; busy:', busy, flush=True)
for _ in range(1200):
    if os.path.exists('$tmp/flood.stop'):
        break
    time.sleep(0.05)" >"$tmp/flood.out" 2>&1 &
fpid=$!
for _ in $(seq 100); do [ -s "$tmp/flood.out" ] && break; sleep 0.05; done
port=$((20000 + RANDOM % 20000))
inns "$b" timeout 30 "$run" "$pp" server "$port" 127.0.0.1 >"$tmp/local.srv" 2>"$tmp/local.srv.err" &
for _ in $(seq 400); do grep -q listening "$tmp/local.srv" 2>/dev/null && break; sleep 0.05; done
inns "$b" timeout 30 "$run" "$pp" client "$port" 64 200 127.0.0.1 >"$tmp/local.cli" 2>"$tmp/local.cli.err"
lrc=$?
touch "$tmp/flood.stop"
wait "$fpid"
sleep 0.3                             # B's service sees the flood's ends
if grep -q "connected; busy: 44$" "$tmp/flood.out" && [ $lrc = 0 ] &&
	grep -q " 1 connections over rb2" "$tmp/local.cli.err" &&
	grep -q "more than 256 links from other hosts open at once" "$tmp/$b.sock.log" &&
	once flooded "$run" "$run" && said flooded cli "rb2-run listens there"; then
	ok "300 idle connections from another host: the 44 past 256 told busy at once, logged; a local pair went over rb2 meanwhile; a question is answered after"
else
	fail "a flood from another host"; cat "$tmp/flood.out"
	tail -n 3 "$tmp/$b.sock.log" "$tmp"/local.*.err "$tmp"/flooded.*.err
fi

# A pair on one host through the host's own address that is not loopback:
# the client waits for the service's GO before its SYN, as to another host
# (only a connect to loopback sends its CONNECTED right behind its CONNECT,
# RB2_SOCKD_F_PIPE, which the pair above and test_rb2run.sh take).
port=$((20000 + RANDOM % 20000))
inns "$b" timeout 30 "$run" "$pp" server "$port" "$ipb" >"$tmp/own.srv" 2>"$tmp/own.srv.err" &
opid=$!
for _ in $(seq 400); do grep -q listening "$tmp/own.srv" 2>/dev/null && break; sleep 0.05; done
inns "$b" timeout 30 "$run" "$pp" client "$port" 64 200 "$ipb" >"$tmp/own.cli" 2>"$tmp/own.cli.err"
orc=$?
wait "$opid"
if [ $orc = 0 ] && grep -q " 1 connections over rb2" "$tmp/own.cli.err" &&
	grep -q " 1 connections over rb2" "$tmp/own.srv.err"; then
	ok "a pair through the host's own address, not loopback (not pipelined): over rb2"
else
	fail "a pair through the host's own address"; tail -n 3 "$tmp"/own.*.err
fi

# A link the other side closes with a question on it (it went idle there,
# or its service restarted): the question is asked again on a new link.
# B's service is a stand-in here: it answers "no" to the first question on
# its first connection, closes it at the second, and answers on the next.
inns "$b" "$sockd" --stop >/dev/null 2>&1
sleep 0.2
inns "$b" python3 -c "
import socket
ls = socket.create_server(('$ipb', 7472))
print('ready', flush=True)
c, _ = ls.accept()
f = c.makefile('rb')
log = [f.readline()]
c.sendall(b'rb2-sockd 2 no\n')
log.append(f.readline())
c.close()
c, _ = ls.accept()
log.append(c.makefile('rb').readline())
c.sendall(b'rb2-sockd 2 no\n')
print('questions:', sum(l.startswith(b'rb2-sockd 2 listener') for l in log), flush=True)
c.recv(1)" >"$tmp/closer.out" 2>&1 &
cpid=$!
for _ in $(seq 100); do [ -s "$tmp/closer.out" ] && break; sleep 0.05; done
if once closer1 "" "$run" && said closer1 cli "no program under rb2-run listens there" &&
	once closer2 "" "$run" && said closer2 cli "no program under rb2-run listens there" &&
	grep -q "questions: 3" "$tmp/closer.out"; then
	ok "a link closed under a question: asked again on a new link, answered"
else
	fail "a link closed under a question"; cat "$tmp/closer.out"
	tail -n 3 "$tmp"/closer*.cli.err
fi
kill "$cpid" 2>/dev/null
wait "$cpid" 2>/dev/null

[ $fails = 0 ] && echo "all passed" || echo "$fails failed"
exit $((fails > 0))
