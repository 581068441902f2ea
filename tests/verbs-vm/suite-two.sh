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

# Wait for a service (PID) to say "ready" in FILE, for at most 90 s of wall
# time, and not a moment past its death (TCG makes a loop of short sleeps
# minutes long). Its log is printed when it never got there.
ready() { # FILE PID
	local until=$((SECONDS + 90))
	until grep -q ready "$1"; do
		if ! kill -0 "$2" 2>/dev/null || [ $SECONDS -ge $until ]; then
			echo "INFO the service never said ready: $(tail -5 "$1" | tr '\n' ' ')"
			return 1
		fi
		sleep 0.2
	done
}

# 50000 messages: about 20 s at the 2,300 a second TCG carries across the
# wire, hundreds of times round the ring.
run stream stream 21000 50000
# The admission window across the wire: 8 channels from one lcore to one
# lcore, a QP each, without a window and with 6 WRs in flight per QP at
# most (RB2_TX_CHAIN_MAX, the least); then the same 8 on one lane a side
# (--lane: one QP across the wire, its later channels told out of band),
# without a window, with 6 for the lane's QP as a whole, and with 48 (what
# the 8 QPs had in flight together). Every
# message checked on arrival (rb2-perf counts the errors), and the client
# says how often a window deferred and how many WRs a QP had in flight.
perf=$RB2_BUILD/apps/rb2-perf/rb2-perf
i=0
for v in 0 6 lane0 lane6 lane48; do
	port=$((21400 + i * 10)); i=$((i + 1))
	w=${v#lane}; lane=; [ "$v" != "$w" ] && lane=--lane
	name=admission_window_${w}_8_channels${lane:+_on_one_lane}
	if [ $side = server ]; then
		timeout -k 5 300 "$perf" -l 0-1 --no-pci --no-huge -m 512 --file-prefix adm$v \
			--log-level lib.eal:error -- --transport verbs,dev=rxe0 --mode bw --server \
			--channels 8 --size 64 --count 20000 --rounds 3 --port $port $lane \
			--json /tmp/adm$v.json > /tmp/adm$v 2>&1
	else
		sleep 1
		timeout -k 5 300 "$perf" -l 0-1 --no-pci --no-huge -m 512 --file-prefix adm$v \
			--log-level lib.eal:error -- --transport verbs,dev=rxe0 --mode bw --client "$addr" \
			--channels 8 --size 64 --count 20000 --rounds 3 --port $port --max-inflight $w \
			$lane --json /tmp/adm$v.json > /tmp/adm$v 2>&1
	fi
	rc=$?
	grep -vE "^(TELEMETRY|EAL|rb2_xport)" /tmp/adm$v
	if [ $rc -eq 0 ] && grep -q '"role": "'$side'"' /tmp/adm$v.json &&
		{ [ $side = server ] || [ -z "$lane" ] || grep -q '"lane": true' /tmp/adm$v.json; }; then
		pass=$((pass + 1)); echo "PASS two_guests_$name ($side)"
	else
		fail=$((fail + 1)); echo "FAIL two_guests_$name ($side, $rc)"
	fi
done

# Adaptive polling across the wire, where a publication can land after the
# receiver's last look: the sender's idle look at the sleep word wakes it
# (the TSCs of two guests differ: the run's length bounds the waits).
RB2_TEST_STAMPS=0 run sleep sleep 21100 300
# Connections (lib/conn): 1000 over one channel pair across the wire; the
# way back is a channel the server opens to the client (B, .2).
RB2_TEST_BACK=169.254.77.2:21201 run conn conn 21200 50000

# A host service (rb2-raasd) on each guest, linked over the wire (host ids
# 1 and 2, one QP each way); an application on each, their secondaries:
# 1000 connections from B's to A's, through both services.
echo 256 > /proc/sys/vm/nr_hugepages
mkdir -p /dev/hugepages && { mountpoint -q /dev/hugepages || mount -t hugetlbfs nodev /dev/hugepages; }
me=1 other=2 mine=169.254.77.1 theirs=169.254.77.2
[ $side = client ] && me=2 other=1 mine=169.254.77.2 theirs=169.254.77.1
"$RB2_BUILD/apps/rb2-raasd/rb2-raasd" -l 0 --no-pci -m 256 --file-prefix rs --log-level lib.eal:error \
	-- --host-id $me --listen $mine:21300 --peer $other@$theirs:21300 > /tmp/raasd 2>&1 &
rpid=$!
ready /tmp/raasd $rpid
sec="-l 0 --no-pci --proc-type=secondary --file-prefix rs --log-level lib.eal:error"
if [ $side = server ]; then
	"$RB2_BUILD/tests/test_raas_app" $sec -- server srv 7 1000 20 > /tmp/raas-app 2>&1; rc=$?
else
	sleep 2
	RB2_TEST_HOST=1 "$RB2_BUILD/tests/test_raas_app" $sec -- client cli 7 1000 20 > /tmp/raas-app 2>&1; rc=$?
fi
sleep 2      # the other side's last frames through this service
kill $rpid; wait $rpid
grep -vE "^(TELEMETRY|EAL)" /tmp/raasd /tmp/raas-app
if [ $rc -eq 0 ]; then pass=$((pass + 1)); echo "PASS two_guests_raasd_1000_connections ($side)"
else fail=$((fail + 1)); echo "FAIL two_guests_raasd_1000_connections ($side, $rc)"; fi
rm -f /dev/hugepages/rsmap_*

# Lent messages through both services (RaaS's registered sends): B's
# application lends buffers of its shared memory; its service registers
# them (a cache: each buffer used again is a hit) and passes the
# descriptor on; A's service READs each straight into A's application's
# buffer (zero copy), or into a bounce buffer for private memory.
"$RB2_BUILD/apps/rb2-raasd/rb2-raasd" -l 0 --no-pci -m 256 --file-prefix rs --log-level lib.eal:error \
	-- --host-id $me --listen $mine:21320 --peer $other@$theirs:21320 > /tmp/raasd-lend 2>&1 &
rpid=$!
ready /tmp/raasd-lend $rpid
if [ $side = server ]; then
	"$RB2_BUILD/tests/test_raas_app" $sec -- borrower bor 7 4 24 > /tmp/raas-lend 2>&1; rc=$?
else
	sleep 2
	RB2_TEST_HOST=1 "$RB2_BUILD/tests/test_raas_app" $sec -- lender len 7 4 24 > /tmp/raas-lend 2>&1; rc=$?
fi
sleep 2      # the other side's last frames through this service
kill $rpid; wait $rpid
grep -vE "^(TELEMETRY|EAL)" /tmp/raasd-lend /tmp/raas-lend
# The server's service READ every lent message (72, in place and bounced);
# the client's registered its 8 buffers (each used 9 times) through the
# cache: most gets hit, and it registered far fewer times than it lent (a
# buffer that straddles pages registered before is a partial hit, which
# registers the rest: one run had 58 hits, 7 partial, 7 misses, 14
# registrations).
if [ $side = server ]; then
	grep -q "lent buffers: 72 lent .* 72 READ from peers" /tmp/raasd-lend; sv=$?
else
	sed -n 's/.*registrations raasd-tx.1: 72 gets, \([0-9]*\) hits, .* \([0-9]*\) registrations.*/\1 \2/p' \
		/tmp/raasd-lend | { read -r hits regs && [ "$hits" -ge 48 ] && [ "$regs" -le 24 ]; }; sv=$?
fi
if [ $rc -eq 0 ] && [ $sv -eq 0 ]; then pass=$((pass + 1)); echo "PASS two_guests_raasd_lent_messages ($side)"
else fail=$((fail + 1)); echo "FAIL two_guests_raasd_lent_messages ($side, $rc, $sv)"; fi
rm -f /dev/hugepages/rsmap_*

# The case studies across the wire, through the two services: rb2-kv and
# rb2-http serve in A, their clients run in B (YCSB workload A, every value
# checked; GETs, every body checked byte for byte against the same files,
# made from one seed on both sides). B says it is done with a TCP connect.
python3 - <<'PY'
import os, random
rnd = random.Random(7)
os.makedirs("/tmp/www", exist_ok=True)
for i, size in enumerate((1024, 4096, 70000)):
    open(f"/tmp/www/f{i}.bin", "wb").write(bytes(rnd.getrandbits(8) for _ in range(size)))
PY
"$RB2_BUILD/apps/rb2-raasd/rb2-raasd" -l 0 --no-pci -m 256 --file-prefix rs --log-level lib.eal:error \
	-- --host-id $me --listen $mine:21310 --peer $other@$theirs:21310 > /tmp/raasd2 2>&1 &
rpid=$!
ready /tmp/raasd2 $rpid
if [ $side = server ]; then
	"$RB2_BUILD/apps/rb2-kv/rb2-kv" $sec -- server --port 7100 --records 20000 > /tmp/kv-srv 2>&1 &
	kvp=$!
	"$RB2_BUILD/apps/rb2-http/rb2-http" $sec -- server --port 7200 --root /tmp/www \
		> /tmp/http-srv 2>&1 &
	hp=$!
	python3 -c "
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('$mine', 21400)); s.listen(1); s.settimeout(900); s.accept()" ||
		echo "INFO the client guest never said it was done"
	kill -INT $kvp $hp; wait $kvp $hp
	grep -vE "^(TELEMETRY|EAL)" /tmp/kv-srv /tmp/http-srv
	if grep -q "stopped: .* gets ([1-9]" /tmp/kv-srv && grep -q "stopped" /tmp/http-srv; then
		pass=$((pass + 1)); echo "PASS two_guests_case_study_servers (served, stopped cleanly)"
	else
		fail=$((fail + 1)); echo "FAIL two_guests_case_study_servers"
	fi
