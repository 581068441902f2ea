#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
#
# rb2-nf end to end: the measurement NF against an independent reference
# (tests/nf_reference.py: its own pcap/pcapng reader and decoder in Python).
#
#   test_nf.sh MODE BUILD_DIR
#     generated   rb2-tracegen traces (IPv4, IPv6, non-IP, snapped, ns), batching, loops, pacing
#     crafted     every link type, VLAN/QinQ, PPPoE, MPLS, fragments, IPv6 extension headers,
#                 broken packets; access/core links checked against tshark, and a
#                 real PPPoE session (tests/captures/pppoe-session.pcap)
#     debian      real captures shipped by Debian (golang-github-google-gopacket-dev)
#     errors      bad traces, bad configurations, bad arguments: clear errors, nothing lost
#     plugin      meson install + pkg-config build of examples/stage-filter, and broken plugins
#     twoproc     replay and measure as two processes over shm = one process (needs hugepages);
#                 Ctrl-C on either process stops both; a killed receiver fails the sender
#     signal      SIGINT drains: every record sent is measured; telemetry while running
#     shards      config/nf-sharded.ini (measure on two lcores, by flow hash) gives one
#                 measure stage's records, totals and top-K, and one exporter's stream;
#                 periodic reports add up to the run's totals
#     ipfix       flow records as IPFIX to nfcapd (nfdump reads back the NF's records, the
#                 reference's cuts), to a file; FIN/RST, timeouts, a full table, collector
#                 faults, an IPv6 collector, NetFlow v9, bad options; against nfpcapd's
#                 records
set -uo pipefail

mode=$1
build=$(cd "$2" && pwd)
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
nf=$build/apps/rb2-nf/rb2-nf
gen=$build/apps/rb2-tracegen/rb2-tracegen
ref=$src/tests/nf_reference.py
tmp=$(mktemp -d)
# Whatever ends this script, no rb2-nf it started outlives it.
# Processes killed on purpose leave their EAL runtime directories (6 MB
# each with --no-huge): every prefix this script uses starts rb2t-nf.
trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$tmp" /var/run/dpdk/rb2t-nf*-$$' EXIT
eal=(-l 0-1 --no-pci --no-huge -m 512 --file-prefix "rb2t-nf-$mode-$$" --log-level=lib.eal:warning)
fails=0
# Where a primary maps its shared memory, so the secondary can map it at the
# same addresses: meson passes one outside TSan's shadow in a TSan build.
base_va=${RB2_BASE_VIRTADDR:-0x200000000000}
# How much slower than a release build this one runs (meson: 5 under TSan):
# waits for progress and time bounds scale with it.
slow=${RB2_TEST_SLOWDOWN:-1}
# Under ThreadSanitizer (meson: RB2_TEST_TSAN=1) the two-process runs
# preallocate their memory (--legacy-mem): a secondary that frees then
# returns memory to the shared heap itself, rather than asking the
# primary's IPC thread, whose heap updates (under DPDK's own lock, in
# uninstrumented code) TSan takes for races with the primary's own frees
# when the two processes end together (tests/tsan/README.md).
mp_mem=()
[ "${RB2_TEST_TSAN:-0}" = 1 ] && mp_mem=(--legacy-mem)

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

# run_nf OUT.json [rb2-nf options...]: the default pipeline, JSON results.
# The test traces hold at most tens of thousands of flows at once: a table
# of 256k (50 MiB) rather than the default 1M (198 MiB), whose zeroing on
# --no-huge's 4 KiB pages took half a second a run.
run_nf() {
	local json=$1; shift
	local cap=(--flows 256k)
	case " $* " in *" --flows "*|*" --config "*) cap=() ;; esac
	"$nf" "${eal[@]}" -- --top 3 --json "$json" "${cap[@]}" "$@" >"$tmp/out.txt" 2>"$tmp/err.txt"
}

# check TRACE [rb2-nf options...]: the NF's flows and totals = the reference's.
check() {
	local trace=$1; shift
	if ! run_nf "$tmp/nf.json" --trace "$trace" "$@"; then
		fail "rb2-nf on $trace $*: exit $?"; cat "$tmp/err.txt"; return
	fi
	if python3 "$ref" compare "$trace" "$tmp/nf.json"; then
		ok "$(basename "$trace") $*"
	else
		fail "$(basename "$trace") $*: NF and reference differ"
	fi
	# rb2_eal_cleanup(): a primary that ends leaves no runtime directory.
	if [ -e "/var/run/dpdk/rb2t-nf-$mode-$$" ]; then
		fail "rb2-nf left its runtime directory /var/run/dpdk/rb2t-nf-$mode-$$"
	fi
}

# expect_err WANT_REGEX CMD...: CMD fails, and says WANT on stderr.
expect_err() {
	local want=$1; shift
	if "$@" >"$tmp/out.txt" 2>"$tmp/err.txt"; then
		fail "expected an error matching '$want' from: $*"
	elif grep -Eq -- "$want" "$tmp/err.txt"; then
		ok "error: $(grep -Eo -- "$want" "$tmp/err.txt" | head -1)"
	else
		fail "error of '$*' does not match '$want':"; cat "$tmp/err.txt"
	fi
}

# wait_socket PREFIX: until the primary of PREFIX takes secondaries.
wait_socket() {
	for _ in $(seq 100); do
		[ -S "/var/run/dpdk/$1/mp_socket" ] && return
		sleep 0.1
	done
}

# wait_text SECONDS FILE TEXT: until FILE holds TEXT (at most SECONDS): a
# fixed sleep was too short for a start under ThreadSanitizer here.
wait_text() {
	local end=$(( $(date +%s) + $1 ))
	while ! grep -q -- "$3" "$2" 2>/dev/null && [ "$(date +%s)" -lt $end ]; do
		sleep 0.1
	done
}

# wait_gone SECONDS PID...: until every PID has exited (at most SECONDS).
wait_gone() {
	local end=$(( $(date +%s) + $1 )); shift
	for p in "$@"; do
		while kill -0 "$p" 2>/dev/null && [ "$(date +%s)" -lt $end ]; do
			sleep 0.02
		done
	done
}

# remove_hugefiles PREFIX: a primary's hugepage files outlive it (and a
# killed one cleans up nothing): free them.
remove_hugefiles() {
	rm -f /dev/hugepages/"$1"map_* 2>/dev/null || true
}

json_get() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

