#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
#
# rb2-connperf's round trips for real on the shm transport: across two
# lcores, split at the echo (--one-way), and with both ends on one
# (--one-lcore, the layer's own cost), every message back at its size; clear
# errors for either option without --lat, and for both at once.
set -euo pipefail
connperf=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
eal=(-l 0-1 --no-pci --no-huge -m 512 --log-level lib.eal:error)
fail() { echo "FAIL: $*" >&2; exit 1; }

for mode in "" --one-lcore --one-way; do
	"$connperf" "${eal[@]}" --file-prefix "smkcp$$" -- --designs shared,bare --lat 20000 \
		--rounds 2 --size 100 $mode > "$tmp/out.json" || fail "--lat $mode"
	python3 - "$tmp/out.json" "$mode" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
want = "latency_one_lcore" if sys.argv[2] == "--one-lcore" else "latency"
assert d["test"] == want and d["unit"] == "rtt_ns_p50", d
assert [v["mode"] for v in d["variants"]] == ["shared", "bare"], d
for v in d["variants"]:
    assert len(v["rounds"]) == 2 and v["median"] > 0, v
    if sys.argv[2] == "--one-way":
        # Three parts, each under the round trip (p50s need not add up).
        parts = v["one_way_ns_p50"]
        assert sorted(parts) == ["reply", "request", "turnaround"], v
        assert all(0 < x < 50 * v["median"] for x in parts.values()), v
PY
done

out=$("$connperf" "${eal[@]}" --file-prefix "smkcp$$" -- --one-lcore 2>&1) &&
	fail "--one-lcore without --lat should fail"
grep -q -- "give --lat N" <<<"$out" || fail "--one-lcore without --lat: $out"
out=$("$connperf" "${eal[@]}" --file-prefix "smkcp$$" -- --lat 10 --one-way --one-lcore 2>&1) &&
	fail "--one-way with --one-lcore should fail"
grep -q -- "drop --one-lcore" <<<"$out" || fail "--one-way --one-lcore: $out"
echo "smoke_connperf: OK"
