#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
#
# rb2-run between users, and against a hostile process
# (doc/guides/apps/rb2-run.md, "Who may connect"). Needs root, to be two
# users: root and nobody.
#
#   test_rb2run_isolation.sh BUILD_DIR
#
#   - root's service serves another user: a client of nobody's under rb2-run
#     talks to root's server over rb2, whole, as it could over TCP;
#   - nobody cannot reach the memory of a connection between root's
#     programs: not through /proc (the programs' fds and mappings, the
#     service's fds), and no arena is a file anyone could open;
#   - a hostile process of nobody's sends the service 18 kinds of bad
#     request: each is refused and logged with its pid and uid, none gets an
#     arena, and the others go on;
#   - nobody's 1024 open requests are its cap: the 1025th is refused at once,
#     and root's connections still pair;
#   - io_uring is off for nobody's program too (no_new_privs lets a user
#     other than root set the filter), and it runs.
set -uo pipefail

build=$(cd "$1" && pwd)
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
run=$build/apps/rb2-run/rb2-run
sockd=$build/apps/rb2-sockd/rb2-sockd
peer=$src/tests/rb2run_peer.py
hostile=$src/tests/rb2run_hostile.py

if [ "$(id -u)" != 0 ]; then
	echo "SKIP: two users need root (run as root: the README's test command does)"
	exit 77
fi
if ! id nobody >/dev/null 2>&1 || ! command -v setpriv >/dev/null; then
	echo "FAIL: needs the user nobody and setpriv (util-linux)"
	exit 1
fi
tmp=$(mktemp -d)
chmod 755 "$tmp"                 # nobody reaches the service's socket
export RB2_SOCKD_PATH=$tmp/sockd.sock
export RB2_RUN_STATS=1
fails=0
trap '"$sockd" --stop >/dev/null 2>&1; kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }
# nobody runs copies: the source and build trees may sit where nobody
# cannot reach (a clone under a 0700 directory). rb2-run and the library
# need nothing else of the build.
mkdir "$tmp/nobody"
cp "$run" "$build/lib/preload/librb2_preload.so" "$peer" "$hostile" "$tmp/nobody/"
chmod -R a+rX "$tmp/nobody"
nrun=$tmp/nobody/rb2-run
npeer=$tmp/nobody/rb2run_peer.py
nhostile=$tmp/nobody/rb2run_hostile.py
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups --reset-env \
	env RB2_SOCKD_PATH="$RB2_SOCKD_PATH" RB2_RUN_STATS=1 PATH=/usr/bin:/bin \
	RB2_PRELOAD_LIB="$tmp/nobody/librb2_preload.so" "$@"; }
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
wait_listening() {
	for _ in $(seq 400); do grep -q listening "$1" 2>/dev/null && return 0; sleep 0.05; done
	return 1
}

"$sockd" --daemon || { echo "FAIL: rb2-sockd did not start"; exit 1; }
log=$RB2_SOCKD_PATH.log

# ---- Another user, through root's service ------------------------------------
port=$(free_port)
timeout 60 "$run" python3 "$peer" server "$port" >"$tmp/u.srv" 2>"$tmp/u.srv.err" &
wait_listening "$tmp/u.srv"
as_nobody timeout 60 "$nrun" python3 "$npeer" client "$port" 2000000 >"$tmp/u.cli" 2>"$tmp/u.cli.err"
wait
if grep -q "up: whole, down: whole" "$tmp/u.cli" &&
	grep -q " 1 connections over rb2 (2000073 bytes in, 2000000 out), 0 failed$" "$tmp/u.cli.err" &&
	grep -q " 1 connections over rb2" "$tmp/u.srv.err"; then
	ok "nobody's client to root's server, through root's service: over rb2, whole"
else
	fail "two users"; cat "$tmp/u.cli" "$tmp/u.cli.err" "$tmp/u.srv.err" | head
fi

