#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
#
# Channel counters are readable through DPDK telemetry while rb2-perf runs;
# so are transports and their QPs, registration caches (rb2-perf's large
# sends lend buffers through one) and, page by page, a connection
# endpoint's connections (rb2-connperf), each answered by the lcore that
# owns it.
set -euo pipefail
perf=$1
connperf=$2
tel=$(command -v dpdk-telemetry.py || true)
if [ -z "$tel" ]; then
	echo "SKIP: dpdk-telemetry.py not found (it ships in Debian's dpdk-dev package)"
	exit 77
fi
prefix="smktel$$"
out=$(mktemp)
# Each app runs far longer than its queries need and is killed once they
# are answered: a query is a Python start and a socket round trip, 1-2.5 s
# where python3 is a pyenv shim, and apps that ran 4-8 s outlived too few
# of them. A killed app leaves its runtime directory: removed here.
trap 'rm -f "$out"; kill "$pid" 2>/dev/null || true; for p in smktel smktelc smktelm smktelr; do rm -rf "/var/run/dpdk/$p$$"; done' EXIT
"$perf" -l 0-1 --no-pci --no-huge -m 512 --file-prefix "$prefix" --log-level lib.eal:error -- \
	--mode bw --size 64 --seconds 60 --rounds 1 >/dev/null &
pid=$!
ok=0
for _ in $(seq 1 40); do
	sleep 0.25
	printf '/rb2/channels\n/rb2/channel,perf\n' | python3 "$tel" -f "$prefix" >"$out" 2>&1 || true
	if grep -q '"perf"' "$out" && grep -q '"tail_writes"' "$out" && grep -q '"head_pushes"' "$out"; then
		ok=1
		break
	fi
done
kill "$pid"
wait "$pid" 2>/dev/null || true
[ "$ok" -eq 1 ] || { echo "FAIL: telemetry did not show the channel:"; cat "$out"; exit 1; }
grep -o '"tx": {[^}]*}' "$out" | head -1

# The replies in $out, merged into one dict r (dpdk-telemetry.py prints a
# JSON object per command, after one about itself); then ARG evaluated.
replies() {
	python3 - "$out" "$1" <<'PY'
import json, sys
text, r, dec = open(sys.argv[1]).read(), {}, json.JSONDecoder()
i = text.find("{")
while i >= 0:
    try:
        obj, end = dec.raw_decode(text, i)
    except ValueError:
        i = text.find("{", i + 1)
        continue
    if isinstance(obj, dict):
        r.update(obj)
    i = text.find("{", end)
v = eval(sys.argv[2])
if isinstance(v, bool):
    sys.exit(0 if v else 1)
print(v)
PY
}

# query PREFIX CHECK CMD...: ask until CHECK holds for the replies, for up
# to 10 s.
query() {
	local pfx=$1 check=$2; shift 2
	for _ in $(seq 1 40); do
		sleep 0.25
		printf '%s\n' "$@" | python3 "$tel" -f "$pfx" >"$out" 2>&1 || true
		if replies "bool($check)" 2>/dev/null; then return 0; fi
	done
	echo "FAIL: telemetry never satisfied: $check"; cat "$out"; return 1
}

# Connections: 16 over one shared channel pair, two QPs whatever their
# number (shm: two queues), and each connection's credit and counts.
prefix="smktelc$$"
"$connperf" -l 0-1 --no-pci --no-huge -m 512 --file-prefix "$prefix" --log-level lib.eal:error -- \
	--designs shared --conns 16 --seconds 60 --rounds 1 >/dev/null &
pid=$!
query "$prefix" 'any(e for e in r.get("/rb2/conn/endpoints", []))' /rb2/conn/endpoints
ep=$(replies 'r["/rb2/conn/endpoints"][0]')
query "$prefix" "len(r['/rb2/conn/connections'].get('connections', {})) >= 16 and all(c['state'] == 'open' for c in r['/rb2/conn/connections']['connections'].values()) and any(c['tx_credit_used'] + c['rx_msgs'] > 0 for c in r['/rb2/conn/connections']['connections'].values()) and any(x['qps'] >= 2 for x in r['/rb2/xports'].values())" \
	"/rb2/conn/connections,$ep" /rb2/xports
grep -o '"connections": {"[0-9]*": {[^}]*}' "$out" | head -1
kill "$pid"
wait "$pid" 2>/dev/null || true

# A registration cache: rb2-perf's large sends over loop lend buffers.
prefix="smktelm$$"
"$perf" -l 0-1 --no-pci --no-huge -m 512 --file-prefix "$prefix" --log-level lib.eal:error -- \
	--mode bulk --transport loop --rounds 60 >/dev/null &
pid=$!
query "$prefix" '"bulk-tx.bulk-lend" in r.get("/rb2/mr_caches", [])' /rb2/mr_caches
query "$prefix" "r['/rb2/mr_cache']['gets'] > 0 and r['/rb2/mr_cache']['hits'] > 0 and r['/rb2/mr_cache']['regions'] > 0" \
	"/rb2/mr_cache,bulk-tx.bulk-lend"
grep -o '"/rb2/mr_cache": {[^}]*}' "$out" | head -1
# Seen: its 60 rounds are only there to outlast the queries (under
# ThreadSanitizer by far).
kill "$pid"
wait "$pid" 2>/dev/null || true

# Large messages lent on connections (rb2_conn_ref.h), the lender and the
# reader on two lcores: the endpoints count what they lent and READ, and
# their registration caches show.
prefix="smktelr$$"
"$connperf" -l 0-1 --no-pci --no-huge -m 512 --file-prefix "$prefix" --log-level lib.eal:error -- \
	--transport loop --designs lent --size 65536 --seconds 60 --rounds 1 >/dev/null &
pid=$!
query "$prefix" 'any(e for e in r.get("/rb2/conn/endpoints", []))' /rb2/conn/endpoints
a=$(replies '[e for e in r["/rb2/conn/endpoints"] if e.endswith("a0")][0]')
b=$(replies '[e for e in r["/rb2/conn/endpoints"] if e.endswith("b0")][0]')
query "$prefix" "r['/rb2/conn/endpoint']['ref_tx_msgs'] > 0 and r['/rb2/conn/endpoint']['ref_tx_bytes'] == 65536 * r['/rb2/conn/endpoint']['ref_tx_msgs']" \
	"/rb2/conn/endpoint,$a"
query "$prefix" "r['/rb2/conn/endpoint']['ref_rx_msgs'] > 0 and r['/rb2/conn/endpoint']['ref_reads'] >= r['/rb2/conn/endpoint']['ref_rx_msgs']" \
	"/rb2/conn/endpoint,$b"
grep -o '"ref_rx_msgs": [0-9]*' "$out" | head -1
# ... and their registration caches, named after their endpoints, hit.
query "$prefix" "r['/rb2/mr_cache']['hits'] > 0" "/rb2/mr_cache,conn-tx.$a"
query "$prefix" "r['/rb2/mr_cache']['hits'] > 0" "/rb2/mr_cache,conn-rx.$b"
kill "$pid"
wait "$pid" 2>/dev/null || true
echo "smoke_telemetry: ok"