else
	sleep 5
	"$RB2_BUILD/apps/rb2-kv/rb2-kv" $sec -- client --host 1 --port 7100 --workload a \
		--records 1000 --operations 2000 --conns 4 --depth 2 --quiet > /tmp/kv-cli 2>&1
	krc=$?
	"$RB2_BUILD/apps/rb2-http/rb2-http" $sec -- client --host 1 --port 7200 --files /tmp/www \
		--requests 200 --conns 4 --quiet > /tmp/http-cli 2>&1
	hrc=$?
	python3 -c "import socket; socket.create_connection(('$theirs', 21400), timeout=30)" ||
		echo "INFO could not tell the server guest"
	grep -vE "^(TELEMETRY|EAL)" /tmp/kv-cli /tmp/http-cli
	if [ $krc -eq 0 ]; then pass=$((pass + 1)); echo "PASS two_guests_kv_ycsb_a (every value checked)"
	else fail=$((fail + 1)); echo "FAIL two_guests_kv_ycsb_a ($krc)"; fi
	if [ $hrc -eq 0 ]; then pass=$((pass + 1)); echo "PASS two_guests_http_gets (every body byte for byte)"
	else fail=$((fail + 1)); echo "FAIL two_guests_http_gets ($hrc)"; fi
fi
sleep 2
kill $rpid; wait $rpid
rm -f /dev/hugepages/rsmap_*
run elastic elastic 21010 10000
if [ $side = client ]; then
	d=$(sed -n 's/.*, \([0-9]*\) deferred tail syncs.*/\1/p' /tmp/elastic)
	if [ "${d:-0}" -gt 0 ]; then pass=$((pass + 1)); echo "PASS two_guests_elastic_threshold_defers ($d deferrals)";
	else fail=$((fail + 1)); echo "FAIL two_guests_elastic_threshold_defers (none)"; fi
fi
# The other tail syncs across the wire: native WRITE_WITH_IMM (receive
# completions, credits) and FaRM's poll message (lengths landing byte by
# byte while the receiver polls).
RB2_TEST_SYNC=push+imm run stream_imm stream 21030 15000
RB2_TEST_SYNC=push+poll run stream_poll stream 21040 15000
grep -q "tail WRITE_WITH_IMM" /tmp/stream_imm && grep -q "tail poll message" /tmp/stream_poll ||
	{ fail=$((fail + 1)); echo "FAIL two_guests_sync_policies (not the policies asked for)"; }
# Faults on the wire: netem on each guest's side of the link (both ways).
# RC retransmits what is lost and reorders nothing it delivers, so every
# message must still arrive exactly once, in order, and the sender must see
# everything released.
netem() { # NAME PORT COUNT NETEM-ARGS...
	local name=$1 port=$2 count=$3; shift 3
	tc qdisc replace dev eth0 root netem "$@" || { fail=$((fail + 1)); echo "FAIL netem $*"; return; }
	echo "INFO netem $* ($side)"
	run "$name" stream "$port" "$count"
	tc qdisc del dev eth0 root
}
modprobe sch_netem
netem netem_loss_1pct 21100 10000 loss 1%
netem netem_loss_10pct 21110 1000 loss 10%
netem netem_delay_jitter 21120 5000 delay 2ms 1ms
netem netem_reorder 21130 10000 delay 4ms reorder 25% 50%
netem netem_duplicate_corrupt 21140 10000 duplicate 1% corrupt 0.5%

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
loop = \${loop:-1}
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

# Packets from a port across hosts: rx on B reads a capture through net_pcap
# into mbufs; the packet link over verbs carries their bytes (carry = auto:
# the transport is remote); parse and measure on A. A checks every flow
# against the same capture replayed in one process; B checks that every
# mbuf went back to its pool.
"$RB2_BUILD/apps/rb2-tracegen/rb2-tracegen" -o /tmp/port.pcap --packets 50000 --flows 2000 \
	--ipv6 0.1 --nonip 0.01 --snaplen 65535 --seed 12 > /dev/null
