#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
#
# The measurement NF's throughput benchmark (issue: >= 15 M records/s):
# a generated CAIDA-like trace of 30 M packets and >= 1 M flows, replayed
# through replay -> RB2 channel (shm) -> measure on two lcores.
#
#   usertools/rb2-nf-bench.sh [BUILD_DIR] [ROUNDS]
#
# Prints one JSON object: each round's records/s, the median, and the
# cycles per record of the measure and replay stages. The trace is cached
# as BUILD_DIR/bench-30M.pcap (2.3 GB). Needs ~1.5 GB of hugepages for the
# preloaded records (reserved here when run as root); without them the
# records go to ordinary pages, with a warning.
# Environment: RB2_BENCH_PACKETS (30000000), RB2_BENCH_FLOWS (1500000 drawn;
# >= 1 M of them carry packets), RB2_BENCH_ARGS (extra rb2-nf options).
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "${1:-$top/build}" && pwd)
rounds=${2:-3}
packets=${RB2_BENCH_PACKETS:-30000000}
flows=${RB2_BENCH_FLOWS:-1500000}
trace=$build/bench-$((packets / 1000000))M.pcap
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ ! -f "$trace" ]; then
	echo "generating $trace ($packets packets, $flows flows)" >&2
	"$build/apps/rb2-tracegen/rb2-tracegen" -o "$trace" --packets "$packets" \
		--flows "$flows" --snaplen 64 --seed 42 >&2
fi
mem=(--no-huge -m 2048)
"$(dirname "$0")/rb2-hugepages.sh" 2048 >&2
free=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
if [ "${free:-0}" -ge 1024 ] && mountpoint -q /dev/hugepages; then
	mem=(-m $((free * 2 - 64)) --huge-unlink)
fi

for r in $(seq "$rounds"); do
	echo "round $r/$rounds" >&2
	# shellcheck disable=SC2086
	"$build/apps/rb2-nf/rb2-nf" -l 0-1 --no-pci "${mem[@]}" --file-prefix rb2-nf-bench \
		--log-level=lib.eal:warning -- --trace "$trace" --flows 2M --top 0 \
		--stats-json "$tmp/s$r.json" ${RB2_BENCH_ARGS:-} >"$tmp/out$r.txt" 2>&1 ||
		{ cat "$tmp/out$r.txt" >&2; exit 1; }
	grep -E "^measure '|flows" "$tmp/out$r.txt" | head -1 >&2
done

python3 - "$trace" "$tmp" "$rounds" "${mem[*]}" <<'PY'
import json, statistics, sys
trace, tmp, rounds, mem = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
runs = []
for r in range(1, rounds + 1):
    s = json.load(open(f"{tmp}/s{r}.json"))
    st = {x["name"]: x for x in s["stages"]}
    m, rp = st["measure"], st["replay"]
    recs = m["counters"]["records"]
    flows = None
    for line in open(f"{tmp}/out{r}.txt"):
        if line.startswith("measure '"):
            flows = int(line.split(" records, ")[1].split(" flows")[0])
    runs.append({"records": recs, "flows": flows, "seconds": s["seconds"],
                 "records_per_s": recs / s["seconds"],
                 "measure_cycles_per_record": m["cycles"] / recs,
                 "replay_cycles_per_record": rp["cycles"] / rp["produced"],
                 "replay_waits_full": rp["edges"]["out"]["waits"]})
med = statistics.median(x["records_per_s"] for x in runs)
print(json.dumps({"benchmark": "rb2-nf replay -> rb2 channel (shm) -> measure",
                  "trace": trace, "eal_memory": mem, "rounds": runs,
                  "median_records_per_s": med,
                  "median_measure_cycles_per_record":
                      statistics.median(x["measure_cycles_per_record"] for x in runs),
                  "target_records_per_s": 15e6, "meets_target": med >= 15e6}, indent=1))
PY
