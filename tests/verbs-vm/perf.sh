#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
#
# rb2-perf over rxe0 next to perftest (ib_write_bw, ib_write_lat), same
# message sizes, same guest boot (run by guest.sh, what=perf). Prints a
# side-by-side table, writes it to $RB2_OUT/perf.md, exits non-zero if any
# run fails.
set -u
ip=$RB2_VERBS_IP
perf=$RB2_BUILD/apps/rb2-perf/rb2-perf
out=$RB2_OUT/perf.md
# Server on lcore 0, client on lcore 1: two pollers on one vCPU would measure
# the scheduler's time slice.
eal() { echo "-l $2 --no-pci --no-huge -m 1024 --file-prefix p$1 --log-level lib.eal:error"; }
port=19000
failed=0

# perftest: server in the background, client prints the figures.
pt() { # TOOL SIZE ITERS
	port=$((port + 10))
	$1 -d rxe0 -x 1 -s $2 -n $3 -p $port > /tmp/pt.s 2>&1 &
	sleep 1
	$1 -d rxe0 -x 1 -s $2 -n $3 -p $port $ip > /tmp/pt.c 2>&1 || failed=1
	wait
	awk -v s=$2 '$1 == s && NF >= 5 {print; exit}' /tmp/pt.c
}

# rb2-perf: --server (receiver / echo) and --client (sender / pinger).
rb() { # MODE SIZE COUNT EXTRA...
	local mode=$1 size=$2 count=$3; shift 3
	port=$((port + 10))
	local sargs=(--server) ; [ "$mode" = lat ] && sargs+=(--peer $ip)
	"$perf" $(eal s$port 0) -- --transport verbs,dev=rxe0 --mode $mode --size $size \
		--count $count --port $port "${sargs[@]}" "$@" --json /tmp/rb.s.json > /tmp/rb.s 2>&1 &
	sleep 1
	"$perf" $(eal c$port 1) -- --transport verbs,dev=rxe0 --mode $mode --size $size \
		--count $count --port $port --client $ip "$@" --json /tmp/rb.c.json > /tmp/rb.c 2>&1 || failed=1
	wait $! || failed=1
}
# One number out of rb2-perf's one-line JSON (the guest has no python).
jnum() { sed -n "s/.*\"$2\": \([0-9.e+-]*\).*/\1/p" "$1" | head -1; }
# rb2-perf in one process (both lcores), its output and its JSON in one
# fenced block. FILTER: the output lines left out (an extended regex).
one_proc() { # FILE-PREFIX FILTER RB2-PERF-ARGS...
	local pre=$1 filter=$2
	shift 2
	timeout -k 5 900 "$perf" -l 0-1 --no-pci --no-huge -m 1024 --file-prefix "$pre" \
		--log-level lib.eal:error -- "$@" --json /tmp/$pre.json > /tmp/$pre.out 2>&1 ||
		{ failed=1; cat /tmp/$pre.out; }
	echo '```'
	grep -vE "$filter" /tmp/$pre.out
	cat /tmp/$pre.json
	echo '```'
}
# The wake-up: a paced message's one-way time to a receiver that sleeps,
# against one that polls (rb2-perf --mode wake, both lcores in one process,
# one clock), over verbs (the sleeper on its queue's completion channel,
# raised by the WRITE_WITH_IMM) and, in the same boot, over shm (the sleeper
# on a futex): shm's difference is what waking a thread costs this guest
# whatever wakes it, and verbs' beyond it what the completion channel adds.
# Each lcore has a vCPU of its own, so the polling receiver takes no vCPU
# from the sender.
wake_section() {
	echo "## Waking a sleeping receiver (rb2-perf --mode wake, one process)"
	echo
	echo "A 64 B message every 2 ms, one way, stamped with the TSC: a receiver that sleeps"
	echo "against one that polls; over verbs, then shm, twice."
	echo
	local i=0
	for t in verbs,dev=rxe0 shm verbs,dev=rxe0 shm; do
		i=$((i + 1))
		one_proc wk$i "^(TELEMETRY|rb2_xport)" --mode wake --transport $t --rounds 5 \
			--paced 500 --gap-us 2000 --count 20000
	done
	echo
}
rm -f /tmp/perf.failed

