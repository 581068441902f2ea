#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
#
# Packets from DPDK ports, end to end, on real PMDs (vdevs):
#
#   test_port.sh MODE BUILD_DIR
#     pcap      net_pcap: the NF's totals and every flow = the pcap-replay path = the
#               reference; mbufs as pointers across lcores and as bytes; access/core
#               links (PPPoE, MPLS) = tshark; every mbuf back in its pool
#     forward   rx -> pkt_filter plugin -> tx between two net_pcap ports: out = in,
#               byte for byte; a net_ring port whose TX refuses: every packet counted
#     errors    an unknown port, a vdev that fails to probe, a pool too small, a
#               packet edge linked to a message stage: clear errors or counted drops
#     signal    net_null until SIGINT: telemetry shows the port's counters meanwhile; the
#               pipeline drains (every packet received is measured), the port stops
#     twoproc   rx in one process, parse and measure in another, mbuf pointers over
#               shm (needs hugepages)
#     veth      tcpreplay into a veth pair inside a network namespace this test makes,
#               read through net_af_packet: sent = received (needs root and tcpreplay)
set -uo pipefail

mode=$1
build=$(cd "$2" && pwd)
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
nf=$build/apps/rb2-nf/rb2-nf
gen=$build/apps/rb2-tracegen/rb2-tracegen
ref=$src/tests/nf_reference.py
filter=$build/tests/plugins/pkt_filter.so
tmp=$(mktemp -d)
ns=rb2t-port-$$
trap 'kill -9 $(jobs -p) 2>/dev/null; ip netns del "$ns" 2>/dev/null; rm -rf "$tmp"' EXIT
pfx=rb2t-port-$mode-$$
eal=(-l 0-1 --no-pci --no-huge -m 512 --file-prefix "$pfx" --log-level=lib.eal:warning)
base_va=${RB2_BASE_VIRTADDR:-0x200000000000}
fails=0

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }
json_get() { python3 -c "import json,sys; d=json.load(open('$1')); print($2)"; }

# nf OUT VDEV... -- OPTIONS...: rb2-nf with these vdevs; stdout/stderr kept.
nf() {
	local out=$1; shift
	local vdevs=()
	while [ "$1" != "--" ]; do vdevs+=(--vdev "$1"); shift; done
	shift
	timeout -k 5 120 "$nf" "${eal[@]}" "${vdevs[@]}" -- "$@" >"$out.out" 2>"$out.err"
}

# pool_ok OUT: the report says every mbuf came back to its pool.
pool_ok() {
	grep -Eq "pool '[^']+': 0 of [0-9]+ mbufs in use after the run" "$1.out"
}

# A config: rx on lcore 0 -> (link pkts, carry $1) -> parse -> measure, the
# last two on lcore $2 (1: the packets cross lcores; 0: same-lcore queue).
port_cfg() {
	cat <<EOF
[stage rx]
type = rx
lcore = 0
port = \${port}
idle_ms = \${idle_ms:-500}
pool_size = \${pool_size:-8191}
[stage parse]
type = parse
lcore = $2
[stage measure]
type = measure
lcore = $2
json = \${json}
[link pkts]
from = rx.out
to = parse
carry = $1
slots = 512
slot_size = 64
[link records]
from = parse.out
to = measure
EOF
}

case $mode in
pcap)
	# Whole packets (a port carries what arrived; a snapped capture's wire
	# lengths would be lost), IPv4, IPv6 and non-IP, microsecond stamps.
	"$gen" -o "$tmp/t.pcap" --packets 60000 --flows 3000 --seed 11 --ipv6 0.2 --nonip 0.01 \
		--snaplen 65535 >/dev/null
	nf "$tmp/r" -- --trace "$tmp/t.pcap" --json "$tmp/replay.json" ||
		{ fail "the pcap-replay path"; cat "$tmp/r.err"; }
	nf "$tmp/p" "net_pcap0,rx_pcap=$tmp/t.pcap" -- --config "$src/config/nf-port.ini" \
		--port net_pcap0 --idle-ms 500 --json "$tmp/port.json"
	rc=$?
	if [ $rc = 0 ] && python3 "$ref" compare "$tmp/t.pcap" "$tmp/port.json" &&
		python3 - "$tmp/replay.json" "$tmp/port.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
