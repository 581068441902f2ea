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
	verdict "$name" $? $crc
}

# expect_said NAME PATTERN WHY_PASS WHY_FAIL: a control run (its pair's
# verdict set aside) must have failed, its server saying PATTERN.
expect_said() {
	if grep -q "$2" /tmp/$1.s; then
		pass=$((pass + 1))
		echo "PASS $1 ($3)"
	else
		fail=$((fail + 1))
		echo "FAIL $1: $4"
		cat /tmp/$1.[sc]
	fi
}

# verdict NAME SERVER_RC CLIENT_RC: both sides' output, then PASS or FAIL.
verdict() {
	cat /tmp/$1.s /tmp/$1.c | grep -vE "^(TELEMETRY|EAL)"
	if [ "$2" -eq 0 ] && [ "$3" -eq 0 ]; then
		pass=$((pass + 1)); echo "PASS $1"
	else
		fail=$((fail + 1)); echo "FAIL $1 (server $2, client $3)"
	fi
}

# Counts sized to what TCG carries (a few seconds each), still thousands of
# times round the ring.
pair connect_stream stream 150000
# rb2-run's stream across hosts: two processes, their queues connected over
# the socket between them (rendezvous fd:N), 32 MiB each way, half-close,
# sleepers woken by bells; a writer whose process ends ahead of its reader
# (a close, a close behind a slow reader, an exit, a death): all and the
# end, or a reset, never part and the end.
if timeout -k 5 300 "$RB2_BUILD/tests/test_stream" remote-verbs > /tmp/stream_remote.out 2>&1; then
	pass=$((pass + 1)); grep -E "^client:|^(close|exit|die) (ahead|behind)|failure" /tmp/stream_remote.out
	echo "PASS stream_across_hosts_queues_over_its_socket"
else
	fail=$((fail + 1)); tail -30 /tmp/stream_remote.out
	echo "FAIL stream_across_hosts_queues_over_its_socket"
fi
# Every write published at once: a writer ahead of its reader waits for the
# reader's credits in each write, asleep (the "ahead" phase's CPU check).
if RB2_TEST_BATCH=0 timeout -k 5 300 "$RB2_BUILD/tests/test_stream" remote-verbs > /tmp/stream_remote_nb.out 2>&1; then
	pass=$((pass + 1)); grep -E "^client: .*ahead|failure" /tmp/stream_remote_nb.out
	echo "PASS stream_across_hosts_unbatched_writes_sleep_for_credits"
else
	fail=$((fail + 1)); tail -30 /tmp/stream_remote_nb.out
	echo "FAIL stream_across_hosts_unbatched_writes_sleep_for_credits"
fi
pair elastic_threshold elastic 20000
# In one guest, rxe runs a WRITE and its loopback ACK inside ibv_post_send,
# so a tail WRITE is never in flight when the next one comes due: deferrals
# are reported here and required in the two-guest run (a real link).
d=$(sed -n 's/.*, \([0-9]*\) deferred tail syncs.*/\1/p' /tmp/elastic_threshold.c)
echo "INFO elastic threshold: ${d:-0} deferred tail syncs (one guest: completions are synchronous)"
pair latency_mode lat 20000
# Adaptive polling: the receiver sleeps on its completion channel, each paced
# message's WRITE_WITH_IMM wakes it, under every tail sync.
pair sleep_adaptive_polling sleep 300
RB2_TEST_SYNC=push+imm pair sleep_adaptive_polling_imm sleep 200
RB2_TEST_SYNC=push+poll pair sleep_adaptive_polling_poll sleep 200
# Large messages from application memory (rb2_bulk.h): lent above 64 KiB,
# READ by the receiver into its own memory, a buffer remapped halfway.
pair bulk_lent_buffers_read_zero_copy bulk 120
# ... under WRITE_WITH_IMM tail sync too, where reaping the receiver's
# queue also takes receives (a READ must still be waited for).
RB2_TEST_SYNC=push+imm pair bulk_lent_buffers_push+imm bulk 60
# ... and that check can fail: a buffer remapped without being forgotten is
# READ through its old registration, from the old pages.
p0=$pass f0=$fail
RB2_TEST_BULK_NO_FORGET=1 pair bulk_stale_registration_control bulk 120 >/dev/null
pass=$p0 fail=$f0
expect_said bulk_stale_registration_control "stale or wrong content" \
	"a registration kept past munmap READ the old pages, and the check saw it" \
	"without forgetting, the old pages went unnoticed"