cat > /tmp/port.ini <<EOF
[stage rx]
type = rx
proc = rx
lcore = 0
port = net_pcap0
idle_ms = 2000
pool_size = 4095
[stage parse]
type = parse
proc = measure
lcore = 0
[stage measure]
type = measure
proc = measure
lcore = 0
flows = 10000
json = \${json:-}
[link pkts]
from = rx
to = parse
transport = verbs,dev=rxe0
peer = $addr:21060
timeout_ms = 60000
slots = 1024
slot_size = 256
[link records]
from = parse
to = measure
EOF
if [ $side = server ]; then
	"$nf" $eal -- --config /tmp/port.ini --proc measure --json /tmp/port-two.json > /tmp/port-two 2>&1
	rc=$?
	"$nf" $eal -- --config /tmp/nf-one.ini --trace /tmp/port.pcap --json /tmp/port-one.json \
		> /tmp/port-one 2>&1
	grep -hE "^measure '" /tmp/port-two /tmp/port-one
	grep -v cycles_per_record /tmp/port-one.json > /tmp/port-one.cmp
	grep -v cycles_per_record /tmp/port-two.json > /tmp/port-two.cmp 2>/dev/null
	if [ $rc -eq 0 ] && [ -s /tmp/port-two.cmp ] && cmp -s /tmp/port-one.cmp /tmp/port-two.cmp; then
		pass=$((pass + 1)); echo "PASS two_guests_port_packets_over_verbs (every flow as replayed in one process)"
	else
		fail=$((fail + 1)); echo "FAIL two_guests_port_packets_over_verbs ($rc)"; cat /tmp/port-two /tmp/port-one
	fi
else
	sleep 1
	if "$nf" $eal --vdev net_pcap0,rx_pcap=/tmp/port.pcap -- --config /tmp/port.ini --proc rx \
		> /tmp/port-rx 2>&1 && grep -q "50000 packets received" /tmp/port-rx &&
		grep -q ": 0 of 4095 mbufs in use after the run" /tmp/port-rx; then
		pass=$((pass + 1)); echo "PASS two_guests_port_rx_over_verbs (50000 packets, every mbuf back)"
	else
		fail=$((fail + 1)); echo "FAIL two_guests_port_rx_over_verbs"; cat /tmp/port-rx
	fi
fi

# Ctrl-C on the measure guest stops the whole pipeline across the wire: the
# stopping receiver asks its sender to stop (a notice WRITE), the looping
# replay on B stops its source and ends the stream, both drain and exit 0,
# and every record sent was measured (run.sh compares the two counts).
sed 's/:21020$/:21300/' /tmp/nf.ini > /tmp/nf-stop.ini
if [ $side = server ]; then
	"$nf" $eal -- --config /tmp/nf-stop.ini --proc measure --json /tmp/stop.json \
		> /tmp/nf-stop 2>&1 &
	mp=$!
	for _ in $(seq 1200); do grep -q "^rb2-nf: running" /tmp/nf-stop && break; sleep 0.1; done
	sleep 5
	kill -INT $mp
	t0=$(date +%s%N)
	for _ in $(seq 300); do kill -0 $mp 2>/dev/null || break; sleep 0.1; done
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	kill -9 $mp 2>/dev/null
	wait $mp; rc=$?
	got=$(python3 -c "import json; print(json.load(open('/tmp/stop.json'))['totals']['packets'])" 2>/dev/null)
	echo "stop_over_verbs: measured ${got:-none}"
	if [ $rc -eq 0 ] && [ -n "$got" ] && grep -q "stopped, drained" /tmp/nf-stop; then
		pass=$((pass + 1)); echo "PASS two_guests_ctrl_c_stops_across_hosts (server: exit 0 after $ms ms)"
	else
		fail=$((fail + 1)); echo "FAIL two_guests_ctrl_c_stops_across_hosts (server $rc, $ms ms)"
		cat /tmp/nf-stop
	fi
else
	timeout 300 "$nf" $eal -- --config /tmp/nf-stop.ini --proc replay --trace /tmp/nf.pcap \
		--loop 0 --stats-json /tmp/stop-stats.json > /tmp/nf-stop 2>&1
	rc=$?
	sent=$(python3 -c "import json; d = json.load(open('/tmp/stop-stats.json')); print([s for s in d['stages'] if s['name'] == 'replay'][0]['edges']['out']['msgs'])" 2>/dev/null)
	echo "stop_over_verbs: sent ${sent:-none}"
	if [ $rc -eq 0 ] && [ -n "$sent" ] && grep -q "a receiver asked to stop" /tmp/nf-stop; then
		pass=$((pass + 1)); echo "PASS two_guests_replay_stopped_by_its_receiver (client)"
	else
		fail=$((fail + 1)); echo "FAIL two_guests_replay_stopped_by_its_receiver (client $rc)"
		cat /tmp/nf-stop
	fi
fi