key = lambda f: json.dumps(f, sort_keys=True)
sys.exit(0 if a["totals"] == b["totals"] and
         sorted(map(key, a["flow_list"])) == sorted(map(key, b["flow_list"])) else 1)
PY
	then
		ok "net_pcap: nf-port.ini's totals and every flow = the pcap-replay path = the reference"
	else
		fail "net_pcap: rc $rc, the port path differs"; cat "$tmp/p.err"
	fi
	pool_ok "$tmp/p" && ok "net_pcap: every mbuf back in the pool" ||
		{ fail "net_pcap: mbufs not returned"; grep pool "$tmp/p.out"; }
	grep -q "60000 packets received and passed on" "$tmp/p.out" &&
		grep -q "ipackets 60000, imissed 0, ierrors 0, rx_nombuf 0" "$tmp/p.out" &&
		ok "net_pcap: port counters reconcile: ipackets 60000 = received" ||
		{ fail "net_pcap: port counters"; grep -A2 "^rx" "$tmp/p.out"; }
	# The same across lcores: mbuf pointers through an RB2 channel, and
	# the packets' bytes through it (what a link across hosts carries).
	# Over an RB2 channel, pointers travel in descriptors; plain mbufs go
	# back to the pool unread, chained ones (a data room of 128 bytes:
	# the larger packets take several segments) by rte_pktmbuf_free(),
	# both in one burst. DPDK's rte_ring of pointers, and of the same
	# descriptors.
	port_cfg pointers 1 | sed 's/^carry = pointers$/carry = pointers\nvia = rte_ring/' \
		>"$tmp/ring.ini"
	port_cfg descriptors 1 | sed 's/^carry = descriptors$/carry = descriptors\nvia = rte_ring/' \
		>"$tmp/ring_desc.ini"
	port_cfg pointers 1 | sed 's/^type = rx$/type = rx\ndata_room = 256/' >"$tmp/chained.ini"
	for carry in pointers bytes ring ring_desc chained; do
		[ -f "$tmp/$carry.ini" ] || port_cfg $carry 1 >"$tmp/$carry.ini"
		nf "$tmp/$carry" "net_pcap0,rx_pcap=$tmp/t.pcap" -- --config "$tmp/$carry.ini" \
			--port net_pcap0 --json "$tmp/$carry.json"
		rc=$?
		if [ $rc = 0 ] && python3 "$ref" compare "$tmp/t.pcap" "$tmp/$carry.json" >/dev/null &&
			pool_ok "$tmp/$carry"; then
			ok "$carry across lcores: = the reference, every mbuf back"
		else
			fail "carry = $carry: rc $rc"; cat "$tmp/$carry.err"; grep pool "$tmp/$carry.out"
		fi
	done
	# Access and core links through a port: PPPoE sessions, MPLS stacks.
	python3 "$ref" craft "$tmp/cr" >/dev/null
	nf "$tmp/ac" "net_pcap0,rx_pcap=$tmp/cr/access-core.pcap" -- \
		--config "$src/config/nf-port.ini" --port net_pcap0 --idle-ms 500 --json "$tmp/ac.json"
	if python3 "$ref" tshark "$tmp/cr/access-core.pcap" "$tmp/ac.json"; then
		ok "net_pcap: access/core links decode as tshark decodes them"
	else
		fail "net_pcap: access/core links differ from tshark"; cat "$tmp/ac.err"
	fi
	;;
forward)
	"$gen" -o "$tmp/in.pcap" --packets 30000 --flows 1000 --seed 5 --ipv6 0.3 --nonip 0.02 \
		--snaplen 65535 >/dev/null
	nf "$tmp/f" "net_pcap0,rx_pcap=$tmp/in.pcap" "net_pcap1,tx_pcap=$tmp/out.pcap" -- \
		--plugin "$filter" --config "$src/examples/pkt-filter/fwd.ini" --port net_pcap0 \
		--out-port net_pcap1 --proto 6 --idle-ms 500
	rc=$?
	if [ $rc = 0 ] && python3 - "$tmp/in.pcap" "$tmp/out.pcap" "$src/tests" <<'PY'
import sys
sys.path.insert(0, sys.argv[3])
import nf_reference as r
want = [d for lt, ts, d, o in r.read_capture(sys.argv[1])
        if r.decode(lt, d)["kind"] in ("ipv4", "ipv6") and r.decode(lt, d)["proto"] == 6]