# ---- A connection of root's, out of nobody's reach ----------------------------
port=$(free_port)
timeout 60 "$run" python3 -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1); print("listening", flush=True)
c, _ = s.accept(); c.sendall(b"secret"); time.sleep(30)' "$port" >"$tmp/h.srv" 2>"$tmp/h.srv.err" &
hsrv=$!
wait_listening "$tmp/h.srv"
timeout 60 "$run" python3 -c '
import socket, sys, time
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
print("got", c.recv(6).decode(), flush=True); time.sleep(30)' "$port" >"$tmp/h.cli" 2>"$tmp/h.cli.err" &
hcli=$!
for _ in $(seq 100); do grep -q "got secret" "$tmp/h.cli" && break; sleep 0.05; done
spid=$(pgrep -n -f "python3 -c.*SO_REUSEADDR")   # the newest: python, not its timeout
dpid=$(pgrep -x rb2-sockd | head -1)
mapped=$(grep -c "memfd:rb2-arena" /proc/"$spid"/maps 2>/dev/null)
reach=$(as_nobody python3 - "$spid" "$dpid" <<'EOF'
import glob, os, sys
tried = ok = 0
for pid in sys.argv[1:]:
    for what in ("fd", "map_files"):
        tried += 1
        try:
            for f in os.listdir("/proc/%s/%s" % (pid, what)):
                try:
                    open("/proc/%s/%s/%s" % (pid, what, f), "rb").close()
                    ok += 1
                except OSError:
                    pass
        except OSError:
            pass
    tried += 1
    try:
        open("/proc/%s/mem" % pid, "rb").read(1)
        ok += 1
    except OSError:
        pass
print("%d of %d ways in" % (ok, tried))
EOF
)
files=$(find /dev/shm /dev/hugepages /tmp -maxdepth 1 -name "*rb2*arena*" 2>/dev/null | wc -l)
if grep -q "got secret" "$tmp/h.cli" && [ "${mapped:-0}" -ge 1 ] && [ "$reach" = "0 of 6 ways in" ] &&
	[ "$files" = 0 ]; then
	ok "root's connection (its arena mapped in the server: ${mapped} mappings): nobody gets in: $reach (the programs' and the service's fds, mappings and memory); no arena is a file"
else
	fail "isolation: secret '$(cat "$tmp/h.cli")', mapped '$mapped', nobody: '$reach', arena files $files"
fi

# ---- A hostile process -----------------------------------------------------------
before=$("$sockd" --stats | python3 -c 'import json,sys; print(json.load(sys.stdin)["bad"])')
as_nobody python3 "$nhostile" "$RB2_SOCKD_PATH" "$port" >"$tmp/hostile.out" 2>&1
hrc=$?
after=$("$sockd" --stats | python3 -c 'import json,sys; print(json.load(sys.stdin)["bad"])')
refused=$(grep -c -- "-> PLAIN: refused: \|-> closed" "$tmp/hostile.out")
logged=$(grep -c "refused a request from pid [0-9]* (uid $(id -u nobody))" "$log")
if [ $hrc = 0 ] && grep -q "arenas handed out: 0" "$tmp/hostile.out" && [ "$refused" -ge 17 ] &&
	[ "$logged" -ge 17 ] && [ $((after - before)) -ge 17 ]; then
	ok "a hostile client: $refused of $(($(wc -l <"$tmp/hostile.out") - 1)) requests refused, $logged logged with its uid, no arena handed out"
else
	fail "hostile client (rc $hrc, $refused refused, $logged logged, bad $before -> $after)"
	cat "$tmp/hostile.out"
fi
kill "$hsrv" "$hcli" 2>/dev/null
wait 2>/dev/null

# ---- One user's cap, and the others go on -----------------------------------------
as_nobody python3 - "$RB2_SOCKD_PATH" >"$tmp/cap.out" 2>&1 <<'EOF' &
import socket, sys, time
conns, shut = [], 0
for i in range(1030):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(sys.argv[1])
    conns.append(s)
time.sleep(0.5)
for s in conns:
    s.setblocking(False)
    try:
        if s.recv(1024) == b"":
            shut += 1
    except BlockingIOError:
        pass
    except OSError:
        shut += 1
print("open", len(conns), "closed at once", shut, flush=True)
time.sleep(3)
EOF
capper=$!
sleep 1
if pair_ok=$(port=$(free_port); timeout 60 "$run" python3 "$peer" server "$port" >"$tmp/c.srv" 2>"$tmp/c.srv.err" &
	wait_listening "$tmp/c.srv"; timeout 60 "$run" python3 "$peer" client "$port" 100000 2>"$tmp/c.cli.err"; wait "$!") &&
	echo "$pair_ok" | grep -q "up: whole, down: whole" && grep -q " 1 connections over rb2" "$tmp/c.cli.err"; then
	pair_msg="root still pairs"
else
	pair_msg="ROOT DID NOT PAIR"
fi
wait "$capper"
if grep -q "open 1030 closed at once 6$" "$tmp/cap.out" && [ "$pair_msg" = "root still pairs" ] &&
	grep -q "uid $(id -u nobody) has 1024 requests and registrations open" "$log"; then
	ok "nobody's 1030 idle requests: 6 over the cap of 1024 refused at once, logged; $pair_msg meanwhile"
else
	fail "per-user cap: $(cat "$tmp/cap.out"); $pair_msg"; tail -n 3 "$log"
fi
if "$sockd" --stats >/dev/null; then
	ok "the service is still up: $("$sockd" --stats)"
else
	fail "the service died"; tail -n 5 "$log"
fi

# ---- io_uring off for another user -------------------------------------------------
out=$(as_nobody "$nrun" --no-service python3 "$npeer" uring 2>&1)
if [ "$out" = "io_uring_setup: Function not implemented" ]; then
	ok "io_uring off under nobody's rb2-run too ($out)"
else
	fail "io_uring under nobody's rb2-run: $out"
fi

echo "rb2-run isolation: $fails failure(s)"
[ $fails -eq 0 ]