case $mode in
generated)
	"$gen" -o "$tmp/a.pcap" --packets 300000 --flows 20000 --seed 1 >/dev/null
	"$gen" -o "$tmp/b.pcap" --packets 200000 --flows 10000 --ipv6 0.25 --nonip 0.05 \
		--snaplen 40 --seed 2 >/dev/null
	"$gen" -o "$tmp/c.pcap" --packets 100000 --flows 3000 --snaplen 96 --nano --seed 3 \
		--ipv6 0.1 >/dev/null
	# Streamed (the default: unpaced, once) across windows of 64 Ki records,
	# messages of 3 records cut at each window's end; then preloaded.
	check "$tmp/a.pcap"
	check "$tmp/b.pcap" --batch 3
	check "$tmp/c.pcap"
	check "$tmp/a.pcap" --preload yes
	# The generator's flow count is the flows that appear, the NF's count.
	"$gen" -o "$tmp/e.pcap" --packets 50000 --flows 40000 --seed 12 --expect "$tmp/e.json" >/dev/null
	run_nf "$tmp/e-nf.json" --trace "$tmp/e.pcap"
	want=$(json_get "$tmp/e.json" 'd["flows"]'); got=$(json_get "$tmp/e-nf.json" 'd["flows"]')
	drawn=$(json_get "$tmp/e.json" 'd["flows_drawn"]')
	[ "$want" = "$got" ] && [ "$drawn" = 40000 ] && [ "$got" -lt 40000 ] &&
		ok "rb2-tracegen says $want flows appear (of $drawn drawn); the NF measures $got" ||
		fail "rb2-tracegen: $want flows (of $drawn), the NF measures $got"
	expect_err "rb2-tracegen: writing /dev/full: No space left on device" \
		"$gen" -o /dev/full --packets 100000
	# The generated traces are valid for standard tools: tshark flags no
	# packet as malformed or worth a warning (checksum checks on) in the
	# layers the generator writes, from Ethernet to TCP/UDP (application
	# dissectors chosen by port would read its zero payloads); on
	# full-length captures every IP, TCP and UDP checksum verifies.
	if command -v tshark >/dev/null; then
		mkdir -p "$tmp/ws/wireshark"
		tshark -G protocols 2>/dev/null | cut -f3 |
			grep -vxE 'frame|raw|eth|ethertype|ip|ipv6|tcp|udp|arp|data' \
			>"$tmp/ws/wireshark/disabled_protos"
		ts() { XDG_CONFIG_HOME=$tmp/ws tshark -o ip.check_checksum:TRUE \
			-o tcp.check_checksum:TRUE -o udp.check_checksum:TRUE "$@" 2>/dev/null; }
		"$gen" -o "$tmp/ta.pcap" --packets 30000 --flows 2000 --seed 1 >/dev/null
		"$gen" -o "$tmp/tb.pcap" --packets 30000 --flows 1000 --ipv6 0.25 --nonip 0.05 \
			--snaplen 40 --seed 2 >/dev/null
		"$gen" -o "$tmp/tc.pcap" --packets 30000 --flows 300 --snaplen 96 --nano --seed 3 \
			--ipv6 0.1 >/dev/null
		"$gen" -o "$tmp/full.pcap" --packets 20000 --flows 500 --ipv6 0.3 --nonip 0.05 \
			--snaplen 1600 --seed 9 >/dev/null
		for f in ta tb tc full; do
			n=$(ts -r "$tmp/$f.pcap" -Y '_ws.malformed || _ws.expert.severity >= warning' | wc -l)
			all=$(ts -r "$tmp/$f.pcap" | wc -l)
			[ "$n" = 0 ] && [ "$all" -gt 0 ] &&
				ok "tshark: none of the $all packets of $f.pcap is malformed or suspect" ||
				{ fail "tshark flags $n of $all packets of $f.pcap:"
				  ts -r "$tmp/$f.pcap" -Y '_ws.malformed || _ws.expert.severity >= warning' |
					head -3; }
		done
		good=$(ts -r "$tmp/full.pcap" -Y '(tcp.checksum.status == 1 ||
			udp.checksum.status == 1) && (ipv6 || ip.checksum.status == 1)' | wc -l)
		ip=$(ts -r "$tmp/full.pcap" -Y 'ip || ipv6' | wc -l)
		[ "$good" = "$ip" ] && [ "$ip" -gt 18000 ] &&
			ok "tshark: all $ip IP packets of full.pcap have good checksums" ||
			fail "tshark: $good of $ip IP packets of full.pcap have good checksums"
	else
		fail "tshark is not installed (apt-get install tshark): cannot check the traces"
	fi
	check "$tmp/b.pcap" --batch 7                     # several records per message
	[ "${RB2_BASELINES:-1}" = 0 ] ||
		check "$tmp/b.pcap" --batch 7 --preset l5  # ... through L5's ring
	check "$tmp/a.pcap" --cm-width 4096               # with the sketch
	# The link as each of the paper's designs (sync policies end to end):
	# --preset, which the default config gives its link (a wrong one says so,
	# so the value does reach the link).
	for pre in farm socksdirect; do
		check "$tmp/b.pcap" --preset $pre
	done
	# --preset l5 is L5's own ring (via = l5), not a channel: every record
	# copied in and out (40 B each way) and cleared with its 16 B of length
	# and validity, as pfent/L5RDMA does. A build without the baselines
	# (meson -Dbaselines=false) says how to get it.
	if [ "${RB2_BASELINES:-1}" = 0 ]; then
		expect_err "not in this build; configure with meson configure -Dbaselines=true" \
			"$nf" "${eal[@]}" -- --trace "$tmp/b.pcap" --preset l5
	else
	check "$tmp/b.pcap" --preset l5
	run_nf "$tmp/l5.json" --trace "$tmp/b.pcap" --preset l5 --stats-json "$tmp/l5s.json" &&
	l5=$(json_get "$tmp/l5s.json" 'd["l5_links"][0]') &&
	recs=$(json_get "$tmp/l5.json" 'd["totals"]["packets"]') &&
	python3 - "$l5" "$recs" <<'EOF' && ok "--preset l5 ran L5's own ring: $l5" ||
import ast, sys
l5, n = ast.literal_eval(sys.argv[1]), int(sys.argv[2])
rec = 64    # struct rb2_rec: copied in and out, cleared with L5's 16-byte header
sys.exit(not (n > 0 and l5["messages"] == l5["received"] == n and
              l5["copied_bytes"] == 2 * rec * n and l5["cleared_bytes"] == (rec + 16) * n))
EOF
		fail "--preset l5: not L5's own ring, or it lost records: $l5 for ${recs:-?} records"
	fi
	expect_err "link 'records': unknown preset 'nonsense'" \
		"$nf" "${eal[@]}" -- --trace "$tmp/b.pcap" --preset nonsense
	# The reference must be able to fail: b's NF output is not a's.
	run_nf "$tmp/b.json" --trace "$tmp/b.pcap"
	if python3 "$ref" compare "$tmp/a.pcap" "$tmp/b.json" >/dev/null; then
		fail "the reference accepted another trace's results"
	else
		ok "the reference rejects another trace's results"
	fi
	# Loops: every loop counted; timestamps continue.
	run_nf "$tmp/l.json" --trace "$tmp/c.pcap" --loop 3 || fail "--loop 3"
	[ "$(json_get "$tmp/l.json" 'd["totals"]["packets"]')" = 300000 ] &&
		ok "--loop 3: 3 x 100000 records" || fail "--loop 3 packet count"
	# Pacing: 20000 records at 100 kpps take >= 0.2 s; at x1000 the
	# capture's 60 s take >= 0.06 s.
	"$gen" -o "$tmp/p.pcap" --packets 20000 --flows 100 --seed 4 >/dev/null
	for pace in "--pps 100000:0.19" "--multiplier 1000:0.055"; do
		run_nf "$tmp/p.json" --trace "$tmp/p.pcap" ${pace%:*} --stats-json "$tmp/s.json" ||
			fail "${pace%:*}"
		secs=$(json_get "$tmp/s.json" 'd["seconds"]')
		python3 -c "import sys; sys.exit(0 if $secs >= ${pace#*:} else 1)" &&
			ok "${pace%:*}: $secs s" || fail "${pace%:*} ran in $secs s, too fast"
	done
	;;