got = [d for lt, ts, d, o in r.read_capture(sys.argv[2])]
print(f"forwarded {len(got)} packets, the input holds {len(want)} TCP packets")
sys.exit(0 if got == want else 1)
PY
	then
		ok "forwarding: every TCP packet out, in order, byte for byte; the rest filtered"
	else
		fail "forwarding: rc $rc"; cat "$tmp/f.err"
	fi
	pool_ok "$tmp/f" && ok "forwarding: every mbuf back in the pool" ||
		{ fail "forwarding: mbufs not returned"; grep pool "$tmp/f.out"; }
	# A port that refuses: net_ring's TX ring (1024) fills, nobody reads it,
	# and the mbufs in it stay there (net_ring frees nothing): in use after
	# the run = sent, and every other one back in the pool.
	nf "$tmp/g" "net_pcap0,rx_pcap=$tmp/in.pcap" net_ring0 -- \
		--plugin "$filter" --config "$src/examples/pkt-filter/fwd.ini" --port net_pcap0 \
		--out-port net_ring0 --idle-ms 500
	sent=$(grep -o "[0-9]* packets sent" "$tmp/g.out" | cut -d' ' -f1)
	refused=$(grep -o "[0-9]* refused by the port" "$tmp/g.out" | cut -d' ' -f1)
	kept=$(awk '$1 == "kept" {print $2}' "$tmp/g.out")
	if [ -n "$sent" ] && [ -n "$refused" ] && [ "$refused" -gt 0 ] &&
		[ $((sent + refused)) = "$kept" ] && grep -q "refuses packets" "$tmp/g.err" &&
		grep -q ": $sent of [0-9]* mbufs in use after the run" "$tmp/g.out"; then
		ok "a refusing port: $sent sent + $refused refused (counted, freed) = $kept kept"
	else
		fail "a refusing port: sent '$sent' refused '$refused' kept '$kept'"
		cat "$tmp/g.out" "$tmp/g.err"
	fi
	;;
errors)
	"$gen" -o "$tmp/t.pcap" --packets 20000 --flows 100 --seed 2 --nonip 0.01 --snaplen 65535 >/dev/null
	expect() {
		local want=$1 what=$2; shift 2
		if nf "$tmp/e" "$@"; then
			fail "$what: expected an error matching '$want'"
		elif grep -Eq -- "$want" "$tmp/e.err"; then
			ok "$what: $(grep -Eo -- "$want" "$tmp/e.err" | head -1)"
		else
			fail "$what: no error matching '$want':"; cat "$tmp/e.err"
		fi
	}
	expect "no port 'net_pcap7': 0 = net_pcap0 \(net_pcap\)" "an unknown port" \
		"net_pcap0,rx_pcap=$tmp/t.pcap" -- --config "$src/config/nf-port.ini" --port net_pcap7
	expect "this process has no port at all .*give the EAL one" "no port at all" \
		-- --config "$src/config/nf-port.ini" --port 0
	expect "a --vdev whose probe failed is not one: the EAL's log above says why" \
		"a vdev that fails to probe" \
		"net_pcap0,rx_pcap=$tmp/missing.pcap" -- --config "$src/config/nf-port.ini"
	grep -q "Couldn't open $tmp/missing.pcap" "$tmp/e.err" &&
		ok "... and the EAL's log names the file" ||
		fail "the probe failure does not name the file"
	{ port_cfg pointers 1; } | sed 's/^to = parse$/to = measure/' >"$tmp/mix.ini"
	expect "link 'pkts': rx.out emits packets, but stage 'measure' \(type measure\) takes messages" \
		"packets linked to a message stage" \
		"net_pcap0,rx_pcap=$tmp/t.pcap" -- --config "$tmp/mix.ini" --port net_pcap0 \
		--json "$tmp/mix.json"
	# A pool too small for what is in flight: rx_nombuf counted, one
	# warning naming the option, and received + rx_nombuf = the trace.
	port_cfg pointers 1 >"$tmp/small.ini"
	nf "$tmp/s" "net_pcap0,rx_pcap=$tmp/t.pcap" -- --config "$tmp/small.ini" --port net_pcap0 \
		--pool-size 64 --json "$tmp/s.json"
	got=$(grep -o "[0-9]* packets received" "$tmp/s.out" | cut -d' ' -f1)
	nombuf=$(grep -o "rx_nombuf [0-9][0-9]*" "$tmp/s.out" | head -1 | cut -d' ' -f2)
	measured=$(json_get "$tmp/s.json" 'd["totals"]["packets"]' 2>/dev/null)
	if [ -n "$got" ] && [ -n "$nombuf" ] && [ $((got + nombuf)) = 20000 ] &&
		[ "$got" = "$measured" ] && grep -q "raise pool_size" "$tmp/s.err" && pool_ok "$tmp/s"; then
		ok "a pool of 64 mbufs: $got received (all measured) + $nombuf rx_nombuf = 20000"
	else
		fail "a small pool: received '$got', rx_nombuf '$nombuf', measured '$measured'"
		cat "$tmp/s.out" "$tmp/s.err"
	fi
	;;
