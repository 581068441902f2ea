#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
#
# Runs inside the verbs-vm guest as PID 1 (see run.sh): brings up Soft-RoCE on
# a dummy netdev (nothing leaves the guest), runs the verbs suite, the
# perftest comparison, the evaluation or the preload comparison (two guests,
# preload_two.py) against the project's build (or
# captures a PPPoE session, pppoe.sh), writes
# the status for the host, and powers off.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
build=$(sed -n 's/.*rb2.build=\([^ ]*\).*/\1/p' /proc/cmdline)
what=$(sed -n 's/.*rb2.what=\([^ ]*\).*/\1/p' /proc/cmdline)
out=$(sed -n 's/.*rb2.out=\([^ ]*\).*/\1/p' /proc/cmdline)
role=$(sed -n 's/.*rb2.role=\([^ ]*\).*/\1/p' /proc/cmdline)
guestkill=$(sed -n 's/.*rb2.guestkill=\([^ ]*\).*/\1/p' /proc/cmdline)
rounds=$(sed -n 's/.*rb2.rounds=\([^ ]*\).*/\1/p' /proc/cmdline)
apps=$(sed -n 's/.*rb2.apps=\([^ ]*\).*/\1/p' /proc/cmdline)
modes=$(sed -n 's/.*rb2.modes=\([^ ]*\).*/\1/p' /proc/cmdline)
scale=$(sed -n 's/.*rb2.scale=\([^ ]*\).*/\1/p' /proc/cmdline)
[ -z "$scale" ] || export RB2_PRELOAD_SCALE_COUNTS=$scale
status_file=$out/status$role
ip=169.254.77.1
rc=1

finish() {
	echo "$rc" > "$status_file"
	sync
	echo 1 > /proc/sys/kernel/sysrq
	echo o > /proc/sysrq-trigger
	sleep 10 # the power-off is asynchronous; PID 1 must not exit first
	exit "$rc"
}
trap finish EXIT

# Where the guest's time goes: its boot, then each line of a suite stamped
# with the seconds since this script began (the host keeps the log).
echo "INFO guest up after $(cut -d' ' -f1 /proc/uptime) s of boot"
stamp() { while IFS= read -r l; do printf '%s [%ss]\n' "$l" "$SECONDS"; done; }
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
ulimit -l unlimited
ip link set lo up
if [ "$what" = pppoe ]; then
	bash /rb2/tests/verbs-vm/pppoe.sh "$out/pppoe-session.pcap"
	rc=$?
	exit
fi
if [ "$what" = two ] || [ "$what" = two-bench ] || [ "$what" = two-reorder ] ||
   [ "$what" = preload ] || [ "$what" = apps ]; then
	# Two guests on one virtual wire: A is .1 (servers), B is .2 (clients).
	modprobe virtio_net
	for i in $(seq 50); do [ -e /sys/class/net/eth0 ] && break; sleep 0.1; done
	me=169.254.77.1 peer=169.254.77.1
	[ "$role" = -b ] && me=169.254.77.2
	ip addr add $me/24 dev eth0 && ip link set eth0 up
	dev=eth0
else
	modprobe dummy && ip link add d0 type dummy && ip addr add $ip/24 dev d0 && ip link set d0 up
	dev=d0
fi
modprobe rdma_rxe && rdma link add rxe0 type rxe netdev $dev || { echo "guest: no rxe0"; exit 1; }
ibv_devinfo -d rxe0 | grep -E "hca_id|state|active_mtu"

export RB2_VERBS_IP=$ip
export RB2_BUILD=$build
cd "$build" || exit 1
case "$what" in
suite) bash /rb2/tests/verbs-vm/suite.sh 2>&1 | stamp; rc=${PIPESTATUS[0]} ;;
two) RB2_ROLE=$role RB2_PEER_IP=$peer RB2_GUESTKILL=${guestkill:-0} \
	bash /rb2/tests/verbs-vm/suite-two.sh 2>&1 | stamp; rc=${PIPESTATUS[0]} ;;
two-reorder) RB2_ROLE=$role RB2_OUT=$out RB2_TWO_ROUNDS=$rounds bash /rb2/tests/verbs-vm/reorder-two.sh 2>&1 | stamp
	rc=${PIPESTATUS[0]} ;;
perf) RB2_OUT=$out bash /rb2/tests/verbs-vm/perf.sh; rc=$? ;;
perf-lat) RB2_OUT=$out RB2_PERF_LAT_ONLY=3 bash /rb2/tests/verbs-vm/perf.sh; rc=$? ;;
perf-wake) RB2_OUT=$out RB2_PERF_WAKE_ONLY=1 bash /rb2/tests/verbs-vm/perf.sh; rc=$? ;;
preload|apps)
	# rsocket's preload opens rdma_cm's character device. Its tunables
	# (preload_two.py writes polling_time) live in this boot only.
	modprobe rdma_ucm || { echo "guest: no rdma_ucm module"; exit 1; }
	mkdir -p /etc/rdma/rsocket && mount -t tmpfs tmpfs /etc/rdma/rsocket
	pl=/rb2/tests/verbs-vm/preload_two.py
	if [ "$role" = -a ]; then
		python3 $pl serve --addr 169.254.77.1 --build "$build"
	elif [ "$what" = apps ]; then
		python3 $pl check --peer 169.254.77.1 --build "$build" --out "$out/apps.json" \
			${apps:+$([ "$apps" = all ] || echo --apps "$apps")}
	else
		python3 $pl drive --peer 169.254.77.1 --build "$build" --out "$out/preload.json" \
			--rounds "${rounds:-3}" ${apps:+$([ "$apps" = all ] || echo --apps "$apps")} \
			${modes:+$([ "$modes" = all ] || echo --modes "$modes")}
	fi
	rc=$? ;;
two-bench) RB2_ROLE=$role RB2_PEER_IP=$peer bash /rb2/tests/verbs-vm/bench-two.sh; rc=$? ;;
eval|eval-quick)
	# Hugepages for all but Table II's M8 (800 MB of the guest's 3 GB).
	echo 400 > /proc/sys/vm/nr_hugepages
	mkdir -p /dev/hugepages && mount -t hugetlbfs nodev /dev/hugepages
	q=; [ "$what" = eval-quick ] && q=--quick
	python3 /rb2/usertools/rb2-eval.py $q --build "$build" --transport verbs,dev=rxe0 \
		--perftest $ip --mem 1024 --no-plot --out /rb2/doc/eval/verbs${q:+-quick}
	rc=$? ;;
cases)
	# The case studies (Fig. 8-10) on rxe, scaled down (the report says
	# by how much); no reference servers in the guest. They replace the
	# full run's case studies in its results.json and keep the rest.
	python3 /rb2/usertools/rb2-eval.py --build "$build" --transport verbs,dev=rxe0 \
		--only fig8,fig9,fig10 --mem 1024 --no-plot --out /rb2/doc/eval/verbs
	rc=$? ;;
*) echo "guest: unknown rb2.what=$what"; rc=2 ;;
esac
