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
echo "two guests ($side): $pass passed, $fail failed"
[ $fail -eq 0 ]