signal)
	# --foreground: without it, timeout passes our one SIGINT on to rb2-nf
	# and then to its whole process group, so rb2-nf may take two and abort.
	timeout --foreground -k 5 120 "$nf" "${eal[@]}" --vdev net_null0 -- --config "$src/config/nf-port.ini" \
		--port net_null0 --json "$tmp/s.json" --stats-json "$tmp/st.json" \
		>"$tmp/s.out" 2>"$tmp/s.err" &
	pid=$!
	for _ in $(seq 100); do grep -q "rb2-nf: running" "$tmp/s.err" && break; sleep 0.1; done
	sleep 1
	tel=$(command -v dpdk-telemetry.py || true)
	if [ -z "$tel" ]; then
		fail "dpdk-telemetry.py is not installed (apt-get install dpdk)"
	else
		echo /rb2/pipeline/stages | python3 "$tel" -f "$pfx" >"$tmp/tel.txt" 2>&1
		if python3 - "$tmp/tel.txt" <<'PY'
import json, sys
t = open(sys.argv[1]).read()
d = json.loads(t[t.index('{"/rb2/pipeline/stages"'):].splitlines()[0])["/rb2/pipeline/stages"]
rx = d["rx"]
print(f"telemetry: rx port_ipackets {rx['port_ipackets']}, received {rx['received']}")
sys.exit(0 if rx["port_ipackets"] > 0 and rx["received"] > 0 else 1)
PY
		then
			ok "telemetry /rb2/pipeline/stages shows the port's counters while it runs"
		else
			fail "telemetry: no port counters"; cat "$tmp/tel.txt"
		fi
	fi
	kill -INT $pid
	wait $pid
	rc=$?
	got=$(grep -o "[0-9]* packets received" "$tmp/s.out" | cut -d' ' -f1)
	measured=$(json_get "$tmp/s.json" 'd["totals"]["packets"]' 2>/dev/null)
	if [ $rc = 0 ] && [ -n "$got" ] && [ "$got" = "$measured" ] && [ "$got" -gt 100000 ] &&
		grep -q "port 0 (net_null0) stopped: its stages have drained" "$tmp/s.err" &&
		pool_ok "$tmp/s"; then
		ok "SIGINT: drained, all $got packets received were measured; the port stopped"
	else
		fail "SIGINT: rc $rc, received '$got', measured '$measured'"; cat "$tmp/s.out" "$tmp/s.err"
	fi
	;;
