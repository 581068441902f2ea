#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
#
# The host service, rb2-raasd, with applications that join it (its DPDK
# secondaries) and talk to each other through it, on shm:
#   - two applications, 500 connections, every message once and in order,
#     both ways, and every connection closed;
#   - connects to a port nobody listens on, and to a host the service has
#     no link to: refused, with the reason;
#   - an application that stops polling for a while: the same client's
#     connections to another application go on meanwhile (the service
#     queues what the stalled one has no room for), and nothing is lost;
#   - an application killed with its connections open: each one is reset at
#     the other end, with the reason, within a bound;
#   - the rings of every application that left, the killed one's too, are
#     freed (the group's memzones, through DPDK telemetry);
#   - the service killed: every connection of every application fails;
#   - lent messages (rb2_conn_send_ref() from shared memory) through the
#     service: each READ once, intact and in order among copied ones, into
#     shared memory in place and into private memory through a bounce
#     buffer, every buffer back to its lender; a borrower that closes with
#     lent messages unread, and one killed holding them: every buffer back,
#     unread, and no loan left in the service (telemetry).
# Needs hugepages (DPDK multi-process); skips (77) and says so without.
#
#   test_raasd.sh BUILD_DIR
set -u
build=$1
app=$build/tests/test_raas_app
pfx=rb2t-raas-$$
. "$(dirname "$0")/case_study_lib.sh"

if ! have_hugepages; then
	echo "SKIP: DPDK multi-process needs hugepages: as root, usertools/rb2-hugepages.sh 1024"
	exit 77
fi

# app NAME ARGS...: an application, a secondary of the service, logging to
# tmp/NAME. Run it in the background (app ... &: then $! is the application
# itself) or in a subshell: it drops the clean-up trap, which a subshell
# would otherwise run when it ends, and execs.
app() {
	local name=$1; shift
	trap - EXIT
	exec "$app" -l 1 --no-pci --proc-type=secondary --file-prefix "$pfx" \
		--log-level=lib.eal:error -- "$1" "$name" "${@:2}" >"$tmp/$name" 2>&1
}

# wait_gone SECONDS PID: 0 if PID exited within SECONDS.
wait_gone() {
	local end=$(( $(date +%s%N) + $1 * 1000000000 ))
	while kill -0 "$2" 2>/dev/null; do
		[ "$(date +%s%N)" -lt $end ] || return 1
		sleep 0.01
	done
}

start_raasd
raasd_pid=${pids[-1]}   # the service itself (the subshell execs)

# 1. Two applications through the service, both ways.
app server-a server 7 500 40 & s=$!; pids+=("$s")
wait_for "$tmp/server-a" listening
(app client-a client 7 500 40); crc=$?
wait "$s"; src=$?
cat "$tmp/server-a" "$tmp/client-a"
if [ $src -eq 0 ] && [ $crc -eq 0 ]; then ok "two applications, 500 connections through rb2-raasd"
else fail "two applications through rb2-raasd (server $src, client $crc)"; fi

# 1b. Refusals through the service.
(app refused-a refused 99 50); r1=$?
(RB2_TEST_HOST=77; export RB2_TEST_HOST; app refused-b refused 7 50); r2=$?
cat "$tmp/refused-a" "$tmp/refused-b"
if [ $r1 -eq 0 ] && [ $r2 -eq 0 ] && grep -q "nothing listens" "$tmp/refused-a" &&
	grep -q "no link to that host" "$tmp/refused-b"; then
	ok "connects to no listener and to an unknown host refused, with the reason"
else
	fail "refusals through rb2-raasd ($r1, $r2)"
fi

# 1c. Lent messages through the service: the borrower asks it to READ
# (here: one copy, lender's buffer to reader's), in place or bounced.
app borrow-a borrower 13 4 24 & s=$!; pids+=("$s")
wait_for "$tmp/borrow-a" listening
(app lend-a lender 13 4 24); lrc=$?
wait "$s"; brc=$?
cat "$tmp/borrow-a" "$tmp/lend-a"
if [ $lrc -eq 0 ] && [ $brc -eq 0 ] && grep -q "through a bounce buffer, 0 bad$" "$tmp/borrow-a"; then
	ok "lent messages through rb2-raasd: 72 lent and 24 copied on 4 connections, each READ once and intact, every buffer back"
else
	fail "lent messages through rb2-raasd (lender $lrc, borrower $brc)"
fi
app borrow-b borrower 14 4 24 abort & s=$!; pids+=("$s")
wait_for "$tmp/borrow-b" listening
(app lend-b lender 14 4 24 abort); lrc=$?
wait "$s"; brc=$?
cat "$tmp/borrow-b" "$tmp/lend-b"
if [ $lrc -eq 0 ] && [ $brc -eq 0 ]; then
	ok "a borrower that closes with lent messages unread: every buffer back, unread ones as such"