{
echo "# rb2-perf over rxe0 next to perftest (one QEMU TCG guest, Soft-RoCE)"
echo
echo "TCG makes every absolute figure meaningless; the ratios, measured in this boot, count."
echo
# RB2_PERF_LAT_ONLY=N (run.sh BUILD perf-lat): the round-trip table alone,
# its rows in N interleaved rounds, for ratios within one boot.
lat_only=${RB2_PERF_LAT_ONLY:-}
# RB2_PERF_WAKE_ONLY=1 (run.sh BUILD perf-wake): the wake-up section alone.
if [ -n "${RB2_PERF_WAKE_ONLY:-}" ]; then
	wake_section
	echo "$failed" > /tmp/perf.failed
	exit
fi
if [ -z "$lat_only" ]; then
echo "| size | ib_write_bw Mmsg/s | rb2 Mmsg/s (var.) | ratio | rb2 Mmsg/s (fixed) | ratio |"
echo "|---|---|---|---|---|---|"
for size in 64 65536; do
	n=20000; c=40000; slots=1024; ss=64
	[ $size = 65536 ] && n=2000 c=2000 slots=128 ss=65536
	l=$(pt ib_write_bw $size $n); ib=$(echo "$l" | awk '{print $5}')
	rb bw $size $c --rounds 3 --slots $slots --slot-size $ss
	v=$(jnum /tmp/rb.s.json median_mmsg_s)
	rb bw $size $c --rounds 3 --slots $slots --slot-size $ss --fixed
	f=$(jnum /tmp/rb.s.json median_mmsg_s)
	awk -v s=$size -v ib="${ib:-0}" -v v="${v:-0}" -v f="${f:-0}" 'BEGIN {
		rv = "n/a"; rf = "n/a"
		if (ib > 0) { rv = sprintf("%.2fx", v / ib); rf = sprintf("%.2fx", f / ib) }
		printf "| %d B | %.4f | %.4f | %s | %.4f | %s |\n", s, ib, v, rv, f, rf }'
done
fi
echo
echo "| 64 B round trip | avg us | p50 us | p99.9 us | |"
echo "|---|---|---|---|---|"
for round in $(seq "${lat_only:-1}"); do
l=$(pt ib_write_lat 64 5000)
echo "$l" | awk '{printf "| ib_write_lat (one way, x2) | %.2f | %.2f | %.2f |\n", 2*$6, 2*$5, 2*$9}'
ibl=$(echo "$l" | awk '{print 2*$6}')
for v in "" --fixed "--designs lean:fixed" "--designs lean:var"; do
	case "$v" in
	"") what="(alpha=beta=gamma=1)" ;;
	--fixed) what="--fixed (alpha=beta=gamma=1)" ;;
	*:fixed) what="--designs lean:fixed (one WRITE per message)" ;;
	*) what="--designs lean:var (one WRITE per message, its length in the slot)" ;;
	esac
	rb lat 64 5000 --warmup 500 $v
	awk -v a="$(jnum /tmp/rb.c.json avg_ns)" -v p="$(jnum /tmp/rb.c.json p50_ns)" \
		-v t="$(jnum /tmp/rb.c.json p99_9_ns)" -v w="$what" -v ib="${ibl:-0}" 'BEGIN {
		r = ib > 0 ? sprintf(" %.2fx ib_write_lat avg |", a / 1e3 / ib) : " |"
		printf "| rb2-perf lat %s | %.2f | %.2f | %.2f |%s\n", w, a / 1e3, p / 1e3, t / 1e3, r }'
done
done
if [ -n "$lat_only" ]; then
	echo "$failed" > /tmp/perf.failed
	exit
fi
echo
echo "## Connections over rxe0 (rb2-connperf, both ends in one process, QPs connected locally)"
echo
echo "shared: every connection over one channel pair (2 QPs); perconn: a pair per connection;"
echo "bare: one channel each way, no connection layer (over_bare: the layer's cost at 1 connection)."
echo "Medians of per-round ratios; Mmsg/s are TCG's."
echo
cp=$RB2_BUILD/apps/rb2-connperf/rb2-connperf
for size in 64 65536; do
	"$cp" -l 0-1 --no-pci --no-huge -m 2048 --file-prefix cp$size --log-level lib.eal:error -- \
		--transport verbs,dev=rxe0 --designs shared,perconn,bare --conns 1,16,256,1000 --size $size \
		--rounds 5 --seconds 0.5 > /tmp/cp.json 2>/tmp/cp.err || { failed=1; cat /tmp/cp.err; }
	echo '```'
	grep -v '^$' /tmp/cp.json
	echo '```'