# rb2-run across the wire: its helpers, and each guest's rb2-sockd started.
. "$(dirname "${BASH_SOURCE[0]}")/rb2run-two.sh"
# 2 MB each way is four turns of the 512 KiB ring; under reordering, which
# RC repairs by retransmitting after a timeout, 2 MB took a minute: 1 MB,
# two turns, there.
# With 2 ms of delay, writes made while one is in flight are batched
# (the guide's "Small writes batch"): the bytes must still be whole.
rr_netem netem_loss 21600 2000000 "$verbs_line" loss 1%
rr_netem netem_reorder 21605 1000000 "; [1-9][0-9]* writes batched" delay 2ms reorder 25% 50%
# The bound on a hold: "b", written while "a" is in flight (2 ms each
# way), is held; the writer then sleeps in a call rb2-run does not wrap, so
# only the batching thread can send "b", within RB2_RUN_BATCH_US (500 us).
# Without that thread, "b" would wait for the next write, a second later.
rr_bound() { # PORT
	local ms rc
	tc qdisc replace dev eth0 root netem delay 2ms
	if [ $side = server ]; then
		timeout -k 5 120 "$rrun" -- python3 "$rpeer" pairs "$1" 5 > /tmp/rr-bound 2>&1
		rc=$?
		ms=$(sed -n 's/^pairs 5 of 5, b after a at most \([0-9.]*\) ms$/\1/p' /tmp/rr-bound)
		echo "INFO a held write came ${ms:-?} ms after the one in flight (at most, of 5)"
		[ $rc = 0 ] && ! awk -v m="${ms:-1e9}" 'BEGIN { exit !(m < 250) }' &&
			rc="held ${ms:-?} ms, not < 250"
		rr_result batching_bound "$rc" /tmp/rr-bound "$verbs_line"
	else
		rr_wait_listener "$1"
		timeout -k 5 120 "$rrun" -- python3 "$rpeer" twice "$1" 5 > /tmp/rr-bound 2>&1
		rr_result batching_bound $? /tmp/rr-bound "pairs 5 of 5" "$verbs_line" \
			"; [1-9][0-9]* writes batched ([1-9][0-9]* batches sent by a flush)"
	fi
	tc qdisc del dev eth0 root
}
rr_bound 21607
# A wait over many streams asks the device only for those that woke, and
# reads only their channels: 16 connections in one epoll set, 300 round
# trips on one of them. A CQ armed and not yet fired is not armed again, so
# the stats line's wake-ups are far fewer than its sleeps (one per stream
# waited on, each time); were every stream's CQ armed at every sleep, they
# would be as many. A channel the wait did not see readable is not read, so
# its reads are as few; were every armed stream's read on waking (a system
# call each), they would be as many as the sleeps.
rr_sleeps() { # PORT
	local f=/tmp/rr-sleeps rc sl wk rd ah
	if [ $side = server ]; then
		RB2_RUN_AHEAD=2 timeout -k 5 120 "$rrun" -- python3 "$rpeer" echo-all "$1" 16 > $f 2>&1
	else
		rr_wait_listener "$1"
		RB2_RUN_AHEAD=2 timeout -k 5 120 "$rrun" -- python3 "$rpeer" busy-one "$1" 16 300 > $f 2>&1
	fi
	rc=$?
	sl=$(sed -n 's/.*; \([0-9]*\) sleeps asked the device for \([0-9]*\) wake-ups.*/\1/p' $f)
	wk=$(sed -n 's/.*; \([0-9]*\) sleeps asked the device for \([0-9]*\) wake-ups.*/\2/p' $f)
	rd=$(sed -n 's/.* wake-ups and read its channels \([0-9]*\) times.*/\1/p' $f)
	echo "INFO 16 streams, one busy: ${sl:-?} sleeps, ${wk:-?} wake-ups asked, channels read ${rd:-?} times ($side)"
	[ $rc = 0 ] && ! [ "${sl:-0}" -ge 300 -a $((${wk:-0} * 4)) -lt "${sl:-0}" ] &&
		rc="${wk:-?} wake-ups asked for ${sl:-?} sleeps: want >= 300 sleeps, under a quarter"
	[ "$rc" = 0 ] && ! { [ -n "$rd" ] && [ $((rd * 4)) -lt "${sl:-0}" ]; } &&
		rc="channels read ${rd:-?} times for ${sl:-?} sleeps: want under a quarter"
	rr_result sleeps_ask_and_read_only_what_woke "$rc" $f "16 connections over rb2" "$verbs_line"
	# With RB2_RUN_AHEAD=2, of 16 connects or accepts one after another,
	# the first two make their ends, the second starts the thread that
	# makes the next ones ahead, and the others take them.
	ah=$(sed -n 's/.*; \([0-9]*\) of their ends made ahead.*/\1/p' $f)
	echo "INFO ${ah:-?} of 16 ends made ahead ($side)"
	grep "rb2-run: pid" $f > $f.ahead
	rr_result ends_made_ahead 0 $f.ahead "; [1-9][0-9]* of their ends made ahead"
}
rr_sleeps 21608
# A writer ahead of a reader that sleeps 5 s: 2000 writes of 16 B use up the
# reader's 64 credits, and the last ones wait for them, held. The writer then
# sleeps 2 s in a call rb2-run does not wrap, so only rb2-run's own thread
# can send them once the credits come back. While they do not, that thread
# backs off: the process took 43 ms of CPU in the 2 s, against 353 ms when
# the thread tried every RB2_RUN_BATCH_US. The check fails above an eighth
# of the sleep, which leaves room for TCG's 4x swings. The writer's read
# after its sleep must sleep with a write still held: the reader's 5 s
# leave 3 s for the writer's connect and writes, which take over a second
# when TCG runs slow. Every byte arrives.
rr_ahead() { # PORT
	local f=/tmp/rr-ahead rc cpu wall
	if [ $side = server ]; then
		timeout -k 5 120 "$rrun" -- python3 "$rpeer" late "$1" 2000 5 > $f 2>&1
		rr_result writer_ahead_idles "$?" $f "late: 32000 of 32000 bytes, whole" "$verbs_line"
	else
		rr_wait_listener "$1"
		timeout -k 5 120 "$rrun" -- python3 "$rpeer" ahead "$1" 2000 2 > $f 2>&1
		rc=$?
		cpu=$(sed -n 's/^ahead: .* then \([0-9]*\) ms of CPU in \([0-9]*\) ms asleep.*/\1/p' $f)
		wall=$(sed -n 's/^ahead: .* then \([0-9]*\) ms of CPU in \([0-9]*\) ms asleep.*/\2/p' $f)
		echo "INFO a writer ahead of its reader, asleep: ${cpu:-?} ms of CPU in ${wall:-?} ms"
		[ $rc = 0 ] && ! [ $((${cpu:-99999} * 8)) -lt "${wall:-0}" ] &&
			rc="${cpu:-?} ms of CPU in ${wall:-?} ms asleep: over an eighth of a core"
		rr_result writer_ahead_idles "$rc" $f "$verbs_line" \
			"times, [1-9][0-9]* of them with a write held for the reader's credits"
	fi
}
rr_ahead 21611
# A writer that exits with its connection open, ahead of a reader that
# sleeps 3 s: its last writes wait for the reader's credits when it exits.
# The kernel would go on sending a dead process's bytes, then the FIN; here
# they would die with its queues, so rb2-run's exit handler sends them and
# the end first, waiting (at most 10 s) for the reader. The reader gets all
# 32000 bytes, then the end. Without the handler it gets part, then a reset
# (never the end after part: rb2_stream.c's at_eof()).
rr_exit_ahead() { # PORT
	local f=/tmp/rr-exit-ahead rc
	if [ $side = server ]; then
		timeout -k 5 120 "$rrun" -- python3 "$rpeer" late-end "$1" 2000 3 > $f 2>&1
		rr_result exit_sends_the_end "$?" $f "late-end: 32000 of 32000 bytes, whole, then the end" \
			"$verbs_line"
	else
		rr_wait_listener "$1"
		timeout -k 5 120 "$rrun" -- python3 "$rpeer" exit-ahead "$1" 2000 > $f 2>&1
		rc=$?
		grep -q "could not send their end" $f && rc="its exit could not send the end"
		rr_result exit_sends_the_end "$rc" $f "exiting with the socket open" "$verbs_line"
	fi
}
rr_exit_ahead 21612
# The same writer closes instead: kernel TCP's close returns at once and
# sends the rest behind it, and so does rb2-run's, in a thread of its own
# that holds the kernel socket until the end is sent (the FIN after it).
# The check fails if the close took a second or more: blocking, it waited
# for the reader's 3 s sleep (2836 ms). The reader gets all 32000 bytes,
# then the end; the writer's exit waits for the close in the background.
# With SO_LINGER on, the program asked to wait: the close blocks until the
# reader has taken everything (it must take a second or more), and nothing
# goes to the background; the reader gets the same.
rr_close_ahead() { # NAME PORT [linger]
	local f=/tmp/rr-$1 rc ms linger=${3:-}
	if [ $side = server ]; then
		timeout -k 5 120 "$rrun" -- python3 "$rpeer" late-end "$2" 2000 3 > $f 2>&1
		rr_result "$1" "$?" $f "late-end: 32000 of 32000 bytes, whole, then the end" \
			"$verbs_line"
	else
		rr_wait_listener "$2"
		timeout -k 5 120 "$rrun" -- python3 "$rpeer" close-ahead "$2" 2000 $linger > $f 2>&1
		rc=$?
		ms=$(sed -n 's/^close-ahead: .* the close took \([0-9]*\) ms$/\1/p' $f)
		echo "INFO a close ahead of its reader${linger:+ (SO_LINGER)} took ${ms:-?} ms"
		grep -q "could not send their end" $f && rc="its exit could not send the end"
		if [ -z "$linger" ]; then
			[ "$rc" = 0 ] && ! [ "${ms:-99999}" -lt 1000 ] && rc="the close took ${ms:-?} ms"
			rr_result "$1" "$rc" $f "$verbs_line" \
				"; 1 closed while their readers lagged, finished in the background"
		else
			[ "$rc" = 0 ] && ! [ "${ms:-0}" -ge 1000 ] && rc="the close took ${ms:-?} ms"
			grep -q "finished in the background" $f && rc="the close went to the background"
			rr_result "$1" "$rc" $f "$verbs_line"
		fi
	fi
}
rr_close_ahead close_returns_at_once 21613
rr_close_ahead close_with_linger_waits 21614 linger
# Four such closes at once, one process: one closer thread finishes them
# all, where a thread per close made four. The check fails if the closes
# left the process more than one thread richer, if one took a second or
# more, or if a reader got less than everything, then the end. The reader
# reads the four as they become readable (epoll), as a server does: a
# reader that reads them one after another holds up the closes of those it
# has not come to, and the exit's 10 s once ran out on the last two (the
# guide's Limits).
rr_close_many() { # NAME PORT
	local f=/tmp/rr-$1 rc ms more
	if [ $side = server ]; then
		timeout -k 5 120 "$rrun" -- python3 "$rpeer" late-end "$2" 2000 3 4 > $f 2>&1
		rr_result "$1" "$?" $f "late-end: 32000 of 32000 bytes, whole, then the end" \
			"$verbs_line"
	else
		rr_wait_listener "$2"
		timeout -k 5 120 "$rrun" -- python3 "$rpeer" close-ahead "$2" 2000 4 > $f 2>&1
		rc=$?
		ms=$(sed -n 's/^close-ahead: .* the longest close took \([0-9]*\) ms.*$/\1/p' $f)
		more=$(sed -n 's/^close-ahead: .*; \([0-9-]*\) threads more after the closes$/\1/p' $f)
		echo "INFO 4 closes ahead of their readers: the longest took ${ms:-?} ms, ${more:-?} threads more"
		grep -q "could not send their end" $f && rc="its exit could not send the end"
		[ "$rc" = 0 ] && ! [ "${ms:-99999}" -lt 1000 ] && rc="a close took ${ms:-?} ms"
		[ "$rc" = 0 ] && ! [ "${more:-99}" -le 1 ] && rc="${more:-?} threads more after the closes"
		rr_result "$1" "$rc" $f "$verbs_line" \
			"; 4 closed while their readers lagged, finished in the background"
	fi
}
rr_close_many closes_share_one_thread 21615
# Eight such closes with 50 ms of delay each way (netem, both sides): once
# a close has sent everything and its end, the wait for them to land (a
# fence, a round trip) is stepped beside the other closes. Finished one
# after another, each fence held up the closes behind it, and the ends
# came a round trip apart: at least 700 ms from the first to the last.
# The check fails at 350 ms or more. Every reader must get everything,
# then the end. The reader sleeps 6 s after its accepts: the writer's
# 16000 sends of 16 B, made from Python under TCG, must all be made by
# then, or a reader that has caught up leaves its close nothing to hold.
rr_close_spread() { # PORT
	local f=/tmp/rr-close-spread rc ms
	tc qdisc replace dev eth0 root netem delay 50ms
	if [ $side = server ]; then
		timeout -k 5 180 "$rrun" -- python3 "$rpeer" late-end "$1" 2000 6 8 > $f 2>&1
		rc=$?
		ms=$(sed -n 's/^late-end: the 8 ends came within \([0-9]*\) ms of each other$/\1/p' $f)
		echo "INFO 8 closes ahead of their readers, 50 ms each way: the ends came within ${ms:-?} ms"
		[ "$(grep -c 'late-end: 32000 of 32000 bytes, whole, then the end' $f)" = 8 ] ||
			{ [ $rc = 0 ] && rc="not every reader got everything, then the end"; }
		[ $rc = 0 ] && ! [ "${ms:-99999}" -lt 350 ] && rc="the ends came ${ms:-?} ms apart"
		rr_result closes_land_side_by_side "$rc" $f "$verbs_line"
	else
		rr_wait_listener "$1"
		timeout -k 5 180 "$rrun" -- python3 "$rpeer" close-ahead "$1" 2000 8 > $f 2>&1
		rc=$?
		grep -q "could not send their end" $f && rc="its exit could not send the end"
		rr_result closes_land_side_by_side "$rc" $f "$verbs_line" \
			"; 8 closed while their readers lagged, finished in the background"
	fi
	tc qdisc del dev eth0 root
}
rr_close_spread 21617
# Both ends close at about the same time, as a client and its server do
# whenever one closes on the other's end. The client's close takes its
# fence for one that never completes (RB2_RUN_FAULT_FENCE_LOST=1: Soft-RoCE
# left such a fence uncompleted, with the peer's close come, in about one
# round in ten of eight connections closed, and the close took the fence's
# whole 10 s bound); the server closes as soon as it has read the end.
# The client's close must end with the server's: the check fails at 2 s,
# or if the client's run took 5 s or more (a close gone to the closer
# would hold the exit instead). The server must read everything, then the
# end.
rr_close_on_close() { # PORT
	local f=/tmp/rr-close-on-close rc ms t0 all
	if [ $side = server ]; then
		timeout -k 5 60 "$rrun" -- python3 "$rpeer" late-end "$1" 20 0 > $f 2>&1
		rr_result close_on_the_peers_close "$?" $f \
			"late-end: 320 of 320 bytes, whole, then the end" "$verbs_line"
	else
		rr_wait_listener "$1"
		t0=$(date +%s%N)
		RB2_RUN_FAULT_FENCE_LOST=1 timeout -k 5 60 "$rrun" -- python3 "$rpeer" close-ahead \
			"$1" 20 > $f 2>&1
		rc=$?
		all=$(( ($(date +%s%N) - t0) / 1000000 ))
		ms=$(sed -n 's/^close-ahead: .* the close took \([0-9]*\) ms$/\1/p' $f)
		echo "INFO a close whose fence never completes ended with its peer's in ${ms:-?} ms (the run: $all ms)"
		[ "$rc" = 0 ] && ! [ "${ms:-99999}" -lt 2000 ] && rc="the close took ${ms:-?} ms"
		[ "$rc" = 0 ] && ! [ "$all" -lt 5000 ] && rc="the run took $all ms"
		rr_result close_on_the_peers_close "$rc" $f "$verbs_line"
	fi
}
rr_close_on_close 21623
# Two threads of the server asleep on one connection, one in poll and one
# in epoll, while the client is silent 2 s: one byte wakes both, as on TCP,
# though both sleep on the same completion channel and the first awake
# could read its event before the second looked again (the second then
# slept out its 5 s).
rr_both_wake() { # PORT
	local f=/tmp/rr-both-wake rc ms
	if [ $side = server ]; then
		timeout -k 5 60 "$rrun" -- python3 "$rpeer" both-wake "$1" > $f 2>&1
		rr_result two_sleepers_both_wake "$?" $f "$verbs_line"
	else
		rr_wait_listener "$1"
		timeout -k 5 60 "$rrun" -- python3 "$rpeer" poke "$1" 2 > $f 2>&1
		rc=$?
		ms=$(sed -n 's/^both-wake: woke \([0-9.]*\) \([0-9.]*\) .*/\1 \2/p' $f |
			awk '{ print int($1 > $2 ? $1 : $2) }')
		echo "INFO two threads asleep on one connection: the second woke ${ms:-?} ms after the first"
		[ "$rc" = 0 ] && ! [ "${ms:-99999}" -lt 1000 ] && rc="the second woke ${ms:-?} ms late"
		rr_result two_sleepers_both_wake "$rc" $f "$verbs_line"
		# The poker set its own keepalive on that connection: it must
		# read back its 300 s, not the 2 s the stream keeps underneath
		# (getsockopt's wrapper; unexported, the kernel's 2 came back).
		if grep -q "^poke: TCP_KEEPIDLE set to 300, read back 300$" $f; then
			pass=$((pass + 1))
			echo "PASS two_guests_rb2run_getsockopt_reads_the_programs_keepalive ($side)"
		else
			fail=$((fail + 1))
			echo "FAIL two_guests_rb2run_getsockopt_reads_the_programs_keepalive ($side: $(grep -m1 '^poke: TCP' $f))"
		fi
	fi
}
rr_both_wake 21616
# A writer in epoll that looks into its set without blocking between sends
# (as Redis's loop does with work pending), and waits there for room when
# short, while the reader pauses 300 ms: its sends' completions raise its
# sender's completion channel, and a look that reports it (edge-triggered:
# once) must take its event. Left there, the event kept the CQ counted as
# armed though the device had fired it, and the sleep for room was never
# woken: it waited out its own 10 s time-out here, and memcached's worker,
# which has none, stalled for good. 10 bursts of 1 MB; the longest wait
# for room must stay under 3 s.
rr_edge() { # PORT
	local f=/tmp/rr-edge rc ms
	if [ $side = server ]; then
		timeout -k 5 240 "$rrun" -- python3 "$rpeer" pump "$1" 10 1000000 > $f 2>&1
		rc=$?
		ms=$(sed -n 's/^pumped 10 rounds, the longest wait for room \([0-9]*\) ms$/\1/p' $f)
		echo "INFO the longest wait for room: ${ms:-?} ms (the reader pauses 300 ms)"
		[ $rc = 0 ] && ! [ "${ms:-99999}" -lt 3000 ] && rc="waited ${ms:-?} ms for room, not < 3000"
		rr_result epoll_writer_woken_for_room "$rc" $f "$verbs_line"
	else
		rr_wait_listener "$1"
		timeout -k 5 240 "$rrun" -- python3 "$rpeer" drink "$1" 10 1000000 > $f 2>&1
		rr_result epoll_writer_woken_for_room $? $f "drank 10 of 10 rounds whole" "$verbs_line"
	fi
}
rr_edge 21609
# A forking server across hosts (tests/rb2run_peer.py fork-away). A fork
# child cannot post on its parent's queues (the kernel refuses it the
# parent's device context), so: (1) a child that was to serve the
# connection reads a reset, with a line saying why, and once the parent has
# closed its copy and the child ended, the client gets a reset too, not the
# end (an end sent at the parent's close would read as a clean close of a
# connection nobody served); (2) a child that closes its
# copy unused leaves the parent's "hello" and the end to arrive; (3) the
# parent's close waits for a child that holds its copy unused, and then
# sends what it wrote and the end.
rr_fork_away() { # PORT
	local f=/tmp/rr-fork-away
	if [ $side = server ]; then
		timeout -k 5 120 "$rrun" -- python3 "$rpeer" fork-away "$1" > $f 2>&1
		rr_result fork_child_across_hosts "$?" $f "fork-away child 1: reset" \
			"a fork child cannot use its parent's connection to another host" \
			"fork-away: served 3" "$verbs_line"
	else
		rr_wait_listener "$1"
		timeout -k 5 120 "$rrun" -- python3 "$rpeer" fork-away-client "$1" > $f 2>&1
		rr_result fork_child_across_hosts $? $f "$verbs_line"
	fi
}
rr_fork_away 21618
# Blocked is asleep across hosts too: a server with one thread in recv and
# one in epoll_wait on two rb2 connections from B, silent for 10 s, uses
# less than 1% of a core over 4 s of it (its CPU from /proc, in 10 ms
# ticks: at most 3), and both wake when the data comes. A sleeper that
# looked every 50 ms took 4-7 ticks here (each look a status check of its
# queues and a liveness probe, under TCG); kernel TCP's took 0. A's
# rb2-sockd, not in the data path, must sleep meanwhile too (at most 1).
rr_idle() { # PORT
	local f=/tmp/rr-idle rc=0 pid t0 t1 sp s0 s1
	if [ $side = server ]; then
		sp=$(pgrep -o -x rb2-sockd)
		timeout -k 5 60 "$rrun" -- python3 "$rpeer" idle "$1" > $f 2>&1 &
		for _ in $(seq 200); do grep -q "^listening" $f 2>/dev/null && break; sleep 0.05; done
		# B connects, then is silent for 10 s: measure from when both are
		# accepted: setting up is work, not idling
		for _ in $(seq 200); do grep -q "^asleep" $f 2>/dev/null && break; sleep 0.05; done
		sleep 0.5
		pid=$(pgrep -n -f "rb2run_peer.py idle $1")
		t0=$(awk '{print $14 + $15}' /proc/"$pid"/stat 2>/dev/null)
		s0=$(awk '{print $14 + $15}' /proc/"$sp"/stat 2>/dev/null)
		sleep 4
		t1=$(awk '{print $14 + $15}' /proc/"$pid"/stat 2>/dev/null)
		s1=$(awk '{print $14 + $15}' /proc/"$sp"/stat 2>/dev/null)
		wait $! || rc="the server failed"
		echo "INFO asleep in recv and in epoll_wait across hosts: $((${t1:-0} - ${t0:-0})) ticks of CPU in 4 s; rb2-sockd $((${s1:-0} - ${s0:-0}))"
		[ "$rc" = 0 ] && ! [ -n "$t0" ] && rc="no server process to measure"
		[ "$rc" = 0 ] && ! [ -n "$s0" ] && rc="no rb2-sockd to measure"
		[ "$rc" = 0 ] && ! [ $((t1 - t0)) -le 3 ] && rc="$((t1 - t0)) ticks in 4 s: 1% of a core or more"
		[ "$rc" = 0 ] && ! [ $((s1 - s0)) -le 1 ] && rc="rb2-sockd took $((s1 - s0)) ticks in 4 s"
		rr_result blocked_is_asleep "$rc" $f echoed " 2 connections over rb2" "$verbs_line"
	else
		rr_wait_listener "$1"
		timeout -k 5 60 "$rrun" -- python3 "$rpeer" wake "$1" 10 > $f 2>&1
		rr_result blocked_is_asleep $? $f "woken: both" "$verbs_line"
	fi
}
rr_idle 21619
# Non-blocking connects from B to a server on A that accepts 1.5 s after the
# first is in its backlog (tests/rb2run_peer.py slowaccept): each connect
# returns once the services have agreed and the kernel connected (the check
# fails at 1 s; inside the call it waited for the accept and both ends'
# queues, 1.5 s and more), the queues are made and joined in the background, a
# read and a write meanwhile say EAGAIN, and a second connect EALREADY (one
# that went ahead would join queues of its own over the same socket, and the
# two joins would take each other's addresses). On A, each accept returns
# before its stream's queues are made (its time is reported; inside the call a
# stream took 65-76 ms under TCG). The greeting and the echo come whole, over
# verbs. A fourth connection, closed at once, must not wait for the accept
# (the check fails at 1 s), and its server reads the end, counted kernel TCP
# (nothing went over rb2), not failed.
rr_slow_accept() { # PORT
	local f=/tmp/rr-slow-accept rc took closed
	if [ $side = server ]; then
		timeout -k 5 120 "$rrun" -- python3 "$rpeer" slowaccept "$1" > $f 2>&1
		rc=$?
		echo "INFO $(grep "^accepts took" $f) (A, the set-ups in the background)"
		rr_result nonblocking_connect_before_accept "$rc" $f "^accepts took" \
			"closed before its accept read the end" "$verbs_line" \
			"; 1 kernel TCP: the client closed it before the pairing"
	else
		rr_wait_listener "$1"
		timeout -k 5 120 "$rrun" -- python3 "$rpeer" slowaccept-client "$1" > $f 2>&1
		rc=$?
		took=$(sed -n 's/^connects returned in \([0-9, ]*\) ms.*/\1/p' $f)
		closed=$(sed -n 's/^a close before the accept took \([0-9]*\) ms, .*/\1/p' $f)
		[ $rc = 0 ] && ! [ "$(echo "${took:-99999}" | tr ', ' '\n\n' | sort -n | tail -n 1)" \
			-lt 1000 ] && rc="connects took ${took:-?} ms, not < 1000"
		[ $rc = 0 ] && ! [ "${closed:-99999}" -lt 1000 ] && rc="a close took ${closed:-?} ms"
		echo "INFO $(grep "^a close before the accept" $f) (B)"
		rr_result nonblocking_connect_before_accept "$rc" $f \
			"before accept: \(connect EALREADY, read EAGAIN, write EAGAIN, \)\{2\}connect EALREADY, read EAGAIN, write EAGAIN;" \
			"said \(hi/pong/0/0, \)\{2\}hi/pong/0/0$" "$verbs_line"
	fi
}
rr_slow_accept 21622
# shutdown(SHUT_RD) on B's ends of three connections over verbs, 2.3 s after
# a thread fell asleep in an epoll_wait on the first, one in a poll on the
# second and one in a read of the third (10 s timeouts; A closes 6 s on),
# each shut down once the last woke: each wakes within 100 ms, the read
# with the end and the others with POLLIN, as the kernel's wakes them.
# Across hosts the device alone rings the readers' channels: the epoll sets
# holding the connection are poked, and a poll or a read also sleeps on the
# stream's eventfd, which the shutdown rings. (Before, the epoll wait slept
# on until A's close, 8 s, and the poll to its timeout; with the reader's
# 0.5 s slices instead of the eventfd, the poll woke 204 ms late.)
rr_shut_wake() { # PORT
	local f=/tmp/rr-shut-wake rc read_ms poll_ms epoll_ms
	if [ $side = server ]; then
		timeout -k 5 60 "$rrun" -- python3 "$rpeer" shutwake "$1" 6 > $f 2>&1
		rr_result shutdown_rd_wakes_sleepers "$?" $f "$verbs_line"
	else
		rr_wait_listener "$1"
		timeout -k 5 60 "$rrun" -- python3 "$rpeer" shutwake-client "$1" 2.3 > $f 2>&1
		rc=$?
		read_ms=$(sed -n "s/^the read got b'', \([0-9]*\) ms after the shutdown$/\1/p" $f)
		poll_ms=$(sed -n "s/^the poll got POLLIN, \([0-9]*\) ms after the shutdown$/\1/p" $f)
		epoll_ms=$(sed -n "s/^the epoll got EPOLLIN, \([0-9]*\) ms after the shutdown$/\1/p" $f)
		echo "INFO shutdown(SHUT_RD) across hosts woke: read ${read_ms:-?} ms, poll ${poll_ms:-?} ms, epoll_wait ${epoll_ms:-?} ms"
		[ "$rc" = 0 ] && ! [ "${read_ms:-99999}" -lt 100 ] && rc="the read woke after ${read_ms:-?} ms"
		[ "$rc" = 0 ] && ! [ "${poll_ms:-99999}" -lt 100 ] && rc="the poll woke after ${poll_ms:-?} ms"
		[ "$rc" = 0 ] && ! [ "${epoll_ms:-99999}" -lt 100 ] && rc="the epoll_wait woke after ${epoll_ms:-?} ms"
		rr_result shutdown_rd_wakes_sleepers "$rc" $f "$verbs_line"
	fi
}
rr_shut_wake 21624
# A sweep of descriptors past a connection over verbs that B keeps below it
# (close_range, glibc's closefrom), then a spawn whose vfork child sweeps its
# own (Python's subprocess): the connection keeps what it uses (its
# completion channels, the RDMA device's descriptors), so each wait sleeps
# and gets the next word, and the spawned cat reads its stand-in's end.
rr_keep_below() { # PORT
	local f=/tmp/rr-keep-below rc ms how
	if [ $side = server ]; then
		timeout -k 5 60 "$rrun" -- python3 "$rpeer" keepbelow "$1" > $f 2>&1
		rr_result sweep_keeps_a_kept_connection "$?" $f "$verbs_line"
	else
		rr_wait_listener "$1"
		timeout -k 5 60 "$rrun" -- python3 "$rpeer" keepbelow-client "$1" > $f 2>&1
		rc=$?
		for step in "close_range one" "closefrom two" "a spawn three"; do
			how=${step% *}
			ms=$(sed -n "s/^after $how: read b'${step##* }', its wait took \([0-9]*\) ms of CPU$/\1/p" $f)
			[ "$rc" = 0 ] && ! [ "${ms:-99999}" -lt 200 ] && rc="after $how: ${ms:-no word}, not < 200 ms of CPU"
		done
		rr_result sweep_keeps_a_kept_connection "$rc" $f "$verbs_line" \
			"^the spawned cat read b'' from its copy of the connection; this process's stdin read b''$"
	fi
}
rr_keep_below 21625
# A blocking connect from B, waiting for A's accept (4 s after A listens),
# while another thread closes its fd 0.3 s in: the connect goes on, as the
# kernel's (it holds the socket's file), returns 0, and the connection ends
# then: A reads the end, and B maps no arena after. (The set-up went on over
# the closed fd and failed: the connect said ECONNREFUSED, and A read a
# reset.)
rr_conn_close() { # PORT
	local f=/tmp/rr-conn-close
	if [ $side = server ]; then
		timeout -k 5 60 "$rrun" -- python3 "$rpeer" connclose "$1" 4 > $f 2>&1
		rr_result close_under_a_blocking_connect "$?" $f \
			"^the server read 0 bytes, then the end, " "$verbs_line"
	else
		rr_wait_listener "$1"
		timeout -k 5 60 "$rrun" -- python3 "$rpeer" connclose-client "$1" > $f 2>&1
		rr_result close_under_a_blocking_connect "$?" $f \
			"^connect returned 0; 0 arenas mapped after$" "$verbs_line"
	fi
}
rr_conn_close 21626
unset RB2_NOEAL_LOG
# A's service stops while a connection over verbs is open: that connection
# goes on (no service is in its data path) and delivers every byte both
# ways; a new connect from B finds no service there and is kernel TCP,
# which the stats line says. The stop comes while another connection from
# B, which A's service told B to make over verbs, waits for A's accept (2 s
# late): the stopping service sets that one up at the accept, over verbs,
# and only then exits. (It exited at once: the accept found no service and
# stayed kernel TCP, and B's connect failed with ETIMEDOUT after 15 s.)
if [ $side = server ]; then
	"$rrun" -- python3 "$rpeer" server 21610 4 > /tmp/rr-svc1 2>&1 &
	s1=$!
	"$rrun" -- python3 "$rpeer" server 21620 > /tmp/rr-svc2 2>&1 &
	s2=$!
	"$rrun" -- python3 "$rpeer" server 21627 0 2 > /tmp/rr-svc3 2>&1 &
	s3=$!
	for _ in $(seq 300); do
		grep -q accepted /tmp/rr-svc1 && grep -q queued /tmp/rr-svc3 && break
		sleep 0.1
	done
	"$sockd" --stop > /dev/null 2>&1
	echo "INFO rb2-sockd stopped on A ($(grep -c accepted /tmp/rr-svc1) accepted;" \
		"the late accept: $(grep -c accepted /tmp/rr-svc3))"
	timeout 120 tail --pid=$s1 -f /dev/null; wait $s1
	rr_result open_connection_outlives_the_service $? /tmp/rr-svc1 "$verbs_line"
	timeout 120 tail --pid=$s3 -f /dev/null; wait $s3
	rr_result stop_sets_up_what_it_answered_for $? /tmp/rr-svc3 "$verbs_line"
	timeout 120 tail --pid=$s2 -f /dev/null; wait $s2
	rr_result connect_without_the_service $? /tmp/rr-svc2 "1 kernel TCP"