# Large messages lent on a connection (rb2_conn_ref.h): READ into the
# server's buffer and checked; then the server dies holding four unread, and
# each of those buffers must come back failed, the others READ.
pair conn_lent_buffers_back_once_peer_dies connref 60
# The receive side on a shared receive queue (srq=N): WRITE_WITH_IMM's
# receives come from one SRQ per device, not a queue per QP. 12 channels in
# turn on one transport, each streaming: with 136 entries (two channels' 64
# and some) each must reuse what the one before left there. Then a sleeper's
# wake-up receives from it too.
RB2_TEST_SYNC=push+imm RB2_VERBS_ARGS=srq=136 pair srq_channels_in_turn srq 20000
RB2_TEST_SYNC=push+imm RB2_VERBS_ARGS=srq=136 pair sleep_adaptive_polling_imm_srq sleep 100
# ... and the receives do come from the SRQ: one of 40, under a channel's 64,
# refuses the first channel, saying what to raise (without the reuse above,
# 136 would have run out at the third).
p0=$pass f0=$fail
RB2_TEST_SYNC=push+imm RB2_VERBS_ARGS=srq=40 timeout -k 5 120 bash -c "$(declare -f pair verdict eal); tv=$tv ip=$ip port=$port pass=0 fail=0; pair srq_too_small_control srq 1000" >/dev/null
pass=$p0 fail=$f0
expect_said srq_too_small_control "shared receive queue of 40 is full" \
	"the first channel's receives did not fit an SRQ of 40, and it said so" \
	"an SRQ of 40 took a channel's 64 receives, or said nothing"
port=$((port + 10))
# Lanes over rxe0: 8 and 64 channels each way on one QP per side, one
# doorbell per pass, every message's sequence checked (rb2-perf counts the
# errors); each channel on its own QP alongside.
if timeout -k 5 600 "$RB2_BUILD/apps/rb2-perf/rb2-perf" $(eal 0-1 ln) -- --mode lanes \
	--transport verbs,dev=rxe0 --channels 8,64 --rounds 1 --count 5000 \
	--json /tmp/lanes.json > /tmp/lanes.out 2>&1 && grep -q '"errors": 0,' /tmp/lanes.json; then
	pass=$((pass + 1)); grep -E "^ +(8|64) " /tmp/lanes.out; echo "PASS lanes_8_and_64_channels_one_qp"
else
	fail=$((fail + 1)); tail -20 /tmp/lanes.out; echo "FAIL lanes_8_and_64_channels_one_qp"
fi
# The same under an admission window of 8 WRs per QP: on a lane, the QP's
# window holds all its channels together. Every message once, in order, and
# no QP ever had more than 8 in flight.
if timeout -k 5 600 "$RB2_BUILD/apps/rb2-perf/rb2-perf" $(eal 0-1 lw) -- --mode lanes \
	--transport verbs,dev=rxe0 --channels 8,64 --rounds 1 --count 5000 --max-inflight 8 \
	--json /tmp/lanew.json > /tmp/lanew.out 2>&1 &&
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (d["errors"] == 0 and d["runs"] and all(0 < r["max_inflight_seen"] <= 8 for r in d["runs"])))' /tmp/lanew.json; then
	pass=$((pass + 1)); grep -E "deferrals" /tmp/lanew.out; echo "PASS lanes_under_a_window_of_8_per_qp"
