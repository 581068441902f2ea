#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
#
# The two-guest run (guest.sh what=two): guest A (RB2_ROLE=-a) serves, guest
# B (-b) connects across the virtual wire. Real RoCEv2 frames, real latency:
# here the elastic threshold must defer tail syncs.
set -u
tv=$RB2_BUILD/tests/test_verbs
addr=$RB2_PEER_IP
eal="-l 0 --no-pci --no-huge -m 512 --file-prefix two --log-level lib.eal:error"
pass=0 fail=0
side=client
[ "$RB2_ROLE" = -a ] && side=server

run() { # NAME TEST PORT COUNT
	"$tv" $eal -- $side "$2" "$addr:$3" "$4" > /tmp/$1 2>&1
	local rc=$?
	grep -vE "^(TELEMETRY|EAL)" /tmp/$1
	if [ $rc -eq 0 ]; then pass=$((pass + 1)); echo "PASS two_guests_$1 ($side)";
	else fail=$((fail + 1)); echo "FAIL two_guests_$1 ($side, $rc)"; fi
}

run stream stream 21000 200000
run elastic elastic 21010 20000
if [ $side = client ]; then
	d=$(sed -n 's/.*, \([0-9]*\) deferred tail syncs.*/\1/p' /tmp/elastic)
	if [ "${d:-0}" -gt 0 ]; then pass=$((pass + 1)); echo "PASS two_guests_elastic_threshold_defers ($d deferrals)";
	else fail=$((fail + 1)); echo "FAIL two_guests_elastic_threshold_defers (none)"; fi
fi
# The other tail syncs across the wire: native WRITE_WITH_IMM (receive
# completions, credits) and FaRM's poll message (lengths landing byte by
# byte while the receiver polls).
RB2_TEST_SYNC=push+imm run stream_imm stream 21030 100000
RB2_TEST_SYNC=push+poll run stream_poll stream 21040 100000
grep -q "tail WRITE_WITH_IMM" /tmp/stream_imm && grep -q "tail poll message" /tmp/stream_poll ||
	{ fail=$((fail + 1)); echo "FAIL two_guests_sync_policies (not the policies asked for)"; }
# The measurement NF split over the two guests: replay on B, an RB2 channel
# over verbs (rdma_cm, across the wire), measure on A. A checks every flow
# against the same trace measured in one process.
nf=$RB2_BUILD/apps/rb2-nf/rb2-nf
"$RB2_BUILD/apps/rb2-tracegen/rb2-tracegen" -o /tmp/nf.pcap --packets 200000 --flows 5000 \
	--ipv6 0.1 --seed 11 > /dev/null
cat > /tmp/nf.ini <<EOF
[stage replay]
type = replay
proc = replay
lcore = 0
trace = \${trace:-}
[stage measure]
type = measure
proc = measure
lcore = 0
flows = 10000
json = \${json:-}
[link records]
from = replay
to = measure
transport = verbs,dev=rxe0
peer = $addr:21020
timeout_ms = 60000
EOF
cat > /tmp/nf-one.ini <<'EOF'
[stage replay]
type = replay
lcore = 0
trace = ${trace}
[stage measure]
type = measure
lcore = 0
flows = 10000
json = ${json}
[link direct]
from = replay
to = measure
EOF
if [ $side = server ]; then
	"$nf" $eal -- --config /tmp/nf.ini --proc measure --json /tmp/nf-two.json > /tmp/nf-two 2>&1
	rc=$?
	"$nf" $eal -- --config /tmp/nf-one.ini --trace /tmp/nf.pcap --json /tmp/nf-one.json \
		> /tmp/nf-one 2>&1
	grep -hE "^measure '" /tmp/nf-two /tmp/nf-one
	grep -v cycles_per_record /tmp/nf-one.json > /tmp/nf-one.cmp
	grep -v cycles_per_record /tmp/nf-two.json > /tmp/nf-two.cmp 2>/dev/null
	if [ $rc -eq 0 ] && [ -s /tmp/nf-two.cmp ] && cmp -s /tmp/nf-one.cmp /tmp/nf-two.cmp; then
		pass=$((pass + 1)); echo "PASS two_guests_nf_over_verbs (every flow as in one process)"
	else
		fail=$((fail + 1)); echo "FAIL two_guests_nf_over_verbs ($rc)"; cat /tmp/nf-two /tmp/nf-one
	fi
else
	sleep 1
	if "$nf" $eal -- --config /tmp/nf.ini --proc replay --trace /tmp/nf.pcap > /tmp/nf-two 2>&1; then
		pass=$((pass + 1)); echo "PASS two_guests_nf_replay_over_verbs"
	else
		fail=$((fail + 1)); echo "FAIL two_guests_nf_replay_over_verbs"; cat /tmp/nf-two
	fi
fi

echo "two guests ($side): $pass passed, $fail failed"
[ $fail -eq 0 ]
