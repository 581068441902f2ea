#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
#
# What a new user trips over, each finding of the new-user sweep checked the
# way the user met it (every check failed before its fix):
#   - two servers on one TCP port: the second is refused, naming the port;
#   - the README's net_pcap example on rb2-tracegen's raw-IP trace: the
#     port's results equal the file's, and the pkt-filter example keeps what
#     it should;
#   - hugepages: a run leaves no hugepage files behind, and the scripts'
#     reservation never shrinks one that is larger;
#   - rb2-kv: load and run as separate processes pass; a full table is
#     reported as full on both sides, never as wrong values; Ctrl-C on a
#     client prints the results so far;
#   - a client that exits normally through the service is reported as
#     left, not as a failed channel; a server whose service is gone exits
#     non-zero; a secondary's counters
#     are readable through dpdk-telemetry.py while it runs;
#   - a failed EAL start says why: another rb2-raasd on the prefix, an
#     application that forgot --proc-type=secondary, a secondary with no
#     primary (whose runtime directory is then removed);
#   - `app --help` without '--' prints the application's usage, and the
#     application's options given before '--' are refused with a hint;
#   - every numeric option is range-checked and named; rb2-raasd refuses a
#     transport it cannot open and a bad address before it says ready.
# The parts through rb2-raasd need hugepages (DPDK multi-process): skipped
# without, and said so.
#
#   test_newuser.sh BUILD_DIR
build=$1
pfx=rb2t-nu-$$
. "$(dirname "$0")/case_study_lib.sh"
kv=$build/apps/rb2-kv/rb2-kv
http=$build/apps/rb2-http/rb2-http
nf=$build/apps/rb2-nf/rb2-nf
tg=$build/apps/rb2-tracegen/rb2-tracegen
quiet=--log-level=lib.*:error

# expect NAME STATUS PATTERN CMD...: CMD exits with STATUS and prints PATTERN.
expect() {
	local name=$1 want=$2 pat=$3 rc
	shift 3
	timeout 60 "$@" >"$tmp/out" 2>&1
	rc=$?
	if [ "$rc" = "$want" ] && grep -q -- "$pat" "$tmp/out"; then ok "$name"
	else fail "$name (exit $rc, want $want and '$pat')"; tail -5 "$tmp/out"; fi
}

# 1. Two servers on one TCP port.
for app in kv http; do
	port=$(free_port)
	bin=$build/apps/rb2-$app/rb2-$app
	extra=(); [ $app = http ] && extra=(--generate 1000)
	( trap - EXIT; exec "$bin" $(eal 1 "$app"1) $quiet -- server --no-rb2 \
		--tcp 127.0.0.1:$port "${extra[@]}" >"$tmp/first-$app" 2>&1 ) &
	pids+=("$!")
	wait_for "$tmp/first-$app" serving || { fail "rb2-$app server did not start"; continue; }
	expect "rb2-$app: a second server on TCP port $port is refused" 1 \
		"127.0.0.1:$port: Address already in use" \
		"$bin" $(eal 0 "$app"2) $quiet -- server --no-rb2 --tcp 127.0.0.1:$port "${extra[@]}"
	kill -INT "${pids[-1]}"
done

# 2. The README's net_pcap example on rb2-tracegen's default (raw IP) trace.
"$tg" -o "$tmp/t.pcap" --packets 20000 --flows 300 --seed 3 >/dev/null
$nf $(eal 0-1 nff) $quiet -- --trace "$tmp/t.pcap" --json "$tmp/file.json" >"$tmp/nf-file" 2>&1
$nf $(eal 0-1 nfp) $quiet --vdev net_pcap0,rx_pcap="$tmp/t.pcap" -- \
	--config "$(dirname "$0")/../config/nf-port.ini" --port net_pcap0 --idle-ms 300 \
	--json "$tmp/port.json" >"$tmp/nf-port" 2>&1