crafted)
	python3 "$ref" craft "$tmp/cr" >/dev/null
	for f in "$tmp"/cr/*; do
		check "$f"
	done
	# Access and core links as tshark decodes them: PPPoE sessions (some
	# over VLANs), MPLS stacks, and what is not IP (discovery, LCP, ARP,
	# LLDP, STP), named by kind in the replay's summary.
	if ! command -v tshark >/dev/null; then
		fail "tshark is not installed (apt-get install tshark): cannot check the decoder against it"
	elif run_nf "$tmp/ac.json" --trace "$tmp/cr/access-core.pcap" &&
		python3 "$ref" tshark "$tmp/cr/access-core.pcap" "$tmp/ac.json"; then
		ok "access-core.pcap: rb2-nf's kinds and IPv4 flows = tshark's"
	else
		fail "access-core.pcap: rb2-nf and tshark differ"
	fi
	grep -q "non-IP by kind: ethertype 5, arp 6, llc 4, pppoe_discovery 5, ppp_control 5" "$tmp/out.txt" &&
		ok "access-core.pcap: non-IP named by kind" ||
		{ fail "access-core.pcap: non-IP kinds not reported as expected"; grep "non-IP" "$tmp/out.txt"; }
	# Not crafted: a real PPPoE session, Linux's PPPoE and pppd against
	# rp-pppoe's server, captured on the wire (tests/verbs-vm/run.sh BUILD
	# pppoe made it). IPv4 and IPv6 inside the session, discovery, LCP,
	# IPCP and IPv6CP around them.
	cap=$src/tests/captures/pppoe-session.pcap
	if command -v tshark >/dev/null; then
		n=$(tshark -n -r "$cap" -Y "pppoes && ip" 2>/dev/null | wc -l)
		if [ "$n" -lt 10 ]; then
			fail "pppoe-session.pcap: tshark finds $n IPv4 packets in PPPoE sessions (at least 10 expected)"
		elif run_nf "$tmp/ps.json" --trace "$cap" &&
			python3 "$ref" tshark "$cap" "$tmp/ps.json"; then
			ok "pppoe-session.pcap (real): rb2-nf's kinds and IPv4 flows = tshark's ($n IPv4 in sessions)"
		else
			fail "pppoe-session.pcap (real): rb2-nf and tshark differ"
		fi
	fi
	check "$cap"
	;;
debian)
	g=/usr/share/gocode/src/github.com/google/gopacket
	if [ ! -d "$g/pcapgo/tests" ]; then
		echo "SKIP: no Debian captures: apt-get install golang-github-google-gopacket-dev"
		exit 77
	fi
	# Ethernet and NULL/loopback pcaps (IPv6 in the loopback one), and
	# pcapng in both byte orders: the files libpcap reads whole.
	for f in "$g"/pcap/test_{dns,ethernet,loopback}.pcap \
		"$g"/pcapgo/tests/{le,be}/test0{01,07,09,10,11,12,16,18}.pcapng \
		"$g"/pcapgo/tests/le/test902.pcapng; do
		check "$f"
	done
	# One libpcap stops early (interfaces of different snap lengths): the
	# NF says so, and measures exactly the packets before the cut.
	f=$g/pcapgo/tests/le/test100.pcapng
	run_nf "$tmp/t.json" --trace "$f"
	grep -q "truncated or corrupt after 1 packets" "$tmp/err.txt" &&
		[ "$(json_get "$tmp/t.json" 'd["totals"]["packets"]')" = 1 ] &&
		ok "test100.pcapng: libpcap's early stop is reported and counted" ||
		fail "test100.pcapng: no clear report of the early stop"
	;;
errors)
	"$gen" -o "$tmp/g.pcap" --packets 5000 --flows 50 --seed 5 >/dev/null
	: >"$tmp/empty.pcap"
	head -c 24 "$tmp/g.pcap" >"$tmp/header-only.pcap"
	head -c 100000 "$tmp/g.pcap" >"$tmp/cut.pcap"
	head -c 4000 /dev/urandom >"$tmp/garbage.pcap"
	expect_err "empty.pcap: cannot read it as pcap" "$nf" "${eal[@]}" -- --trace "$tmp/empty.pcap"
	expect_err "garbage.pcap: cannot read it as pcap" "$nf" "${eal[@]}" -- --trace "$tmp/garbage.pcap"
	expect_err "header-only.pcap holds no packet" "$nf" "${eal[@]}" -- --trace "$tmp/header-only.pcap"
	expect_err "no trace: give --trace FILE" "$nf" "${eal[@]}" --
	expect_err "missing.pcap: cannot read" "$nf" "${eal[@]}" -- --trace "$tmp/missing.pcap"
	# A file cut mid-packet: exactly the whole packets before the cut are
	# replayed and measured; the run then fails and says why, unless
	# --allow-truncated.
	n=$(python3 -c "
import sys; sys.path.insert(0, '$src/tests'); import nf_reference as r
n = 0
try:
    for _ in r.read_capture('$tmp/cut.pcap'): n += 1
except ValueError: pass
print(n)")
	run_nf "$tmp/cut.json" --trace "$tmp/cut.pcap"; rc=$?
	[ $rc = 1 ] && grep -q "truncated or corrupt after $n packets" "$tmp/err.txt" &&
		grep -q "stage 'replay': .*cut.pcap is cut short (after $n packets.*): only the $n records before the cut were replayed" "$tmp/out.txt" &&
		[ "$(json_get "$tmp/cut.json" 'd["totals"]["packets"]')" = "$n" ] &&
		ok "cut.pcap: the $n whole packets measured, the run fails naming the cut" ||
		{ fail "cut.pcap (exit $rc)"; cat "$tmp/out.txt" "$tmp/err.txt"; }
	run_nf "$tmp/cut.json" --trace "$tmp/cut.pcap" --allow-truncated && grep -q "truncated" "$tmp/err.txt" &&
		[ "$(json_get "$tmp/cut.json" 'd["totals"]["packets"]')" = "$n" ] &&
		ok "cut.pcap --allow-truncated: warned, exit 0" || fail "cut.pcap --allow-truncated"
	# Ethernet frames in a capture whose header says raw IP: nothing decodes
	# as IP; the NF refuses, naming the likely cause, unless --allow-non-ip.
	"$gen" -o "$tmp/eth.pcap" --packets 2000 --flows 50 --nonip 0.01 --seed 13 >/dev/null
	python3 -c "
import struct, sys
d = bytearray(open('$tmp/eth.pcap', 'rb').read())
d[20:24] = struct.pack('<I', 101)          # LINKTYPE_RAW
open('$tmp/mislabeled.pcap', 'wb').write(d)"
	expect_err "none of the 2000 packets of .*mislabeled.pcap decodes as IP under its link type, RAW: they look like Ethernet frames .*link type is probably wrong" \
		"$nf" "${eal[@]}" -- --trace "$tmp/mislabeled.pcap"
	run_nf "$tmp/m.json" --trace "$tmp/mislabeled.pcap" --allow-non-ip &&
		[ "$(json_get "$tmp/m.json" 'd["totals"]["nonip"] + d["totals"]["malformed"]')" = 2000 ] &&
		ok "--allow-non-ip measures them as non-IP" || fail "--allow-non-ip"
	# One corrupt timestamp, a year ahead: at --multiplier the replay would
	# wait a year; it is refused, naming the record, unless --maxsleep-ms.
	python3 -c "
import struct
d = bytearray(open('$tmp/g.pcap', 'rb').read())
off = 24
for i in range(100):                       # to the 101st record
    off += 16 + struct.unpack_from('<I', d, off + 8)[0]
sec = struct.unpack_from('<I', d, off)[0]
struct.pack_into('<I', d, off, sec + 365 * 86400)
open('$tmp/ts.pcap', 'wb').write(d)"
	expect_err "record 100 of .*ts.pcap comes 31536000 s of capture time after the one before: at multiplier 1 the replay would wait 31536000 s" \
		"$nf" "${eal[@]}" -- --trace "$tmp/ts.pcap" --multiplier 1
	start=$(date +%s)
	run_nf "$tmp/ts.json" --trace "$tmp/ts.pcap" --multiplier 1000 --maxsleep-ms 200 &&
		[ $(( $(date +%s) - start )) -lt 30 ] &&
		[ "$(json_get "$tmp/ts.json" 'd["totals"]["packets"]')" = 5000 ] &&
		ok "--maxsleep-ms 200: the corrupt gap is cut short, every record measured" ||
		fail "--maxsleep-ms"
	# Arguments and EAL.
	expect_err "EAL initialization failed" "$nf" -l 0-1 --no-pci --no-such-eal-arg --
	expect_err "unexpected argument 'stray'" "$nf" "${eal[@]}" -- --trace "$tmp/g.pcap" stray
	expect_err "invalid pps = 'fast'" "$nf" "${eal[@]}" -- --trace "$tmp/g.pcap" --pps fast
	expect_err "pps and multiplier both set" "$nf" "${eal[@]}" -- --trace "$tmp/g.pcap" \
		--pps 10 --multiplier 2
	expect_err "invalid batch = '65'.*\[1, 64\]" "$nf" "${eal[@]}" -- --trace "$tmp/g.pcap" --batch 65
	expect_err "preload = no with loop: a paced or looped replay reads the trace from memory.*\(from --preload no\)" \
		"$nf" "${eal[@]}" -- --trace "$tmp/g.pcap" --preload no --loop 2
	expect_err "preload = maybe: expected auto, yes or no \(from --preload maybe\)" \
		"$nf" "${eal[@]}" -- --trace "$tmp/g.pcap" --preload maybe
	# Configurations: every error names the file and the line.
	cfg() { printf '%s\n' "$@" >"$tmp/c.ini"; }
	base=("[stage replay]" "type = replay" "lcore = 0" "trace = $tmp/g.pcap"
	      "[stage measure]" "type = measure" "lcore = 1"
	      "[link r]" "from = replay.out" "to = measure")
	run() { "$nf" "${eal[@]}" -- --config "$tmp/c.ini" "$@"; }
	cfg "${base[@]}"
	run >/dev/null 2>&1 && ok "the base configuration runs" || fail "base configuration"
	cfg "${base[@]}" "[stage x]" "type = nosuch" "lcore = 0"
	expect_err "c.ini:12: stage 'x': unknown type 'nosuch'" run
	cfg "${base[@]:0:6}" "lcore = 7" "${base[@]:7}"
	expect_err "c.ini:7: stage 'measure' is placed on lcore 7, which this EAL does not run" run
	cfg "${base[@]}" "alpha = 0"
	expect_err "c.ini:11: \[link r\]: invalid alpha = '0'" run
	cfg "${base[@]}" "slots = 1000"
	expect_err "c.ini:8: link 'r': .*slots" run
	cfg "${base[@]}" "via = smoke"
	expect_err "c.ini:11: link 'r': via = 'smoke': expected rb2 .* or l5" run
	cfg "${base[@]:0:6}" "lcore = 0" "${base[@]:7}" "via = l5"
	expect_err "link 'r': via = l5 carries messages between two lcores of this process" run
	# A message larger than half of L5's ring (128 B here) is refused, and
	# the run fails saying so.
	if [ "${RB2_BASELINES:-1}" = 1 ]; then
		cfg "${base[@]:0:4}" "batch = 7" "${base[@]:4}" "via = l5" "slots = 2" \
			"alpha = 1" "beta = 1" "gamma = 1"
		expect_err "stage 'replay' stopped: Message too long" run
	fi
	cfg "${base[@]:0:4}" "tpo = 5" "${base[@]:4}"
	expect_err "c.ini:5: stage 'replay' \(type replay\) takes no argument 'tpo'; it takes: trace" run
	cfg "${base[@]:0:9}" "to = nobody"
	expect_err "c.ini:10: link 'r': no stage named 'nobody'" run
	cfg "${base[@]:0:8}" "from = replay.in" "to = measure"
	expect_err "c.ini:9: link 'r': stage 'replay' \(type replay\) has no edge 'in'" run
	cfg "${base[@]}" "[link back]" "from = measure" "to = replay"
	expect_err "c.ini:13: link 'back': stage 'replay' \(type replay\) is a source" run
	cfg "${base[@]}" "[stage x]" "type = ipfix" "lcore = 1" "file = $tmp/x.ipfix" \
		"[link back]" "from = x" "to = measure"
	expect_err "link 'back': stage 'x' \(type ipfix\) is a sink" run
	cfg "${base[@]}" "[stage f]" "type = replay" "lcore = 0" "trace = \${nope}"
	expect_err "c.ini:14: unknown variable \\$\{nope\}" run
	cfg "${base[@]}" "[oops"
	expect_err "c.ini:11: section header without" run
	cfg "${base[@]}" "just words"
	expect_err "c.ini:11: expected 'key = value'" run
	cfg "${base[@]}" "[stage replay]"
	expect_err "c.ini:11: section \[stage replay\] again \(first at line 1\)" run
	cfg "${base[@]:0:2}" "type = measure"
	expect_err "c.ini:3: 'type' set twice in \[stage replay\] \(first at line 2\)" run
	cfg "${base[@]}" "[thing]"
	expect_err "c.ini:11: unknown section \[thing\]" run
	expect_err "nosuch.ini: cannot open" "$nf" "${eal[@]}" -- --config "$tmp/nosuch.ini"
	# An option the configuration never uses is pointed out.
	cfg "${base[@]}"
	run --top 3 >/dev/null 2>"$tmp/err.txt"
	grep -q -- "--top has no effect" "$tmp/err.txt" && ok "unused --top is pointed out" ||
		fail "unused --top not pointed out"
	# A source whose output goes nowhere is refused before it runs.
	cfg "${base[@]:0:7}"
	expect_err "c.ini:1: stage 'replay' \(type replay\) sends its output nowhere: no \[link\] has from = replay.out" run
	# Results that cannot be written fail at once, not after a long run...
	expect_err "stage 'measure' \(type measure\): cannot write the results to $tmp/no/dir/f.json: No such file" \
		"$nf" "${eal[@]}" -- --trace "$tmp/g.pcap" --json "$tmp/no/dir/f.json"
	expect_err "cannot write the flows to $tmp/no/dir/f.csv" \
		"$nf" "${eal[@]}" -- --trace "$tmp/g.pcap" --csv "$tmp/no/dir/f.csv"
	expect_err "cannot write the statistics to $tmp/no/dir/s.json" \
		"$nf" "${eal[@]}" -- --trace "$tmp/g.pcap" --stats-json "$tmp/no/dir/s.json"
	grep -q "preloaded" "$tmp/err.txt" && fail "the trace was preloaded before the bad path failed"
	# ... and a write that fails at the end (a full disk) fails the run.
	expect_err "the run was not clean" "$nf" "${eal[@]}" -- --trace "$tmp/g.pcap" --json /dev/full
	grep -q "stage 'measure': writing /dev/full: No space left on device" "$tmp/out.txt" &&
		ok "a results file that fills the disk is named in the summary" ||
		{ fail "no summary line for the failed write"; cat "$tmp/out.txt"; }
	;;
plugin)
	# As a new user would: install, then build the example with pkg-config.
	dest=$tmp/dest
	meson install -C "$build" --destdir "$dest" --quiet >/dev/null ||
		{ fail "meson install"; exit 1; }
	pc=$(find "$dest" -name librb2.pc | head -1)
	[ -n "$pc" ] || { fail "no librb2.pc installed"; exit 1; }
	# Used where it lies, unedited: it finds its prefix from its own place.
	inc=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags-only-I librb2 | tr ' ' '\n' |
		grep -m1 "/rb2$" | sed 's/^-I//')
	[ -f "$inc/rb2_stage.h" ] && ok "librb2.pc under a --destdir points into it ($inc)" ||
		fail "librb2.pc under a --destdir does not point at its headers: '$inc'"
	cp -r "$src/examples/stage-filter" "$tmp/ex"
	if ! PKG_CONFIG_PATH=$(dirname "$pc") make -C "$tmp/ex" >"$tmp/make.txt" 2>&1; then
		fail "building examples/stage-filter with pkg-config"; cat "$tmp/make.txt"; exit 1
	fi
	ok "examples/stage-filter built with pkg-config --cflags --libs librb2"
	"$gen" -o "$tmp/g.pcap" --packets 100000 --flows 2000 --seed 6 --ipv6 0.2 >/dev/null
	(cd "$tmp/ex" && "$nf" "${eal[@]}" -- --plugin ./filter.so --config filter.ini \
		--trace "$tmp/g.pcap" --json "$tmp/f.json" --stats-json "$tmp/s.json") \
		>"$tmp/out.txt" 2>&1 || { fail "rb2-nf with the plugin"; cat "$tmp/out.txt"; }
	want=$(python3 -c "
import sys; sys.path.insert(0, '$src/tests'); import nf_reference as r
print(sum(1 for lt, ts, d, o in r.read_capture('$tmp/g.pcap')
          if r.decode(lt, d)['kind'] in ('ipv4', 'ipv6') and r.decode(lt, d)['proto'] == 6))")
	got=$(json_get "$tmp/f.json" 'd["totals"]["packets"]')
	[ "$got" = "$want" ] && ok "filter plugin: $got TCP records measured, as the reference" ||
		fail "filter plugin: measured $got TCP records, reference $want"
	filtered=$(json_get "$tmp/s.json" '[s for s in d["stages"] if s["name"]=="filter"][0]["counters"]["filtered"]')
	[ $((got + filtered)) = 100000 ] && ok "filter plugin: kept + filtered = every record" ||
		fail "filter plugin: $got + $filtered != 100000"
	(cd "$tmp/ex" && "$nf" "${eal[@]}" -- --plugin ./filter.so --list-stages) | grep -q "filter" &&
		ok "--list-stages shows the plugin's stage" || fail "--list-stages"
	p=$build/tests/plugins
	expect_err "bad_version.so: .*built for stage API v[0-9]*; this rb2 implements v[0-9]*: rebuild it" \
		"$nf" "${eal[@]}" -- --plugin "$p/bad_version.so" --list-stages
	expect_err "bad_symbol.so: cannot load: .*undefined symbol: rb2_function_that_does_not_exist" \
		"$nf" "${eal[@]}" -- --plugin "$p/bad_symbol.so" --list-stages
	expect_err "dup_name.so: stage 'measure' is already registered by .*librb2" \
		"$nf" "${eal[@]}" -- --plugin "$p/dup_name.so" --list-stages
	expect_err "not_plugin.so: not an rb2 plugin" \
		"$nf" "${eal[@]}" -- --plugin "$p/not_plugin.so" --list-stages
	# A plugin that crashes in init() is named, with where it was configured.
	printf '[stage replay]\ntype = replay\nlcore = 0\ntrace = %s\n[stage c]\ntype = crasher\nlcore = 1\n[link l]\nfrom = replay\nto = c\n' \
		"$tmp/g.pcap" >"$tmp/crash.ini"
	expect_err "stage 'c' \(type crasher, from .*crash_init.so; .*crash.ini:5\) crashed in its init\(\): SIGSEGV" \
		"$nf" "${eal[@]}" -- --plugin "$p/crash_init.so" --config "$tmp/crash.ini"
	expect_err "nosuch.so: cannot load" "$nf" "${eal[@]}" -- --plugin "$tmp/nosuch.so" --list-stages
	# The EAL's -d loads plugins too; a bad one is reported the same way.
	# (The EAL refuses plugins below a world-writable directory, as /tmp
	# where a CI clone may live: give it a private copy.)
	pdir=$(mktemp -d "${HOME:-/root}/.rb2-plugin-test.XXXXXX" 2>/dev/null) || pdir=
	if [ -n "$pdir" ] && cp "$p/dup_name.so" "$pdir/"; then
		expect_err "stage 'measure' is already registered" \
			"$nf" "${eal[@]}" -d "$pdir/dup_name.so" -- --list-stages
		rm -rf "$pdir"
	else
		echo "note: no private directory under \$HOME for the EAL's -d check; skipped it"
	fi
	;;
twoproc)
	free=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
	if [ "${free:-0}" -lt 128 ] || ! mountpoint -q /dev/hugepages; then
		echo "SKIP: DPDK multi-process needs hugepages: as root, usertools/rb2-hugepages.sh 1024"
		exit 77
	fi
	"$gen" -o "$tmp/g.pcap" --packets 400000 --flows 30000 --seed 7 --ipv6 0.1 --nonip 0.02 >/dev/null
	run_nf "$tmp/one.json" --trace "$tmp/g.pcap" || fail "one process"
	pfx=rb2t-nf2-$$
	cfg=$src/config/nf-two-proc.ini
	# measure is the primary (it outlives the sender); replay a secondary.
	"$nf" -l 1 --no-pci -m 256 --file-prefix "$pfx" --proc-type=primary "${mp_mem[@]}" \
		--base-virtaddr="$base_va" --log-level=lib.eal:warning -- \
		--config "$cfg" --proc measure --json "$tmp/two.json" \
		>"$tmp/m.txt" 2>&1 &
	mpid=$!
	wait_socket "$pfx"
	"$nf" -l 0 --no-pci -m 256 --file-prefix "$pfx" --proc-type=secondary "${mp_mem[@]}" \
		--log-level=lib.eal:warning -- --config "$cfg" --proc replay --trace "$tmp/g.pcap" \
		>"$tmp/r.txt" 2>&1 || { fail "replay process"; cat "$tmp/r.txt"; }
	wait $mpid || { fail "measure process"; cat "$tmp/m.txt"; }
	if python3 - "$tmp/one.json" "$tmp/two.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
key = lambda f: json.dumps(f, sort_keys=True)
same = a["totals"] == b["totals"] and sorted(map(key, a["flow_list"])) == sorted(map(key, b["flow_list"]))
print(f"one process: {a['totals']['packets']} records, {a['flows']} flows; "
      f"two processes: {b['totals']['packets']} records, {b['flows']} flows")
sys.exit(0 if same else 1)
PY
	then
		ok "two processes over shm = one process, flow for flow"
	else
		fail "two processes differ from one"
	fi
	python3 "$ref" compare "$tmp/g.pcap" "$tmp/two.json" || fail "two processes vs reference"
	remove_hugefiles "$pfx"

	# A secondary whose primary died while starting (its shared configuration
	# never completed: here, a file of zeros) is told so, and exits.
	pfx=rb2t-nf2z-$$
	mkdir -p "/var/run/dpdk/$pfx" && truncate -s 16M "/var/run/dpdk/$pfx/config"
	RB2_SECONDARY_WAIT_S=2 timeout 60 "$nf" -l 0 --no-pci -m 256 --file-prefix "$pfx" \
		--proc-type=secondary "${mp_mem[@]}" --log-level=lib.eal:warning -- --config "$cfg" --proc replay \
		--trace "$tmp/g.pcap" >"$tmp/z.txt" 2>&1
	rc=$?
	grep -q "has waited 2 s for its primary (--file-prefix $pfx) to finish starting" "$tmp/z.txt" &&
		[ $rc = 1 ] && ok "a secondary whose primary never finished starting says so and exits 1" ||
		{ fail "secondary without a primary: rc $rc"; cat "$tmp/z.txt"; }
	rm -rf "/var/run/dpdk/$pfx"

	# Stopping a split pipeline, as a user would: replay loops (over a small
	# trace, so that it has surely looped when the signal comes) until
	# stopped; Ctrl-C goes to one of the two processes. Both must stop within
	# a bounded time, every record sent measured, and both exit 0.
	"$gen" -o "$tmp/small.pcap" --packets 20000 --flows 500 --seed 9 >/dev/null
	for victim in measure replay; do
		pfx=rb2t-nf2s-$victim-$$
		"$nf" -l 1 --no-pci -m 256 --file-prefix "$pfx" --proc-type=primary "${mp_mem[@]}" \
			--base-virtaddr="$base_va" --log-level=lib.eal:warning -- \
			--config "$cfg" --proc measure --json "$tmp/s.json" >"$tmp/m.txt" 2>&1 &
		mpid=$!
		wait_socket "$pfx"
		"$nf" -l 0 --no-pci -m 256 --file-prefix "$pfx" --proc-type=secondary "${mp_mem[@]}" \
			--log-level=lib.eal:warning -- --config "$cfg" --proc replay --loop 0 \
			--trace "$tmp/small.pcap" --stats-json "$tmp/rs.json" >"$tmp/r.txt" 2>&1 &
		rpid=$!
		# Running (a secondary's start can take seconds on a loaded
		# machine), then many passes of the trace.
		for _ in $(seq 300); do grep -q "^rb2-nf: running" "$tmp/r.txt" && break; sleep 0.1; done
		sleep $((1 * slow))
		t0=$(date +%s%N)
		[ $victim = measure ] && kill -INT $mpid || kill -INT $rpid
		wait_gone 30 $mpid $rpid
		ms=$(( ($(date +%s%N) - t0) / 1000000 ))
		wait $mpid; mrc=$?
		wait $rpid; rrc=$?
		sent=$(json_get "$tmp/rs.json" '[s for s in d["stages"] if s["name"]=="replay"][0]["edges"]["out"]["msgs"]' 2>/dev/null)
		got=$(json_get "$tmp/s.json" 'd["totals"]["packets"]' 2>/dev/null)
		if [ $mrc = 0 ] && [ $rrc = 0 ] && [ $ms -lt 15000 ] && [ -n "$sent" ] &&
			[ "$sent" = "$got" ] && [ "$got" -gt 20000 ]; then
			ok "Ctrl-C on the $victim process stops both in $ms ms; all $sent records sent were measured"
			[ $victim = replay ] || grep -q "a receiver asked to stop" "$tmp/r.txt" ||
				fail "the replay process does not say why it stopped"
		else
			fail "Ctrl-C on $victim: measure rc $mrc, replay rc $rrc, $ms ms, sent $sent, measured $got"
			cat "$tmp/m.txt" "$tmp/r.txt"
		fi
		remove_hugefiles "$pfx"
	done

	# The measure process killed: the replay process sees its receiver die
	# within a bounded time, exits non-zero, and says how much it had sent.
	pfx=rb2t-nf2k-$$
	"$nf" -l 1 --no-pci -m 256 --file-prefix "$pfx" --proc-type=primary "${mp_mem[@]}" \
		--base-virtaddr="$base_va" --log-level=lib.eal:warning -- \
		--config "$cfg" --proc measure >"$tmp/m.txt" 2>&1 &
	mpid=$!
	wait_socket "$pfx"
	"$nf" -l 0 --no-pci -m 256 --file-prefix "$pfx" --proc-type=secondary "${mp_mem[@]}" \
		--log-level=lib.eal:warning -- --config "$cfg" --proc replay --loop 0 --pps 1000 \
		--trace "$tmp/g.pcap" >"$tmp/r.txt" 2>&1 &
	rpid=$!
	# Killed once the link is up (the replay runs), not after a guess.
	wait_text 90 "$tmp/r.txt" "running process replay"
	sleep 1
	kill -9 $mpid
	t0=$(date +%s%N)
	wait_gone 30 $rpid
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	wait $rpid; rrc=$?
	if [ $rrc = 1 ] && [ $ms -lt 5000 ] &&
		grep -q "link 'records' to stage 'measure' (proc measure) failed: Connection reset by peer; [0-9]* message(s) were sent on it before" "$tmp/r.txt"; then
		ok "measure killed: the replay process exits 1 after $ms ms, saying what was sent"
	else
		fail "measure killed: replay rc $rrc after $ms ms"; cat "$tmp/r.txt"
	fi
	remove_hugefiles "$pfx"
	;;
signal)
	"$gen" -o "$tmp/g.pcap" --packets 50000 --flows 1000 --seed 8 >/dev/null
	"$nf" "${eal[@]}" -- --trace "$tmp/g.pcap" --loop 0 --pps 2000000 --json "$tmp/s.json" \
		--stats-json "$tmp/st.json" >"$tmp/out.txt" 2>"$tmp/err.txt" &
	pid=$!
	sleep 2
	# While it runs, the stages' counters are in DPDK telemetry (asked
	# until they are there: the stages register once the pipeline runs,
	# later than 2 s under ThreadSanitizer).
	tel=$(command -v dpdk-telemetry.py || true)
	if [ -n "$tel" ]; then
		for _ in $(seq 30); do
			echo /rb2/pipeline/stages | python3 "$tel" -f "rb2t-nf-$mode-$$" >"$tmp/tel.txt" 2>&1
			grep -q '"records"' "$tmp/tel.txt" && break
			sleep 0.5
		done
		grep -q '"measure": {"type": "measure"' "$tmp/tel.txt" &&
			grep -q '"records"' "$tmp/tel.txt" && ok "telemetry /rb2/pipeline/stages" ||
			{ fail "telemetry /rb2/pipeline/stages"; cat "$tmp/tel.txt"; }
	fi
	sleep 1
	kill -INT $pid
	wait $pid
	rc=$?
	sent=$(json_get "$tmp/st.json" '[s for s in d["stages"] if s["name"]=="replay"][0]["edges"]["out"]["msgs"]')
	got=$(json_get "$tmp/s.json" 'd["totals"]["packets"]')
	if [ $rc = 0 ] && grep -q "stopped, drained" "$tmp/out.txt" && [ "$sent" = "$got" ] &&
		[ "$got" -gt 50000 ]; then
		ok "SIGINT: drained, all $sent records sent were measured"
	else
		fail "SIGINT: rc $rc, sent $sent, measured $got"; cat "$tmp/out.txt" "$tmp/err.txt"
	fi
	;;
shards)
	"$gen" -o "$tmp/g.pcap" --packets 100000 --flows 10000 --ipv6 0.2 --seed 8 >/dev/null
	python3 "$ref" craft "$tmp/cr" >/dev/null
	for t in "$tmp/g.pcap" "$tmp/cr/access-core.pcap"; do
		if run_nf "$tmp/one.json" --trace "$t" --idle-timeout 2 --active-timeout 10 &&
			run_nf "$tmp/two.json" --config "$src/config/nf-sharded.ini" --flows 256k --trace "$t" \
				--idle-timeout 2 --active-timeout 10 --ipfix-file "$tmp/two.ipfix"; then
			if python3 - "$tmp/one.json" "$tmp/two.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
def recs(d):
    # A record's content; its end reason, save that a run's end may find a
    # record already swept by its timeout (forced / idle / active alike).
    end = lambda e: "timeout-or-forced" if e in ("forced", "idle", "active") else e
    return sorted((f["kind"], f["src"], f["dst"], f["sport"], f["dport"], f["proto"],
                   f["first_ns"], f["last_ns"], f["packets"], f["bytes"], f["tcp_flags"],
                   end(f["end"])) for f in d["flow_list"])
top = lambda d: [(f["src"], f["dst"], f["sport"], f["dport"], f["bytes"], f["packets"]) for f in d["top"]]
tot = lambda d: {k: v for k, v in d["totals"].items() if k != "cycles_per_record"}
bad = [k for k, ok in (("records", recs(a) == recs(b)), ("totals", tot(a) == tot(b)),
                       ("top", top(a) == top(b)), ("intervals", a["intervals"] == b["intervals"]),
                       ("shards", b["shards"] == 2)) if not ok]
print(f"{a['flows']} flow records, one stage and two shards" + (": differ in " + ", ".join(bad) if bad else ""))
sys.exit(1 if bad else 0)
PY
			then ok "$(basename "$t"): two shards = one measure stage (records, totals, rates, top-K)"
			else fail "$(basename "$t"): two shards differ from one measure stage"; fi
			python3 "$ref" compare "$t" "$tmp/two.json" >/dev/null &&
				python3 "$ref" ipfix "$tmp/two.ipfix" "$tmp/two.json" >/dev/null &&
				ok "$(basename "$t"): two shards = the reference; their one IPFIX stream = their records" ||
				fail "$(basename "$t"): two shards against the reference or their IPFIX file"
		else
			fail "rb2-nf on $(basename "$t"), one stage or two shards: exit $?"; cat "$tmp/err.txt"
		fi
	done
	# Periodic reports: a line per 20 s of the 60 s trace, which add up to
	# the run's totals and records.
	if run_nf "$tmp/r.json" --trace "$tmp/g.pcap" --report-interval 20 --report-file "$tmp/r.jsonl" \
		--active-timeout 20 && python3 - "$tmp/r.jsonl" "$tmp/r.json" <<'PY'
import json, sys
lines = [json.loads(x) for x in open(sys.argv[1])]
nf = json.load(open(sys.argv[2]))
print(f"{len(lines)} lines: packets {[x['packets'] for x in lines]}, records {[x['flow_records'] for x in lines]}")
sys.exit(not (len(lines) == 3 and sum(x["packets"] for x in lines) == nf["totals"]["packets"] and
              sum(x["flow_records"] for x in lines) == nf["flows"] and
              all(x["seconds"] > 19 and (len(x["top"]) > 0) == (x["flow_records"] > 0)
                  for x in lines)))
PY
	then ok "--report-interval 20: a line per interval, adding up to the run's totals and records"
	else fail "--report-interval: lines do not add up"; fi
	# A shard stage linked s1 but not s0 is refused with the reason.
	sed 's/^from = shard.s0/from = shard.s2/' "$src/config/nf-sharded.ini" >"$tmp/bad.ini"
	expect_err "edge s[12] is linked but s0 is not" "$nf" "${eal[@]}" -- --config "$tmp/bad.ini" \
		--trace "$tmp/g.pcap"
	;;
ipfix)
	for t in nfcapd nfdump; do
		command -v $t >/dev/null ||
			{ echo "SKIP: $t is not installed (apt-get install nfdump)"; exit 77; }
	done
	free_port() {
		python3 -c "import socket,sys; s=socket.socket(socket.AF_INET6 if ':' in sys.argv[1] else socket.AF_INET, socket.SOCK_DGRAM); s.bind((sys.argv[1], 0)); print(s.getsockname()[1])" "$1"
	}
	# start_col DIR ADDR [nfcapd options]: a collector on a free port ($port).
	# Its socket buffer is 4 MiB (or what net.core.rmem_max allows) unless
	# the options say otherwise: rb2-nf's two lcores keep both vCPUs busy,
	# so nfcapd can wait tens of ms for a CPU while the export sends up to
	# 10000 messages a second. The default 208 KiB holds about 90 of them,
	# and the kernel drops the rest unseen by the sender (nfcapd counts
	# them as sequence errors).
	start_col() {
		local dir=$1 addr=$2; shift 2
		rm -rf "$dir"; mkdir -p "$dir"
		port=$(free_port "$addr")
		[ $# -eq 0 ] && set -- -B 4194304
		nfcapd -w "$dir" -p "$port" -b "$addr" "$@" >"$dir.log" 2>&1 &
		colpid=$!
		wait_text 10 "$dir.log" "Startup"
	}
	# stop_col: once nfcapd has read every datagram queued on its socket
	# (rx_queue 0 in /proc/net/udp*), or after 10 s: nfcapd leaves on
	# SIGTERM without reading what is still queued, and a short run's
	# records can all be there when the NF exits.
	stop_col() {
		local hex end=$(( $(date +%s) + 10 ))
		hex=$(printf ':%04X' "$port")
		while [ "$(date +%s)" -lt "$end" ] && kill -0 "$colpid" 2>/dev/null &&
			awk -v p="$hex" '$2 ~ p"$" { split($5, q, ":"); if (q[2] !~ /^0+$/) busy = 1 }
				END { exit !busy }' /proc/net/udp /proc/net/udp6; do
			sleep 0.05
		done
		kill -TERM "$colpid" 2>/dev/null
		wait "$colpid" 2>/dev/null
	}
	# collected DIR NF_JSON WHAT: nfdump's records of DIR = the NF's.
	collected() {
		if TZ=UTC nfdump -R "$1" -o json >"$1.json" 2>"$1.err" &&
			python3 "$ref" nfdump "$1.json" "$2" >"$tmp/cmp.txt"; then
			ok "$3: nfdump reads back the NF's records, each"
		else
			fail "$3: the collector's records differ"; head -5 "$tmp/cmp.txt" "$1.err"
		fi
	}
	"$gen" -o "$tmp/g.pcap" --packets 100000 --flows 10000 --ipv6 0.2 --seed 5 >/dev/null
	python3 "$ref" craft "$tmp/cr" >/dev/null

	# Timeouts cut a 60 s trace's flows; every record reaches nfcapd and
	# the file, and equals the reference's.
	start_col "$tmp/c1" 127.0.0.1
	if run_nf "$tmp/t.json" --trace "$tmp/g.pcap" --idle-timeout 2 --active-timeout 10 \
		--ipfix "127.0.0.1:$port" --ipfix-file "$tmp/t.ipfix"; then
		stop_col
		python3 "$ref" compare "$tmp/g.pcap" "$tmp/t.json" >"$tmp/cmp.txt" &&
			ok "timeouts: the NF's records = the reference's ($(head -1 "$tmp/cmp.txt"))" ||
			{ fail "timeouts: the NF's records differ from the reference"; head "$tmp/cmp.txt"; }
		collected "$tmp/c1" "$tmp/t.json" "timeouts, to nfcapd"
		python3 "$ref" ipfix "$tmp/t.ipfix" "$tmp/t.json" >"$tmp/cmp.txt" &&
			ok "--ipfix-file: $(cat "$tmp/cmp.txt")" ||
			{ fail "--ipfix-file differs"; head "$tmp/cmp.txt"; }
		n=$(json_get "$tmp/t.json" 'min(d["ended"]["idle"], d["ended"]["active"])')
		[ "$n" -gt 0 ] && ok "timeouts: idle and active records both" ||
			fail "timeouts: expected idle and active records: $(json_get "$tmp/t.json" 'd["ended"]')"
	else
		stop_col; fail "rb2-nf --ipfix: exit $?"; cat "$tmp/err.txt"
	fi

	# TCP teardowns: records end with FIN/RST (reason end), as the reference cuts them.
	start_col "$tmp/c2" 127.0.0.1
	if run_nf "$tmp/f.json" --trace "$tmp/cr/access-core.pcap" --ipfix "127.0.0.1:$port" \
		--ipfix-file "$tmp/f.ipfix"; then
		stop_col
		python3 "$ref" compare "$tmp/cr/access-core.pcap" "$tmp/f.json" >"$tmp/cmp.txt" &&
			[ "$(json_get "$tmp/f.json" 'd["ended"]["end"]')" -gt 0 ] &&
			python3 "$ref" ipfix "$tmp/f.ipfix" "$tmp/f.json" >/dev/null &&
			ok "FIN/RST: $(json_get "$tmp/f.json" 'd["ended"]["end"]') records end on a teardown, flowEndReason 3, as the reference" ||
			{ fail "FIN/RST records"; head "$tmp/cmp.txt"; }
		collected "$tmp/c2" "$tmp/f.json" "FIN/RST, to nfcapd"
	else
		stop_col; fail "rb2-nf --ipfix on access-core.pcap: exit $?"; cat "$tmp/err.txt"
	fi

	# Ten times more flows than the table holds: evictions, counted; the
	# table's memory stays what it said; every packet in exactly one record.
	"$gen" -o "$tmp/many.pcap" --packets 100000 --flows 60000 --seed 6 >/dev/null
	start_col "$tmp/c3" 127.0.0.1
	if run_nf "$tmp/m.json" --trace "$tmp/many.pcap" --flows 2000 --ipfix "127.0.0.1:$port"; then
		stop_col
		TZ=UTC nfdump -R "$tmp/c3" -o json >"$tmp/c3.json" 2>/dev/null
		if python3 - "$tmp/m.json" "$tmp/c3.json" >"$tmp/full.txt" <<'PY'
import json, sys
nf, col = (json.load(open(p)) for p in sys.argv[1:])
t, cap = nf["totals"], 2000
flows = t["ipv4"] + t["ipv6"]
slots = 64
while slots // 10 * 7 < cap:
    slots *= 2
bound = slots * (64 + 16) + slots // 8 + cap * 40 + 4096
got = sum(r["in_packets"] for r in col if r.get("type") == "FLOW")
print(f"{len(col)} records at the collector, {got} packets of {flows}; peak {nf['peak_flows']} "
      f"flows held; {nf['ended']['evicted']} evicted; table {nf['table_bytes_peak']} B at "
      f"its largest, {nf['table_bytes']} B at most (bound {bound})")
sys.exit(not (got == flows and nf["peak_flows"] <= cap and nf["ended"]["evicted"] > 0 and
              nf["table_bytes"] <= bound and nf["table_bytes_peak"] <= nf["table_bytes"] and
              nf["flows"] >= 10 * cap))
PY
		then ok "a full table of 2000: $(cat "$tmp/full.txt")"
		else fail "a full table of 2000: $(cat "$tmp/full.txt"); nfcapd: $(grep -o "Sequence Errors: [0-9]*" "$tmp/c3.log" | tail -1)"; fi
	else
		stop_col; fail "rb2-nf --flows 2000: exit $?"; cat "$tmp/err.txt"
	fi

	# A run's end holding more flows than one drain() call ends (65536):
	# every record still reaches the exporter on measure's lcore.
	"$gen" -o "$tmp/wide.pcap" --packets 150000 --flows 150000 --zipf 0.3 --seed 10 >/dev/null
	if run_nf "$tmp/w.json" --trace "$tmp/wide.pcap" --ipfix-file "$tmp/w.ipfix" &&
		python3 "$ref" ipfix "$tmp/w.ipfix" "$tmp/w.json" >"$tmp/cmp.txt" &&
		[ "$(json_get "$tmp/w.json" 'd["ended"]["forced"]')" -gt 65536 ]; then
		ok "a final flush of $(json_get "$tmp/w.json" 'd["ended"]["forced"]') records, in pieces: $(cat "$tmp/cmp.txt")"
	else
		fail "a large final flush"; head -3 "$tmp/cmp.txt" "$tmp/err.txt"
	fi

	# Nothing listening: drops counted, one warning, measurement complete,
	# and the exit status says what was lost.
	port=$(free_port 127.0.0.1)
	if run_nf "$tmp/d.json" --trace "$tmp/g.pcap" --idle-timeout 2 --ipfix "127.0.0.1:$port"; then
		fail "nothing listening: exit 0"
	elif grep -q "did not reach the collector 127.0.0.1:$port" "$tmp/err.txt" &&
		[ "$(grep -c "are being dropped" "$tmp/err.txt")" = 1 ] &&
		python3 "$ref" compare "$tmp/g.pcap" "$tmp/d.json" >/dev/null; then
		ok "nothing listening: $(grep -o "[0-9]* IPFIX messages ([0-9]* flow records) did not reach" "$tmp/err.txt"), one warning, every record measured, exit 1"
	else
		fail "nothing listening"; cat "$tmp/err.txt" | tail -5
	fi

	# The collector killed mid-run (records flow during the run: a paced
	# replay, short idle timeout).
	start_col "$tmp/c4" 127.0.0.1
	run_nf "$tmp/k.json" --trace "$tmp/g.pcap" --pps 50000 --idle-timeout 0.5 \
		--ipfix "127.0.0.1:$port" &
	pid=$!
	sleep 1
	kill -9 "$colpid"; wait "$colpid" 2>/dev/null
	wait $pid
	rc=$?
	if [ $rc = 1 ] && grep -q "did not reach the collector" "$tmp/err.txt" &&
		python3 "$ref" compare "$tmp/g.pcap" "$tmp/k.json" >/dev/null; then
		ok "collector killed mid-run: $(grep -o "to 127[^:]*:[0-9]*: .*" "$tmp/out.txt"), every record measured, exit 1"
	else
		fail "collector killed mid-run: rc $rc"; tail -5 "$tmp/out.txt" "$tmp/err.txt"
	fi

	# A collector that stalls (SIGSTOP) mid-run with a small socket
	# buffer: the kernel drops what does not fit, unseen by the sender, and
	# nfcapd counts the gap from the sequence numbers of the messages that
	# follow its resumption (a paced run, so records flow throughout).
	start_col "$tmp/c5" 127.0.0.1 -B 2048
	run_nf "$tmp/b.json" --trace "$tmp/g.pcap" --pps 50000 --idle-timeout 0.5 \
		--ipfix "127.0.0.1:$port" &
	pid=$!
	sleep 0.5; kill -STOP "$colpid"; sleep 0.7; kill -CONT "$colpid"
	wait $pid
	stop_col
	n=$(grep -o "Sequence Errors: [0-9]*" "$tmp/c5.log" | awk '{s += $3} END {print s + 0}')
	[ "$n" -gt 0 ] && ok "a stalled collector: nfcapd counts $n sequence errors (its losses, from our sequence numbers)" ||
		{ fail "a stalled collector: no sequence error counted"; cat "$tmp/c5.log"; }

	# An IPv6 collector.
	start_col "$tmp/c6" ::1
	if run_nf "$tmp/v6.json" --trace "$tmp/g.pcap" --ipfix "[::1]:$port"; then
		stop_col
		collected "$tmp/c6" "$tmp/v6.json" "an IPv6 collector ([::1])"
	else
		stop_col; fail "rb2-nf --ipfix [::1]: exit $?"; cat "$tmp/err.txt"
	fi

	# NetFlow v9 (--ipfix-version 9): nfcapd reads the same records back.
	start_col "$tmp/c7" 127.0.0.1
	if run_nf "$tmp/n9.json" --trace "$tmp/g.pcap" --idle-timeout 2 --ipfix-version 9 \
		--ipfix "127.0.0.1:$port" && grep -q "NetFlow v9 messages" "$tmp/out.txt"; then
		stop_col
		collected "$tmp/c7" "$tmp/n9.json" "NetFlow v9, to nfcapd"
	else
		stop_col; fail "rb2-nf --ipfix-version 9: exit $?"; cat "$tmp/err.txt"
	fi

	# nfpcapd on the same captures (raw IP and Ethernet): with timeouts
	# that never fire, the same records; with an idle timeout, each of its
	# records is rb2 records in a row (it checks expiry every 10 s, rb2 at
	# each packet); DNS and ICMP, which it reports a packet at a time, left out.
	"$gen" -o "$tmp/eth.pcap" --packets 50000 --flows 5000 --nonip 0.001 --ipv6 0.1 --seed 9 >/dev/null
	for t in "$tmp/g.pcap" "$tmp/eth.pcap"; do
		for e in 3600,3600 3600,2; do
			rm -rf "$tmp/np"; mkdir "$tmp/np"
			if nfpcapd -r "$t" -w "$tmp/np" -e "$e" >"$tmp/np.log" 2>&1 &&
				TZ=UTC nfdump -R "$tmp/np" -o json >"$tmp/np.json" 2>/dev/null &&
				run_nf "$tmp/w.json" --trace "$t" --active-timeout "${e%,*}" \
					--idle-timeout "${e#*,}" &&
				python3 "$ref" nfpcapd "$tmp/np.json" "$tmp/w.json" >"$tmp/cmp.txt"; then
				ok "nfpcapd -e $e on $(basename "$t"): $(head -1 "$tmp/cmp.txt")"
			else
				fail "nfpcapd -e $e on $(basename "$t")"; head -5 "$tmp/cmp.txt" "$tmp/np.log"
			fi
		done
	done

	# Bad options: each error names the option.
	for bad in "--active-timeout 0" "--idle-timeout -5" "--flows 0" "--ipfix nonsense" \
		"--ipfix ::1:4739" "--ipfix 127.0.0.1:70000" "--observation-domain x" \
		"--ipfix-mtu 100" "--ipfix-version 8" "--ipfix-version 9"; do
		# shellcheck disable=SC2086 # an option and its value
		expect_err "\\(from ${bad%% *} " "$nf" "${eal[@]}" -- --trace "$tmp/g.pcap" \
			--ipfix-file "$tmp/x.ipfix" $bad
	done
	expect_err "warning: --ipfix-rate has no effect without --ipfix or --ipfix-file" \
		"$nf" "${eal[@]}" -- --trace "$tmp/cr/raw.pcap" --ipfix-rate 5 --json /dev/full
	;;
*)
	echo "usage: $0 generated|crafted|debian|errors|plugin|twoproc|signal|shards|ipfix BUILD_DIR" >&2
	exit 2
	;;
esac
echo "$mode: $fails failure(s)"
[ $fails -eq 0 ]
