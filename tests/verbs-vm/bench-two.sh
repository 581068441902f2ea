#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
#
# The two-guest benchmark (guest.sh what=two-bench): a host service on each
# guest, linked over the wire (one QP each way); B's application sends large
# messages to A's through both, lent (B's service registers each buffer
# once, A's READs it straight into A's application) against copied (through
# the rings: three copies and two relays), in interleaved rounds. One JSON
# line per size, from B.
set -u
addr=$RB2_PEER_IP
side=client me=2 other=1 mine=169.254.77.2 theirs=169.254.77.1
[ "$RB2_ROLE" = -a ] && side=server me=1 other=2 mine=169.254.77.1 theirs=169.254.77.2
sizes=${RB2_BENCH_SIZES:-65536 131072 262144 1048576}
echo 256 > /proc/sys/vm/nr_hugepages
mkdir -p /dev/hugepages && { mountpoint -q /dev/hugepages || mount -t hugetlbfs nodev /dev/hugepages; }
"$RB2_BUILD/apps/rb2-raasd/rb2-raasd" -l 0 --no-pci -m 256 --file-prefix rb --log-level lib.eal:error \
	-- --host-id $me --listen $mine:21500 --peer $other@$theirs:21500 > /tmp/raasd 2>&1 &
rpid=$!
for _ in $(seq 900); do grep -q ready /tmp/raasd && break; sleep 0.1; done
sec="-l 1 --no-pci --proc-type=secondary --file-prefix rb --log-level lib.eal:error"
rc=0 port=30
for size in $sizes; do
	port=$((port + 1))
	if [ $side = server ]; then
		timeout -k 5 600 "$RB2_BUILD/apps/rb2-raasbench/rb2-raasbench" $sec -- recv --port $port \
			> /tmp/recv 2>&1 || { rc=1; cat /tmp/recv; }
	else
		timeout -k 5 600 "$RB2_BUILD/apps/rb2-raasbench/rb2-raasbench" $sec -- send --host 1 \
			--port $port --size $size --rounds ${RB2_BENCH_ROUNDS:-3} --seconds 1 \
			--connect-wait 60 2> /tmp/send.err || { rc=1; cat /tmp/send.err; }
	fi
done
sleep 2      # the other side's last frames through this service
kill $rpid; wait $rpid
grep -E "lent buffers|registrations" /tmp/raasd
echo "two-bench ($side): exit $rc"
exit $rc