done
echo
echo "## Registering against copying, and the registration cache (rb2-connperf --mr-cost)"
echo
"$cp" -l 0-1 --no-pci --no-huge -m 512 --file-prefix mr --log-level lib.eal:error -- \
	--transport verbs,dev=rxe0 --mr-cost > /tmp/mr.json 2>/tmp/mr.err || { failed=1; cat /tmp/mr.err; }
echo '```'
cat /tmp/mr.json
echo '```'
echo
echo "## Large messages on a connection: copied or lent (rb2-connperf --designs shared,lent)"
echo
echo "shared copies each message (into the ring, into the connection's buffer, out to the"
echo "application); lent lends it from one of 64 sender buffers and the receiver READs it"
echo "into its own (rb2_conn_send_ref). Medians of per-round ratios (over_copied)."
echo
for size in 4096 16384 65536 262144 1048576; do
	timeout -k 5 300 "$cp" -l 0-1 --no-pci --no-huge -m 2048 --file-prefix lt$size --log-level lib.eal:error -- \
		--transport verbs,dev=rxe0 --designs shared,lent --size $size --rounds 5 --seconds 0.5 \
		> /tmp/lt.json 2>/tmp/lt.err || { failed=1; cat /tmp/lt.err; }
	echo '```'
	grep -v '^$' /tmp/lt.json
	echo '```'
done
echo
echo "## Large messages from application memory (rb2-perf --mode bulk, one process)"
echo
echo "copy: through the ring (a copy in, the NIC's WRITE, a copy out); lend: the buffer lent"
echo "(registration cached), the receiver READs it into its own buffer; lend-reg: registered"
echo "on every message, both sides. GB/s are TCG's; the ratio and the crossover count."
echo
one_proc bk "^(TELEMETRY|round )" --mode bulk --transport verbs,dev=rxe0 --rounds 5
echo
echo "## Doorbells across channels (rb2-perf --mode lanes, one process)"
echo
echo "K channels between two lcores, each on a QP of its own, against all of them on one"
echo "lane per side (one QP, one doorbell per pass). Per message: WRs, doorbells, rate."
echo
one_proc ln "^(TELEMETRY|rb2_xport|round )" --mode lanes --transport verbs,dev=rxe0 \
	--channels 1,8,64 --rounds 5 --count 20000
echo
echo "The same with an admission window of 16 WRs in flight per QP: each channel's own"
echo "where it has a QP, the lane's (all its channels together) on the lane."
echo
one_proc lw "^(TELEMETRY|rb2_xport|round )" --mode lanes --transport verbs,dev=rxe0 \
	--channels 8,64 --rounds 5 --count 20000 --max-inflight 16
echo
wake_section
echo "## Lanes across processes (rb2-perf bw --server/--client --channels 8, with and without --lane)"
echo
echo "8 channels from one process's lcore to another's: a QP each, against one lane a side"
echo "(one QP between the processes; the first channel connects it, the others' rings are"
echo "told out of band). 64 B, 3 alternating rounds of 2 x 20 000 messages."
echo
echo "| round | QP per channel Mmsg/s | doorbells/msg | one lane Mmsg/s | doorbells/msg | lane/own |"
echo "|---|---|---|---|---|---|"
for r in 1 2 3; do
	rb bw 64 20000 --rounds 2 --channels 8
	o=$(jnum /tmp/rb.s.json median_mmsg_s); od=$(jnum /tmp/rb.c.json doorbells)
	om=$(jnum /tmp/rb.c.json messages)
	rb bw 64 20000 --rounds 2 --channels 8 --lane
	l=$(jnum /tmp/rb.s.json median_mmsg_s); ld=$(jnum /tmp/rb.c.json doorbells)
	lm=$(jnum /tmp/rb.c.json messages)
	awk -v r=$r -v o="${o:-0}" -v od="${od:-0}" -v om="${om:-1}" -v l="${l:-0}" \
		-v ld="${ld:-0}" -v lm="${lm:-1}" 'BEGIN {
		printf "| %d | %.4f | %.4f | %.4f | %.4f | %s |\n", r, o, od / om, l, ld / lm,
			(o > 0 ? sprintf("%.2f", l / o) : "n/a") }'
done
echo "$failed" > /tmp/perf.failed
} | tee "$out"
# The group ran in the pipeline's subshell: its verdict comes back in a file.
failed=$(cat /tmp/perf.failed 2>/dev/null || echo 1)
[ $failed -eq 0 ] || { echo "perf: a run failed"; cat /tmp/rb.s /tmp/rb.c /tmp/pt.s /tmp/pt.c | grep -v TELEM | tail -20; }
exit $failed