else
	fail=$((fail + 1)); tail -20 /tmp/lanew.out; echo "FAIL lanes_under_a_window_of_8_per_qp"
fi
# Lanes across processes: 8 channels from one process's lcore to another's,
# all on one lane a side, so one QP between the two processes; the first
# channel's exchange connects the lanes' QPs, the others' descriptors go out
# of band. Every message's sequence checked by the server.
port=$((port + 10))
perfbin="$RB2_BUILD/apps/rb2-perf/rb2-perf"
lx="--transport verbs,dev=rxe0 --channels 8 --lane --size 64 --count 20000 --rounds 2 --port $port"
timeout -k 5 300 "$perfbin" $(eal 0 lxs) -- --server $lx --json /tmp/lx.s.json > /tmp/lx.s 2>&1 &
lxs=$!
sleep 0.5
timeout -k 5 300 "$perfbin" $(eal 1 lxc) -- --client "$ip" $lx --json /tmp/lx.c.json > /tmp/lx.c 2>&1
lxc=$?
wait $lxs
lxsrc=$?
if [ $lxc -eq 0 ] && [ $lxsrc -eq 0 ] &&
	python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); c=json.load(open(sys.argv[2])); sys.exit(not (s["errors"] == 0 and c["lane"] and c["messages"] == 40000 and c["doorbells"] < c["messages"]))' /tmp/lx.s.json /tmp/lx.c.json; then
	pass=$((pass + 1)); grep -hE "^rb2-perf bw client|lane:" /tmp/lx.c /tmp/lx.s; echo "PASS lanes_across_processes_8_channels_one_qp"
else
	fail=$((fail + 1)); grep -vhE "^(TELEMETRY|EAL)" /tmp/lx.s /tmp/lx.c | tail -30
	echo "FAIL lanes_across_processes_8_channels_one_qp (server $lxsrc, client $lxc)"
fi
port=$((port + 10))
# A pipeline split over two processes, on lanes ([pipeline] lanes = 1): two
# replays on process a's lcore 0, two measures on process b's lcore 1, so
# both links share one lane a side (one QP between the processes). Each
# measure must count every flow as the same trace measured in one process,
# and each process must report one lane carrying both channels.
nf=$RB2_BUILD/apps/rb2-nf/rb2-nf
"$RB2_BUILD/apps/rb2-tracegen/rb2-tracegen" -o /tmp/pl.pcap --packets 50000 --flows 2000 \
	--seed 5 > /dev/null 2>&1
cat > /tmp/pl-two.ini <<EOF
[pipeline]
lanes = 1
[stage replay1]
type = replay
proc = a
lcore = 0
trace = \${trace:-}
[stage replay2]
type = replay
proc = a
lcore = 0
trace = \${trace:-}
[stage measure]
type = measure
proc = b
lcore = 1
flows = 4096
json = \${json:-}
[stage measure2]
type = measure
proc = b
lcore = 1
flows = 4096
csv = \${csv:-}
[link l1]
from = replay1
to = measure
transport = verbs,dev=rxe0
peer = $ip:$((port + 1))
timeout_ms = 60000
[link l2]
from = replay2
to = measure2
transport = verbs,dev=rxe0
peer = $ip:$((port + 2))
timeout_ms = 60000
EOF
cat > /tmp/pl-one.ini <<'EOF'
[stage replay]
type = replay
lcore = 0
trace = ${trace}
[stage measure]
type = measure
lcore = 0
flows = 4096
json = ${json}
csv = ${csv}
[link direct]
from = replay
to = measure
EOF
timeout -k 5 300 "$nf" $(eal 1 plb) -- --config /tmp/pl-two.ini --proc b --json /tmp/pl-b.json \
	--csv /tmp/pl-b.csv --stats-json /tmp/pl-b.stats > /tmp/pl-b 2>&1 &
