#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
#
# Channel counters are readable through DPDK telemetry while rb2-perf runs.
set -euo pipefail
perf=$1
tel=$(command -v dpdk-telemetry.py || true)
if [ -z "$tel" ]; then
	echo "SKIP: dpdk-telemetry.py not found (it ships in Debian's dpdk-dev package)"
	exit 77
fi
prefix="smktel$$"
out=$(mktemp)
trap 'rm -f "$out"; kill "$pid" 2>/dev/null || true' EXIT
"$perf" -l 0-1 --no-pci --no-huge -m 512 --file-prefix "$prefix" --log-level lib.eal:error -- \
	--mode bw --size 64 --duration 4 --rounds 1 >/dev/null &
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
wait "$pid"
[ "$ok" -eq 1 ] || { echo "FAIL: telemetry did not show the channel:"; cat "$out"; exit 1; }
grep -o '"tx": {[^}]*}' "$out" | head -1
echo "smoke_telemetry: ok"