else
	fail "a borrower closing with lent messages unread (lender $lrc, borrower $brc)"
fi
app borrow-c borrower 15 4 24 stall & s=$!; pids+=("$s")
wait_for "$tmp/borrow-c" listening
app lend-c lender 15 4 24 abort & l=$!; pids+=("$l")
wait_for "$tmp/borrow-c" stalled && sleep 1
kill -9 "$s"
if wait_gone 20 "$l"; then wait "$l"; lrc=$?; else lrc=124; fi
cat "$tmp/lend-c"
loans=$(printf '/rb2/raasd/info\n' | python3 "$(command -v dpdk-telemetry.py || echo /nonexistent)" -f "$pfx" 2>/dev/null |
	python3 -c 'import json,re,sys; t=sys.stdin.read(); d=[json.loads(m) for m in re.findall(r"^\{.*\}$", t, re.M)]; i=d[0]["/rb2/raasd/info"]; print(i["loans_in_use"], i["lent"], i["bad_lend_frames"])' 2>/dev/null)
echo "service: loans in use, lent, bad lend frames: ${loans:-(no answer from telemetry)}"
if [ $lrc -eq 0 ] && [ "${loans%% *}" = 0 ]; then
	ok "a borrower killed holding lent messages: every buffer back to its lender, no loan left in the service"
else
	fail "a borrower killed holding lent messages (lender $lrc, service: ${loans:-?})"
fi

# 1d. The benchmark of lent against copied runs through the service (one
# short round: its JSON must name both modes' rates; no figure is judged).
bench=$build/apps/rb2-raasbench/rb2-raasbench
( trap - EXIT; exec "$bench" -l 1 --no-pci --proc-type=secondary --file-prefix "$pfx" \
	--log-level=lib.eal:error -- recv --port 16 >"$tmp/bench-r" 2>&1 ) & s=$!; pids+=("$s")
wait_for "$tmp/bench-r" listening
"$bench" -l 1 --no-pci --proc-type=secondary --file-prefix "$pfx" --log-level=lib.eal:error \
	-- send --port 16 --size 262144 --rounds 1 --seconds 0.1 >"$tmp/bench-s" 2>&1; bsc=$?
wait "$s"; brc=$?
if [ $bsc -eq 0 ] && [ $brc -eq 0 ] && python3 -c '
import json, sys
d = json.loads(open(sys.argv[1]).read().splitlines()[-1])
sys.exit(0 if d["lent_MBps"][0] > 0 and d["copied_MBps"][0] > 0 else 1)' "$tmp/bench-s"; then
	ok "rb2-raasbench: lent and copied 256 KiB messages through the service ($(tail -1 "$tmp/bench-s" | grep -o '"lent_over_copied_median": [0-9.]*'))"
else
	fail "rb2-raasbench through the service (sender $bsc, receiver $brc)"; cat "$tmp/bench-s" "$tmp/bench-r"
fi

# 2. A destination that stops polling altogether holds up only its own
# connections: what its ring has no room for waits in the service's queue
# for it, and the same client's connections to another application go on.
# Before the cases below on purpose: the stalled applications leave with
# the service still storing into their rings, and the service once read a
# later application's ring twice (a ring freed under those stores and
# handed out again; shm rings now outlive their last user).
stall=6
app stall-s server 11 8 400 $stall & s1=$!; pids+=("$s1")
app other-s server 12 8 400 & s2=$!; pids+=("$s2")
wait_for "$tmp/stall-s" listening && wait_for "$tmp/other-s" listening
(app split-c client 11 8 400 12); crc=$?
wait "$s1"; r1=$?; wait "$s2"; r2=$?
cat "$tmp/stall-s" "$tmp/other-s" "$tmp/split-c"
t=$(sed -n 's/^server: delivered after \([0-9.]*\) s/\1/p' "$tmp/other-s")
if [ $crc -eq 0 ] && [ $r1 -eq 0 ] && [ $r2 -eq 0 ] && [ -n "$t" ] &&
	python3 -c "import sys; sys.exit(0 if $t < $stall - 1 else 1)"; then
	ok "an application that stops polling for $stall s: the same client's other connections all delivered after $t s, and its own after the stall, nothing lost"
else
	fail "a stalled destination (client $crc, stalled server $r1, other server $r2, other delivered after ${t:-never} s)"
fi

# 3. An application killed with its connections open.
app orphan-b orphan 8 300 & o=$!; pids+=("$o")
wait_for "$tmp/orphan-b" listening
app client-b client 8 300 10 hang & c=$!; pids+=("$c")
for _ in $(seq 400); do grep -q "^sent" "$tmp/client-b" && break; sleep 0.05; done
kill -9 "$c"
t0=$(date +%s%N)
if wait_gone 5 "$o"; then
	wait "$o"; orc=$?
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	cat "$tmp/orphan-b"
	if [ $orc -eq 0 ]; then ok "a killed application's 300 connections reset at the other end in $ms ms"
	else fail "killed application: the other end says $orc"; fi