plb=$!
sleep 0.5
timeout -k 5 300 "$nf" $(eal 0 pla) -- --config /tmp/pl-two.ini --proc a --trace /tmp/pl.pcap \
	--stats-json /tmp/pl-a.stats > /tmp/pl-a 2>&1
plarc=$?
wait $plb
plbrc=$?
"$nf" $(eal 0 plo) -- --config /tmp/pl-one.ini --trace /tmp/pl.pcap --json /tmp/pl-one.json \
	--csv /tmp/pl-one.csv > /tmp/pl-one 2>&1
# (Files, not <(...): the guest has no /dev/fd.)
plwhy=""
[ $plarc -eq 0 ] && [ $plbrc -eq 0 ] || plwhy="exit codes a $plarc, b $plbrc"
grep -v cycles_per_record /tmp/pl-one.json > /tmp/pl-one.cmp
grep -v cycles_per_record /tmp/pl-b.json > /tmp/pl-b.cmp 2>/dev/null
[ -s /tmp/pl-b.cmp ] && cmp -s /tmp/pl-one.cmp /tmp/pl-b.cmp ||
	plwhy="$plwhy; measure's JSON differs from one process's: $(diff /tmp/pl-one.cmp /tmp/pl-b.cmp 2>&1 | head -c 600)"
cmp -s /tmp/pl-one.csv /tmp/pl-b.csv ||
	plwhy="$plwhy; measure2's CSV differs: $(diff /tmp/pl-one.csv /tmp/pl-b.csv 2>&1 | head -c 400)"
python3 -c 'import json,sys
for f, peer in ((sys.argv[1], "b"), (sys.argv[2], "a")):
    l = json.load(open(f))["lanes"]
    if not (len(l) == 1 and l[0]["queues"] == 2 and l[0]["peer_proc"] == peer):
        sys.exit("%s: lanes %s" % (f, l))' /tmp/pl-a.stats /tmp/pl-b.stats 2> /tmp/pl-lanes ||
	plwhy="$plwhy; $(cat /tmp/pl-lanes)"
if [ -z "$plwhy" ]; then
	pass=$((pass + 1)); grep -h "lane to" /tmp/pl-a /tmp/pl-b
	echo "PASS pipeline_across_processes_on_lanes (2 links, one QP, every flow as in one process)"
else
	fail=$((fail + 1)); grep -vhE "^(TELEMETRY|EAL)" /tmp/pl-a /tmp/pl-b | tail -30
	echo "FAIL pipeline_across_processes_on_lanes: $plwhy"
fi
port=$((port + 10))
# Connections (lib/conn): 1000 over one channel pair, so one QP each way.
pair conn_1000_connections_one_qp_each_way conn 50000

# Two host services (rb2-raasd, host ids 1 and 2) linked over verbs, an
# application on each (their secondaries, so hugepages): 1000 connections
# from one to the other, through both services and one QP each way; then
# service 2 killed under 200 more: the application on 1 has every one reset.
# Here the services' link is WRITE_WITH_IMM, its receives from each device's
# shared receive queue (RaaS's receive side); suite-two.sh runs the default.
raas() { # TAG: both services' and applications' output, then the verdict
	cat /tmp/raasd-1 /tmp/raasd-2 /tmp/raas-* 2>/dev/null | grep -vE "^(TELEMETRY|EAL)"
}
echo 256 > /proc/sys/vm/nr_hugepages
mkdir -p /dev/hugepages && { mountpoint -q /dev/hugepages || mount -t hugetlbfs nodev /dev/hugepages; }
raasd=$RB2_BUILD/apps/rb2-raasd/rb2-raasd app=$RB2_BUILD/tests/test_raas_app
sec() { echo "-l $1 --no-pci --proc-type=secondary --file-prefix rs$2 --log-level lib.eal:error"; }
for h in 1 2; do
	other=$((3 - h))
	"$raasd" -l $((h - 1)) --no-pci -m 256 --file-prefix rs$h --base-virtaddr=0x$((h + 1))00000000000 \
		--log-level lib.eal:error -- --host-id $h --listen $ip:2090$h \
		--peer $other@$ip:2090$other --transport verbs,srq=512 --peer-sync push+imm \
		> /tmp/raasd-$h 2>&1 &
	eval raasd_$h=$!