twoproc)
	free=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
	if [ "${free:-0}" -lt 128 ] || ! mountpoint -q /dev/hugepages; then
		echo "SKIP: DPDK multi-process needs hugepages: as root, usertools/rb2-hugepages.sh 1024"
		exit 77
	fi
	"$gen" -o "$tmp/t.pcap" --packets 60000 --flows 2000 --seed 9 --ipv6 0.1 --nonip 0.01 \
		--snaplen 65535 >/dev/null
	port_cfg pointers 1 | sed 's/^\[stage rx\]$/[stage rx]\nproc = rx/;
		s/^\[stage parse\]$/[stage parse]\nproc = measure/;
		s/^\[stage measure\]$/[stage measure]\nproc = measure/' >"$tmp/two.ini"
	# rx is the primary: it owns the port and creates the pool the
	# secondary frees into.
	timeout -k 5 120 "$nf" -l 0 --no-pci -m 256 --file-prefix "$pfx" --proc-type=primary \
		--base-virtaddr="$base_va" --log-level=lib.eal:warning \
		--vdev "net_pcap0,rx_pcap=$tmp/t.pcap" -- --config "$tmp/two.ini" --proc rx \
		--port net_pcap0 --idle-ms 2000 --json "$tmp/two.json" >"$tmp/rx.out" 2>"$tmp/rx.err" &
	rpid=$!
	for _ in $(seq 100); do [ -S "/var/run/dpdk/$pfx/mp_socket" ] && break; sleep 0.1; done
	# Under ASan: the secondary's probe of the primary's net_pcap leaks
	# inside DPDK and libpcap (tests/lsan-dpdk.supp); only those frames.
	LSAN_OPTIONS="suppressions=$src/tests/lsan-dpdk.supp:print_suppressions=0" \
	timeout -k 5 120 "$nf" -l 1 --no-pci -m 256 --file-prefix "$pfx" --proc-type=secondary \
		--log-level=lib.eal:warning -- --config "$tmp/two.ini" --proc measure \
		--port net_pcap0 --json "$tmp/two.json" >"$tmp/m.out" 2>"$tmp/m.err" || { fail "measure process"; cat "$tmp/m.err"; }
	wait $rpid || { fail "rx process"; cat "$tmp/rx.err"; }
	if python3 "$ref" compare "$tmp/t.pcap" "$tmp/two.json" && pool_ok "$tmp/rx"; then
		ok "rx and measure in two processes, mbuf pointers over shm: = the reference, every mbuf back"
	else
		fail "two processes"; cat "$tmp/rx.out" "$tmp/m.out"
	fi
	rm -f /dev/hugepages/"$pfx"map_* 2>/dev/null
	;;
veth)
	if [ "$(id -u)" != 0 ] || ! ip netns add "$ns" 2>/dev/null; then
		echo "SKIP: cannot make a network namespace (needs root and iproute2)"
		exit 77
	fi
	if ! command -v tcpreplay >/dev/null; then
		fail "tcpreplay is not installed (apt-get install tcpreplay)"
		exit 1
	fi
	# Inside the namespace only: a veth pair, no address, no IPv6, so
	# that nothing but tcpreplay's packets cross it.
	ip -n "$ns" link add v0 type veth peer name v1
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
	ip -n "$ns" link set v0 up
	ip -n "$ns" link set v1 up
	"$gen" -o "$tmp/t.pcap" --packets 20000 --flows 500 --seed 4 --ipv6 0.2 --nonip 0.01 \
		--snaplen 1400 >/dev/null
	# rx stops at the 20000th packet; only if some never come does it wait
	# out 10 s of quiet (a loaded machine can stall tcpreplay for seconds).
	ip netns exec "$ns" timeout -k 5 120 "$nf" "${eal[@]}" --vdev net_af_packet0,iface=v1 -- \
		--config "$src/config/nf-port.ini" --port net_af_packet0 --count 20000 --idle-ms 10000 \
		--json "$tmp/v.json" >"$tmp/v.out" 2>"$tmp/v.err" &
	vpid=$!
	for _ in $(seq 100); do grep -q "rb2-nf: running" "$tmp/v.err" && break; sleep 0.1; done
	ip netns exec "$ns" tcpreplay -i v0 --pps 20000 "$tmp/t.pcap" >"$tmp/tr.out" 2>&1 ||
		{ fail "tcpreplay"; cat "$tmp/tr.out"; }
	wait $vpid; rc=$?
	sent=$(grep -Eo "Successful packets: +[0-9]+" "$tmp/tr.out" | grep -Eo "[0-9]+$")
	got=$(grep -o "[0-9]* packets received" "$tmp/v.out" | cut -d' ' -f1)
	measured=$(json_get "$tmp/v.json" 'd["totals"]["packets"]' 2>/dev/null)
	drops=$(grep -o "imissed [0-9]*, ierrors [0-9]*, rx_nombuf [0-9]*" "$tmp/v.out")
	echo "tcpreplay sent ${sent:-?}; rx received ${got:-?}; measured ${measured:-?}; $drops"
	if [ $rc = 0 ] && [ -n "$sent" ] && [ "$sent" = "$got" ] && [ "$got" = "$measured" ]; then
		ok "veth: tcpreplay's $sent packets = rx's received = measured ($drops)"
	else
		fail "veth: rc $rc, sent '$sent', received '$got', measured '$measured' ($drops)"
		cat "$tmp/v.err"
	fi
	;;
*)
	echo "usage: $0 pcap|forward|errors|signal|twoproc|veth BUILD_DIR" >&2
	exit 2
	;;
esac
echo "$mode: $fails failure(s)"
[ $fails = 0 ]