if python3 - "$tmp/file.json" "$tmp/port.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
key = lambda f: (f["src"], f["dst"], f["sport"], f["dport"], f["proto"])
fa = {key(f): f["packets"] for f in a["flow_list"]}
fb = {key(f): f["packets"] for f in b["flow_list"]}
print("flows: file", len(fa), "port", len(fb), "totals", a["totals"].get("ipv4"), b["totals"].get("ipv4"))
sys.exit(0 if fa == fb and len(fa) > 0 else 1)
PY
then ok "net_pcap on a raw-IP trace: the port's flows and packets equal the file's"
else fail "net_pcap on a raw-IP trace"; tail -4 "$tmp/nf-port"; fi
$nf $(eal 0-1 nfk) $quiet --vdev net_pcap0,rx_pcap="$tmp/t.pcap" --vdev net_ring0 -- \
	--plugin "$build/tests/plugins/pkt_filter.so" \
	--config "$(dirname "$0")/../examples/pkt-filter/fwd.ini" --port net_pcap0 \
	--out-port net_ring0 --proto 6 --idle-ms 300 >"$tmp/filter" 2>&1
kept=$(awk '$1 == "kept" {print $2}' "$tmp/filter")
if [ "${kept:-0}" -gt 0 ]; then ok "the pkt-filter example on the same trace keeps $kept TCP packets"
else fail "pkt-filter kept ${kept:-none}"; tail -4 "$tmp/filter"; fi

# 3. Hugepages: nothing left behind, and a larger reservation kept.
if have_hugepages; then
	# The port example: its packet pool is never freed before exit.
	$nf -l 0-1 --no-pci -m 128 --file-prefix "${pfx}hp" $quiet \
		--vdev net_pcap0,rx_pcap="$tmp/t.pcap" -- \
		--config "$(dirname "$0")/../config/nf-port.ini" --port net_pcap0 --idle-ms 300 \
		>"$tmp/hp" 2>&1
	left=$(find /dev/hugepages -maxdepth 1 -name "${pfx}hp*map_*" | wc -l)
	[ "$left" = 0 ] && ok "a run on hugepages leaves none of its hugepage files" ||
		fail "a run left $left hugepage files"
else
	echo "SKIP (this part only): no hugepages to leave behind"
fi
sys=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
if [ "$(id -u)" = 0 ] && [ -w "$sys" ]; then
	before=$(cat "$sys")
	"$(dirname "$0")/../usertools/rb2-hugepages.sh" 2 >/dev/null
	[ "$(cat "$sys")" = "$before" ] &&
		ok "rb2-hugepages.sh leaves a larger reservation ($before pages) as it is" ||
		fail "rb2-hugepages.sh changed $before pages to $(cat "$sys")"
	echo "$before" >"$sys"
fi

# 4. rb2-kv: phases as separate processes, and a full table.
port=$(free_port)
( trap - EXIT; exec $kv $(eal 1 kvs) $quiet -- server --no-rb2 --tcp 127.0.0.1:$port \
	--records 3000 >"$tmp/kvs" 2>&1 ) &
kvs=$!; pids+=("$kvs")
wait_for "$tmp/kvs" serving || { echo "rb2-kv server did not start"; cat "$tmp/kvs"; exit 1; }
expect "rb2-kv: --phase load, then --phase run (workload a) in another process" 0 \
	"UPDATE\], Return=OK" \
	sh -c "$kv $(eal 0 kvl) $quiet -- client --tcp 127.0.0.1:$port --records 2000 --phase load --quiet &&
	       $kv $(eal 0 kvr) $quiet -- client --tcp 127.0.0.1:$port --records 2000 --operations 20000 --workload a --phase run --quiet"
expect "rb2-kv: a full table is reported as full, never as wrong values" 1 \
	"writes refused: the server's table is full" \
	$kv $(eal 0 kvf) $quiet -- client --tcp 127.0.0.1:$port --records 20000 --key-space 7 --phase load --quiet
grep -q "values read were wrong" "$tmp/out" && fail "a full table reported as wrong values"
# Ctrl-C on a client: the results so far, and 130.
( trap - EXIT; exec $kv $(eal 0 kvi) $quiet -- client --tcp 127.0.0.1:$port --records 2000 \
	--operations 100000000 --phase run >"$tmp/kvi" 2>&1 ) &
kvi=$!
wait_for "$tmp/kvi" "run: " && kill -INT "$kvi"
wait "$kvi"; rc=$?
[ $rc = 130 ] && grep -q "# interrupted" "$tmp/kvi" && grep -q "^\[READ\], Operations" "$tmp/kvi" &&
	ok "Ctrl-C on a client prints the results so far and exits 130" ||
	{ fail "Ctrl-C on a client (exit $rc)"; tail -5 "$tmp/kvi"; }