done
for _ in $(seq 600); do
	grep -q ready /tmp/raasd-1 && grep -q ready /tmp/raasd-2 && break
	sleep 0.1
done
"$app" $(sec 0 1) -- server srv 7 1000 20 > /tmp/raas-srv 2>&1 & s=$!
sleep 1
RB2_TEST_HOST=1 "$app" $(sec 1 2) -- client cli 7 1000 20 > /tmp/raas-cli 2>&1; crc=$?
wait $s; src=$?
if [ $src -eq 0 ] && [ $crc -eq 0 ] && grep -q "shared receive queue of 512" /tmp/raasd-1 &&
	grep -q "shared receive queue of 512" /tmp/raasd-2; then
	pass=$((pass + 1)); raas; echo "PASS raasd_two_services_over_verbs_1000_connections (WRITE_WITH_IMM, receives from an SRQ)"
else
	fail=$((fail + 1)); raas; echo "FAIL raasd_two_services_over_verbs (server $src, client $crc)"
fi
# Each side says when it is ready (listening; all 200 open): under TCG a
# fixed wait was sometimes too short for service 2 to take the application.
said() { # FILE PATTERN: until FILE has it, 60 s at most
	for _ in $(seq 600); do grep -q "$2" "$1" && return 0; sleep 0.1; done
	return 1
}
"$app" $(sec 0 1) -- orphan orph 8 200 > /tmp/raas-orph 2>&1 & o=$!
said /tmp/raas-orph "listening on"
RB2_TEST_HOST=1 "$app" $(sec 1 2) -- linger ling 8 200 connect > /tmp/raas-ling 2>&1 & l=$!
said /tmp/raas-ling "connections open"
kill -9 $raasd_2
t0=$(date +%s%N)
wait $o; orc=$?; wait $l; lrc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
if [ $orc -eq 0 ] && [ $lrc -eq 0 ]; then
	pass=$((pass + 1)); raas; echo "PASS raasd_peer_service_killed_every_connection_reset ($ms ms)"
else
	fail=$((fail + 1)); raas; echo "FAIL raasd_peer_service_killed (orphan $orc, linger $lrc, $ms ms)"
fi
kill $raasd_1 2>/dev/null; wait $raasd_1 2>/dev/null
rm -f /dev/hugepages/rs*map_*
# The other sync policies of §IV-A over a real QP: WRITE_WITH_IMM is native
# here (receive completions, re-posted receives, credits), lazy pull READs.
for sync in push+imm pull+wt pull+imm push+poll; do
	RB2_TEST_SYNC=$sync pair stream_$sync stream 50000
	RB2_TEST_SYNC=$sync pair latency_$sync lat 5000
done
# Each ran the policy it asked for (test_verbs prints it).
for sync in push+imm pull+wt pull+imm push+poll; do
	n=$(grep -c "^sync policy" /tmp/stream_$sync.s /tmp/latency_$sync.s 2>/dev/null | awk -F: '{s += $2} END {print s + 0}')
	[ "$n" -ge 2 ] || { fail=$((fail + 1)); echo "FAIL policy_$sync not applied"; }
done

