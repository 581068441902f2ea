#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
#
# The two-guest reordering benchmark (run.sh BUILD two-reorder): the suite's
# netem_reorder check (1 MB each way under rb2-run, netem's "delay 2ms
# reorder 25% 50%" on both guests' side of the wire), RB2_TWO_ROUNDS rounds,
# each round once at ACK timeout 17 (0.54 s) and once at 14 (67 ms, rb2-run's
# own), given to rb2-run as RB2_RUN_VERBS_ARGS=ack_timeout=N.
# Soft-RoCE retries without limit at rb2-run's retry_cnt=7, so the timeout
# only says how soon what a reordered packet left unacknowledged goes again.
# The client (guest B) prints a JSON line a transfer and writes
# $RB2_OUT/two-reorder.json: every transfer's seconds, and the median of each
# timeout. Every transfer is also checked as the suite checks it.
set -u
side=client
[ "$RB2_ROLE" = -a ] && side=server
pass=0 fail=0
modprobe sch_netem
. "$(dirname "${BASH_SOURCE[0]}")/rb2run-two.sh"
rounds=${RB2_TWO_ROUNDS:-5}
acks="17 14"
runs=()
n=0
for r in $(seq "$rounds"); do
	for t in $acks; do
		n=$((n + 1))
		name=reorder_ack${t}_round$r
		fails=$fail
		RB2_RUN_VERBS_ARGS=ack_timeout=$t rr_netem "$name" $((21700 + n)) 1000000 \
			"; [1-9][0-9]* writes batched" delay 2ms reorder 25% 50%
		run=$(awk -v r="$r" -v t="$t" -v ok=$((fail == fails)) \
			'{ printf "{\"round\": %d, \"ack_timeout\": %d, \"seconds\": %.1f, \"cpu_s\": %.1f, \"whole\": %s}", r, t, $3, $1 + $2, ok ? "true" : "false" }' \
			/tmp/rr-$name.time)
		echo "two-reorder ($side): $run"
		runs+=("$run")
	done
done
if [ $side = client ]; then
	printf '%s\n' "${runs[@]}" | python3 -c '
import json, statistics, sys
runs = [json.loads(l) for l in sys.stdin]
med = {}
for t in dict.fromkeys(r["ack_timeout"] for r in runs):
    s = [r["seconds"] for r in runs if r["ack_timeout"] == t]
    med[str(t)] = {"median_s": statistics.median(s), "samples": len(s),
                   "ack_wait_ms": round(4.096e-3 * 2 ** t, 1)}
out = {"what": "1 MB each way under rb2-run between two Soft-RoCE guests, "
               "netem delay 2ms reorder 25% 50% on both sides; seconds a transfer "
               "(bash time, the client), at each verbs ack_timeout",
       "runs": runs, "by_ack_timeout": med}
json.dump(out, open(sys.argv[1], "w"), indent=2)
print("two-reorder: " + json.dumps(med))
' "$RB2_OUT/two-reorder.json"
fi
echo "two-reorder ($side): $pass passed, $fail failed"
[ $fail -eq 0 ]