[ ! -e "/var/run/dpdk/${pfx}kvi" ] && ok "and leaves no runtime directory behind" ||
	fail "a client stopped by Ctrl-C left /var/run/dpdk/${pfx}kvi"
kill -INT "$kvs"; wait "$kvs"
grep -q "the table is full" "$tmp/kvs" && grep -q "writes refused (table full)" "$tmp/kvs" &&
	ok "the server says its table is full, and counts what it refused" ||
	{ fail "the server said nothing of its full table"; cat "$tmp/kvs"; }

# Ctrl-C on an http client: the results so far, and 130.
hport=$(free_port)
( trap - EXIT; exec $http $(eal 1 hts) $quiet -- server --no-rb2 --tcp 127.0.0.1:$hport \
	--generate 4096 >"$tmp/hts" 2>&1 ) &
pids+=("$!")
if wait_for "$tmp/hts" serving; then
	( trap - EXIT; exec $http $(eal 0 htc) $quiet -- client --tcp 127.0.0.1:$hport \
		--path /gen/1024 --requests 100000000 >"$tmp/htc" 2>&1 ) &
	htc=$!
	wait_for "$tmp/htc" "%" && kill -INT "$htc"
	wait "$htc"; rc=$?
	[ $rc = 130 ] && grep -q "# interrupted" "$tmp/htc" &&
		ok "Ctrl-C on an http client prints the results so far and exits 130" ||
		{ fail "Ctrl-C on an http client (exit $rc)"; tail -5 "$tmp/htc"; }
	kill -INT "${pids[-1]}"
else
	fail "rb2-http server did not start"; cat "$tmp/hts"
fi

# 9, 10. Help and options in the wrong place, before any EAL starts.
for app in kv http raasd connperf raasbench nf perf flowbench; do
	expect "rb2-$app --help without '--' prints its own usage" 0 "^usage: rb2-$app" \
		"$build/apps/rb2-$app/rb2-$app" --help
	grep -q -- "--log-level=lib.\*:error" "$tmp/out" &&
		ok "rb2-$app --help names the flag that quiets the EAL" ||
		fail "rb2-$app --help does not name the quiet flag"
done
expect "rb2-nf: --trace before '--' is refused with a hint" 2 "its options go after '--'" \
	$nf -l 0-1 --no-pci --no-huge --trace "$tmp/t.pcap"
expect "rb2-kv: --records before '--' is refused with a hint" 2 "its options go after '--'" \
	$kv -l 0 --no-pci --no-huge --records 5

# 5. Numbers: every numeric option range-checked and named; suffixes taken.
e1=(-l 0 --no-pci --no-huge -m 64 $quiet)
expect "rb2-kv: --port 70000 is refused, naming the range" 2 "--port 70000: a whole number from 1 to 65535" \
	$kv "${e1[@]}" --file-prefix "${pfx}n1" -- server --no-rb2 --tcp 127.0.0.1:1 --port 70000
expect "rb2-kv: --records -5 names --records" 2 "--records -5: a whole number from 2" \
	$kv "${e1[@]}" --file-prefix "${pfx}n2" -- client --records -5
expect "rb2-kv: --depth 0 has its own message" 2 "--depth 0: a whole number from 1 to 4096" \
	$kv "${e1[@]}" --file-prefix "${pfx}n3" -- client --depth 0
expect "rb2-http: --conns -1 names --conns" 2 "--conns -1: a whole number from 1" \
	$http "${e1[@]}" --file-prefix "${pfx}n4" -- client --conns -1
expect "rb2-http: --port 70000 is refused" 2 "--port 70000: a whole number from 1 to 65535" \
	$http "${e1[@]}" --file-prefix "${pfx}n5" -- client --port 70000
expect "rb2-connperf: --lat 0 is refused, not ignored" 2 "--lat 0: a whole number from 1" \
	"$build/apps/rb2-connperf/rb2-connperf" -l 0-1 --no-pci --no-huge -m 64 $quiet \
	--file-prefix "${pfx}n6" -- --lat 0