# A peer that fails mid-stream. Its process killed (rdma_cm reports the
# DISCONNECT); or a fault that moves the receiver's QP to the error state
# (the driver's probe finds it; the sender's retries run out). Both sides
# fail with a named error within test_verbs' bound (DEATH_BOUND_S), and the
# receiver has delivered, in order, every message published to it.
death() { # NAME TEST
	local name=$1 test=$2 inject=
	port=$((port + 10))
	[ "$test" = qperr ] && inject=3000
	RB2_VERBS_INJECT_QP_ERROR_MS=$inject "$tv" $(eal 0 s$port) -- server "$test" "$ip:$port" \
		> /tmp/$name.s 2>&1 &
	local spid=$!
	sleep 0.5
	"$tv" $(eal 1 c$port) -- client "$test" "$ip:$port" > /tmp/$name.c 2>&1 &
	local cpid=$! crc=0
	if [ "$test" = kill ]; then
		for _ in $(seq 600); do grep -q "^kill: streaming" /tmp/$name.s && break; sleep 0.1; done
		kill -9 $cpid
		wait $cpid
	else
		wait $cpid; crc=$?
	fi
	wait $spid
	verdict "$name" $? $crc
}
death peer_process_killed kill
death qp_forced_to_error qperr

# One process, both halves over rxe0: the QPs connected to each other
# directly (rb2_chan_pair), every design and sync pair, content checked.
perf=$RB2_BUILD/apps/rb2-perf/rb2-perf
for preset in rb2 farm socksdirect l5 pull+cq pull+poll; do
	if timeout 300 "$perf" $(eal 0-1 lp) -- --transport verbs,dev=rxe0 --size 200 \
		--count 20000 --rounds 1 --slots 256 --designs $preset \
		--json /tmp/lp.json > /tmp/lp.out 2>&1 && grep -q '"errors": 0' /tmp/lp.json &&
		! grep -q '"errors": [1-9]' /tmp/lp.json; then
		pass=$((pass + 1)); echo "PASS local_pair_$preset"
	else
		fail=$((fail + 1)); echo "FAIL local_pair_$preset"
		grep -vE "^(TELEMETRY|EAL)" /tmp/lp.out | tail -12
	fi
done

# L5's own ring (rb2-nf --preset l5: the link runs via = l5) over rxe0, in
# one process: the same flows as the RB2 channel's, and L5's WRITEs posted.
l5why=""
for preset in rb2 l5; do
	timeout -k 5 300 "$nf" $(eal 0-1 nl5) -- --trace /tmp/pl.pcap --transport verbs,dev=rxe0 \
		--preset $preset --top 3 --flows 4096 --json /tmp/nl5-$preset.json \
		--stats-json /tmp/nl5-$preset.stats > /tmp/nl5-$preset 2>&1 ||
		l5why="$l5why; --preset $preset exited $?: $(grep -vE '^(TELEMETRY|EAL)' /tmp/nl5-$preset | tail -5)"
	grep -v cycles_per_record /tmp/nl5-$preset.json > /tmp/nl5-$preset.cmp 2>/dev/null
done
cmp -s /tmp/nl5-rb2.cmp /tmp/nl5-l5.cmp && [ -s /tmp/nl5-l5.cmp ] ||
	l5why="$l5why; the flows differ: $(diff /tmp/nl5-rb2.cmp /tmp/nl5-l5.cmp 2>&1 | head -c 400)"
python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
l, n = d["l5_links"], [s for s in d["stages"] if s["type"] == "measure"][0]["counters"]["records"]
sys.exit(not (len(l) == 1 and n > 0 and l[0]["received"] == n and l[0]["writes"] >= 2 * n))' \
	/tmp/nl5-l5.stats 2>/dev/null || l5why="$l5why; L5's counters: $(grep -o '"l5_links.*' /tmp/nl5-l5.stats)"
if [ -z "$l5why" ]; then
	pass=$((pass + 1)); echo "PASS nf_l5_ring_over_rxe"
else
	fail=$((fail + 1)); echo "FAIL nf_l5_ring_over_rxe:$l5why"
fi

echo "verbs suite: $pass passed, $fail failed"
[ $fail -eq 0 ]