else
	rr_wait_listener 21610
	rr_wait_listener 21620
	rr_wait_listener 21627
	timeout -k 5 180 "$rrun" -- python3 "$rpeer" client 21610 2000000 > /tmp/rr-svc1 2>&1 &
	c1=$!
	timeout -k 5 180 "$rrun" -- python3 "$rpeer" client 21627 1000000 > /tmp/rr-svc3 2>&1 &
	c3=$!
	# A stops its service once it accepted the first, and the third is in
	# its backlog. The second connect waits until A's service port refuses,
	# which it does from the stop on.
	for _ in $(seq 600); do
		python3 -c "import socket; socket.create_connection(('$theirs', 7472), timeout=1).close()" \
			2>/dev/null || break
		sleep 0.1
	done
	timeout -k 5 180 "$rrun" -- python3 "$rpeer" client 21620 2000000 > /tmp/rr-svc2 2>&1
	rr_result connect_without_the_service $? /tmp/rr-svc2 "up: whole, down: whole" \
		"kernel TCP: another host, which runs no rb2-sockd"
	wait $c1
	rr_result open_connection_outlives_the_service $? /tmp/rr-svc1 "up: whole, down: whole" \
		"$verbs_line"
	wait $c3
	rr_result stop_sets_up_what_it_answered_for $? /tmp/rr-svc3 "up: whole, down: whole" \
		"$verbs_line"
	# B's service remembers that A's did not answer: forget it.
	"$sockd" --stop > /dev/null 2>&1
	"$sockd" --daemon > /dev/null 2>&1