expect "rb2-connperf: --designs bogus lists every mode" 2 "shared, perconn, bare or lent" \
	"$build/apps/rb2-connperf/rb2-connperf" -l 0-1 --no-pci --no-huge -m 64 $quiet \
	--file-prefix "${pfx}n7" -- --designs bogus
"$build/apps/rb2-connperf/rb2-connperf" -l 0-1 --no-pci --no-huge -m 256 $quiet \
	--file-prefix "${pfx}lat" -- --designs shared --lat 2000 --rounds 1 >"$tmp/lat" 2>&1
grep -q '"test": "latency"' "$tmp/lat" && ! grep -q gbit_per_s "$tmp/lat" &&
	ok "rb2-connperf's latency JSON carries no Gb/s made from a round trip" ||
	{ fail "rb2-connperf latency JSON"; tail -3 "$tmp/lat"; }
expect "rb2-tracegen takes --packets 10k, as rb2-nf does" 0 "10000 packets" \
	"$tg" -o "$tmp/k.pcap" --packets 10k --flows 100

# The sweep's own findings: arguments nobody asked for, and a bad size.
expect "rb2-kv: a stray argument is refused, not ignored" 2 "unexpected argument 'extra'" \
	$kv "${e1[@]}" --file-prefix "${pfx}s1" -- server --no-rb2 --tcp 127.0.0.1:1 extra
expect "rb2-connperf: a stray argument is refused" 2 "unexpected argument 'extra'" \
	"$build/apps/rb2-connperf/rb2-connperf" -l 0-1 --no-pci --no-huge -m 64 $quiet \
	--file-prefix "${pfx}s2" -- extra
expect "rb2-raasbench: --size 100 is named as not a multiple of 64" 2 "--size 100: a multiple of 64" \
	"$build/apps/rb2-raasbench/rb2-raasbench" "${e1[@]}" --file-prefix "${pfx}s3" -- send --port 5 --size 100
expect "rb2-raasd --no-huge is refused: its applications could not join" 2 "--no-huge: its applications" \
	"$raasd" -l 0 --no-pci --no-huge -m 64 --file-prefix "${pfx}s4" $quiet --
expect "messages of the apps' shared code start with the app's name" 1 "^rb2-kv: TCP address 127.0.0.1: IP:PORT" \
	$kv "${e1[@]}" --file-prefix "${pfx}s5" -- client --tcp 127.0.0.1

# 8. A failed EAL start names its cause; 6. a server whose service is gone.
expect "a secondary with no primary: says so" 1 "no primary process runs with --file-prefix ${pfx}none" \
	$kv -l 0 --no-pci --proc-type=secondary --file-prefix "${pfx}none" $quiet -- server
[ ! -e "/var/run/dpdk/${pfx}none" ] && ok "and leaves no runtime directory behind" ||
	fail "a failed secondary left /var/run/dpdk/${pfx}none"
if ! have_hugepages; then
	echo "SKIP (the rest): DPDK multi-process needs hugepages: as root, usertools/rb2-hugepages.sh 1024"
	[ $fails -eq 0 ]; exit
