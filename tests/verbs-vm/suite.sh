#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
#
# The verbs suite, run in the guest by guest.sh (RB2_VERBS_IP, RB2_BUILD set):
# two processes per test over rxe0, server first.
set -u
ip=$RB2_VERBS_IP
tv=$RB2_BUILD/tests/test_verbs
eal() { echo "-l $1 --no-pci --no-huge -m 256 --file-prefix v$2 --log-level lib.eal:error"; }
pass=0 fail=0
port=20000

# run NAME SERVER_ARGS -- CLIENT_ARGS: both sides must exit 0.
pair() {
	local name=$1 test=$2 count=${3:-}
	port=$((port + 10))
	"$tv" $(eal 0 s$port) -- server "$test" "$ip:$port" $count > /tmp/$name.s 2>&1 &
	local spid=$!
	sleep 0.5
	"$tv" $(eal 1 c$port) -- client "$test" "$ip:$port" $count > /tmp/$name.c 2>&1
	local crc=$?
	wait $spid
	local src=$?
	cat /tmp/$name.s /tmp/$name.c | grep -vE "^(TELEMETRY|EAL)"
	if [ $src -eq 0 ] && [ $crc -eq 0 ]; then
		pass=$((pass + 1)); echo "PASS $name"
	else
		fail=$((fail + 1)); echo "FAIL $name (server $src, client $crc)"
	fi
}

pair connect_stream_1M stream 1000000
pair elastic_threshold elastic 50000
# In one guest, rxe runs a WRITE and its loopback ACK inside ibv_post_send,
# so a tail WRITE is never in flight when the next one comes due: deferrals
# are reported here and required in the two-guest run (a real link).
d=$(sed -n 's/.*, \([0-9]*\) deferred tail syncs.*/\1/p' /tmp/elastic_threshold.c)
echo "INFO elastic threshold: ${d:-0} deferred tail syncs (one guest: completions are synchronous)"
pair latency_mode lat 20000
pair malformed_descriptor_refused baddesc

# A peer killed mid-stream: the receiver must report an error, not hang.
port=$((port + 10))
"$tv" $(eal 0 ks) -- server kill "$ip:$port" > /tmp/kill.s 2>&1 &
spid=$!
sleep 0.5
"$tv" $(eal 1 kc) -- client kill "$ip:$port" > /tmp/kill.c 2>&1 &
cpid=$!
sleep 3
kill -9 $cpid
wait $cpid 2>/dev/null
if timeout 60 tail --pid=$spid -f /dev/null; then wait $spid; src=$?; else src=124; kill -9 $spid; fi
grep -vE "^(TELEMETRY|EAL)" /tmp/kill.s
if [ $src -eq 0 ]; then pass=$((pass + 1)); echo "PASS peer_killed_gives_error";
else fail=$((fail + 1)); echo "FAIL peer_killed_gives_error ($src)"; fi

echo "verbs suite: $pass passed, $fail failed"
[ $fail -eq 0 ]