fi
[ $side = server ] && "$sockd" --daemon > /dev/null 2>&1

# Last (unless run.sh's RB2_VM_GUESTKILL=0): guest B is killed (its QEMU,
# from the host) while it streams to A, once A prints "guestkill: streaming".
# Nothing reaches A any more, not even a DISCONNECT: A's receiver must report
# it within the bound, having delivered everything published to it
# (test_verbs death_server()). So must a program under rb2-run, reading a
# connection over verbs from B: its read fails with ETIMEDOUT about 10 s
# after B's last packet (rb2_stream.h, RB2_STREAM_USER_TIMEOUT_MS), where
# kernel TCP would wait 2 h 11 min; 15 s here, for TCG.
if [ "$RB2_GUESTKILL" != 1 ]; then
	echo "two guests ($side): $pass passed, $fail failed"
elif [ $side = server ]; then
	"$rrun" -- python3 "$rpeer" sink 21630 > /tmp/rr-sink 2>&1 &
	sk=$!
	# Its output goes to the console as it comes: the host watches for it.
	"$tv" $eal -- server guestkill "$addr:21200" 2>&1 | tee /tmp/guestkill |
		grep --line-buffered -vE "^(TELEMETRY|EAL)"
	if [ "${PIPESTATUS[0]}" -eq 0 ]; then pass=$((pass + 1)); echo "PASS two_guests_guestkill (server)";
	else fail=$((fail + 1)); echo "FAIL two_guests_guestkill (server)"; fi
	timeout 60 tail --pid=$sk -f /dev/null
	kill $sk 2>/dev/null
	after=$(sed -n 's/^sink: [1-9][0-9]* bytes in order, then ETIMEDOUT, \([0-9]*\)\..*/\1/p' /tmp/rr-sink)
	rc="not ETIMEDOUT within 15 s"
	[ -n "$after" ] && [ "$after" -lt 15 ] && rc=0
	rr_result guestkill_read_times_out "$rc" /tmp/rr-sink "$verbs_line"
	echo "two guests ($side): $pass passed, $fail failed"
else
	rr_wait_listener 21630
	"$rrun" -- python3 "$rpeer" source 21630 > /dev/null 2>&1 &
	sleep 2
	# B's result is this line: it does not live to write a status.
	echo "two guests ($side): $pass passed, $fail failed"
	"$tv" $eal -- client guestkill "$addr:21200" > /dev/null 2>&1
	echo "FAIL two_guests_guestkill (client): B was not killed"
	fail=$((fail + 1))
fi
[ $fail -eq 0 ]