fi
# 7. rb2-raasd checks everything before it says ready.
for bad in "--transport shm,foo=1|bad argument 'foo=1'" "--transport verbs,port=1x|port=1x: a whole number" \
	   "--listen 127.0.0.1:70000|--listen 127.0.0.1:70000" "--max-relays -1|--max-relays -1: a whole number" \
	   "--host-id -1|--host-id -1: a whole number" "extra|unexpected argument 'extra'"; do
	args=${bad%%|*}; pat=${bad#*|}
	# shellcheck disable=SC2086
	timeout 20 "$raasd" -l 0 --no-pci -m 64 --file-prefix "${pfx}rv" $quiet -- $args >"$tmp/out" 2>&1
	if grep -q -- "$pat" "$tmp/out" && ! grep -q ready "$tmp/out"; then ok "rb2-raasd $args: refused at start"
	else fail "rb2-raasd $args"; tail -3 "$tmp/out"; fi
done

start_raasd
raasd_pid=${pids[-1]}
expect "a second rb2-raasd on the same prefix: names the first" 1 "another rb2-raasd (pid" \
	"$raasd" -l 0 --no-pci -m 64 --file-prefix "$pfx" $quiet --
expect "an application without --proc-type=secondary: says to add it" 1 \
	"add --proc-type=secondary" $kv -l 1 --no-pci -m 64 --file-prefix "$pfx" $quiet -- server
( trap - EXIT; exec $kv $(sec 1) $quiet -- server --port 7100 --records 1000 >"$tmp/rsrv" 2>&1 ) &
rsrv=$!; pids+=("$rsrv")
wait_for "$tmp/rsrv" serving || { fail "rb2-kv did not join the service"; cat "$tmp/rsrv"; }
# 11. A secondary's counters, read while it runs, where it says they are.
inst=$(sed -n 's/.*telemetry: dpdk-telemetry.py -f [^ ]* -i \([0-9]*\)$/\1/p' "$tmp/rsrv")
echo /rb2/kv/stats | timeout 10 python3 "$(command -v dpdk-telemetry.py)" -f "$pfx" -i "${inst:-0}" \
	>"$tmp/tel" 2>&1
grep -q '"/rb2/kv/stats": {"keys": 0' "$tmp/tel" &&
	ok "a secondary's telemetry: dpdk-telemetry.py -f PREFIX -i $inst answers /rb2/kv/stats" ||
	{ fail "a secondary's telemetry (instance '${inst}')"; cat "$tmp/tel"; }
# A client on the service's lcore: told so, and its progress comes by time
# however slowly it runs.
( trap - EXIT; exec $http $(sec 1) $quiet -- server --port 7200 --generate 4096 \
	>"$tmp/hsrv" 2>&1 ) &
pids+=("$!")
wait_for "$tmp/hsrv" serving || { fail "rb2-http did not join the service"; cat "$tmp/hsrv"; }
# --foreground: timeout passes a signal to the client alone. Without it,
# timeout sends it to the client and then to its process group again, and a
# second SIGINT kills the client, perhaps before it has left the service.
( trap - EXIT; exec timeout --foreground -s INT 20 $http $(sec 0) $quiet -- client --port 7200 \
	--path /gen/1024 --requests 100000000 >"$tmp/hcli" 2>&1 ) &
hcli=$!
if wait_for "$tmp/hcli" "%"; then ok "a client sharing the service's lcore reports progress by time"
else fail "no progress from a client on the service's lcore in 10 s"; tail -3 "$tmp/hcli"; fi
grep -q "runs on a CPU of its primary rb2-raasd" "$tmp/hcli" &&
	ok "and it is told that it shares the service's CPU" ||
	{ fail "no word of the shared CPU"; head -3 "$tmp/hcli"; }
kill -INT "$hcli" 2>/dev/null; wait "$hcli"
# A client that exits normally has left: the service says so, and logs no
# failure of its channel ("sender failed: the receiver is gone").
$kv $(sec 0) $quiet -- client --port 7100 --workload c --records 20 --operations 20 \
	--quiet >"$tmp/kvn" 2>&1 || { fail "a kv client through the service"; cat "$tmp/kvn"; }
# Both clients (http's, then this one) said goodbye: two "left" lines.
for _ in $(seq 100); do
	[ "$(grep -c ") left: " "$tmp/raasd")" -ge 2 ] && break
	sleep 0.05
done
if [ "$(grep -c ") left: " "$tmp/raasd")" -ge 2 ] &&
	! grep -q -e "sender failed" -e "is gone" -e "reset by peer" "$tmp/raasd"; then
	ok "clients that exit normally are reported as left, with no failure logged"
else
	fail "a normal exit through the service"; cat "$tmp/raasd"
	echo "the http client's last lines:"; tail -n 5 "$tmp/hcli"
	echo "the kv client's:"; tail -n 5 "$tmp/kvn"
fi
kill -9 "$raasd_pid"
for _ in $(seq 100); do kill -0 "$rsrv" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$rsrv" 2>/dev/null; then
	fail "the server outlived its service by 10 s"
else
	wait "$rsrv"; rc=$?
	[ $rc -ne 0 ] && grep -q "the service is gone" "$tmp/rsrv" &&
		ok "a server whose service is gone says so and exits $rc" ||
		{ fail "a server whose service is gone exited $rc"; cat "$tmp/rsrv"; }
fi
[ $fails -eq 0 ]