else
	fail "killed application: its peer still waits after 5 s"; cat "$tmp/orphan-b" "$tmp/client-b" "$tmp/raasd"
	[ -n "${RB2_DEBUG_RAASD:-}" ] && gdb -p "$raasd_pid" -batch -ex "thread apply all bt" 2>&1 | grep -E "^#" | head -30
fi

# 4. The service killed under two applications.
app linger-c linger 9 100 listen & l1=$!; pids+=("$l1")
wait_for "$tmp/linger-c" listening
app linger-d linger 9 100 connect & l2=$!; pids+=("$l2")
wait_for "$tmp/linger-d" "connections open"
# Telemetry, while they hold their connections: both links, 100 each.
tel=$(command -v dpdk-telemetry.py || true)
if [ -n "$tel" ]; then
	printf '/rb2/raasd/links\n/rb2/raasd/info\n' | python3 "$tel" -f "$pfx" >"$tmp/tel" 2>&1
	if python3 - "$tmp/tel" <<'PY'
import json, re, sys
text = open(sys.argv[1]).read()
docs = [json.loads(m) for m in re.findall(r'^\{.*\}$', text, re.M)]
links = {l["name"]: l for d in docs if "/rb2/raasd/links" in d
         for l in d["/rb2/raasd/links"].values()}
info = next(d["/rb2/raasd/info"] for d in docs if "/rb2/raasd/info" in d)
ok = (links["linger-c"]["connections"] == 100 and links["linger-d"]["connections"] == 100
      and info["relays_in_use"] == 100
      # 100 SYNs from one, relayed to the other; its 100 SYNACKs back.
      and links["linger-d"]["frames_in"] >= 100 and links["linger-c"]["frames_out"] >= 100
      and links["linger-c"]["frames_in"] >= 100 and links["linger-d"]["frames_out"] >= 100
      and links["linger-c"]["qps"] == 0)
print("telemetry:", json.dumps(links), json.dumps(info))
sys.exit(0 if ok else 1)
PY
	then ok "telemetry: 100 connections through each of the two links"
	else fail "telemetry"; cat "$tmp/tel"; fi
	# The group's memory: rings of the two live links only (both halves
	# of both directions); every application that left, the killed one
	# too, had its rings freed, whichever side owned them.
	if python3 - "$tel" "$pfx" <<'PY'
import json, re, subprocess, sys
tel, pfx = sys.argv[1], sys.argv[2]
def ask(cmds):
    out = subprocess.run(["python3", tel, "-f", pfx], input="\n".join(cmds) + "\n",
                         capture_output=True, text=True, timeout=60).stdout
    return [json.loads(m) for m in re.findall(r'^\{.*\}$', out, re.M)]
ids = next(d["/eal/memzone_list"] for d in ask(["/eal/memzone_list"]) if "/eal/memzone_list" in d)
zones = [d["/eal/memzone_info"]["Name"] for d in ask([f"/eal/memzone_info,{i}" for i in ids])
         if "/eal/memzone_info" in d]
rings = sorted(z for z in zones if z.startswith(("rb2r.", "rb2s.")))
live = sorted(f"rb2{k}.{a}.{d}" for k in "rs" for a in ("linger-c", "linger-d") for d in "ud")
print("rings in the group's memory:", " ".join(rings))
sys.exit(0 if rings == live else 1)
PY
	then ok "every ring of the applications that left is freed (the killed one's too); the live links' remain"
	else fail "rings left behind in the group's memory"; fi
else
	echo "note: dpdk-telemetry.py not found (Debian's dpdk-dev); telemetry not checked"
fi
kill -9 "$raasd_pid"
t0=$(date +%s%N)
rc=0
for p in $l1 $l2; do
	wait_gone 5 "$p" || { fail "the service killed: an application still waits after 5 s"; rc=1; }
done
if [ $rc -eq 0 ]; then
	wait "$l1"; r1=$?; wait "$l2"; r2=$?
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	cat "$tmp/linger-c" "$tmp/linger-d"
	if [ $r1 -eq 0 ] && [ $r2 -eq 0 ]; then ok "the service killed: every connection failed within $ms ms"
	else fail "the service killed (applications $r1, $r2)"; fi
fi

# A failure here is often the service's: its log says why (a sanitizer's
# report included).
[ $fails -eq 0 ] || { echo "--- rb2-raasd's log:"; cat "$tmp/raasd"; }
[ $fails -eq 0 ]
