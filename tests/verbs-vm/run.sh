#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
#
# Runs the verbs transport for real: Soft-RoCE (rdma_rxe) inside a QEMU guest
# (TCG; this host's kernel has no RDMA). Builds, or reuses, a cached guest in
# BUILD/verbs-vm: a Debian rootfs with rdma-core and perftest, the kernel's
# uncompressed vmlinux, and a busybox initramfs that mounts the rootfs and the
# project over 9p. The guest runs tests/verbs-vm/guest.sh against BUILD.
#
#   tests/verbs-vm/run.sh BUILD [prepare|suite|two|two-bench|two-reorder|preload|apps|perf|perf-lat|perf-wake|eval|eval-quick|cases|pppoe]
#   (default: suite)
#
# prepare: no guest boots; makes the cache (rootfs, kernel, initramfs) and
#        the guest build of every target the suites use, then exits. The
#        full test tier runs it in the background while the host's trees
#        build, so the rootfs download is not on its critical path. A run
#        that starts while another prepares waits for it (a lock in the
#        cache), then finds everything made.
# suite: one guest, two processes over rxe0 on a dummy netdev.
# two:   two guests joined by a QEMU socket netdev (UDP on the host's
#        loopback; RB2_VM_WIRE=tcp for its TCP stream), real RoCEv2 frames
#        between them: the same channel tests
#        across the link, where the elastic threshold must defer.
# two-bench: the two guests, each with a host service (rb2-raasd) linked to
#        the other's: large messages lent against copied through both
#        (rb2-raasbench, tests/verbs-vm/bench-two.sh); JSON lines.
# two-reorder: the two guests; the suite's transfer under netem's
#        reordering, at ACK timeouts 17 and 14 in turn, RB2_TWO_ROUNDS
#        rounds (default 5; tests/verbs-vm/reorder-two.sh): JSON
#        in $BUILD/verbs-vm/two-reorder.json.
# perf:  rb2-perf and perftest side by side in one guest boot.
# perf-lat: its 64 B round-trip table alone, in 3 interleaved rounds.
# perf-wake: its wake-up section alone (a sleeping receiver against a polling one).
# eval:  usertools/rb2-eval.py --transport verbs,dev=rxe0 with ib_write_bw
#        next to Fig. 5, into doc/eval/verbs (eval-quick: doc/eval/verbs-quick);
#        the guest has no gnuplot, so the host draws the plots afterwards.
#        About an hour under TCG (eval-quick: about 15 minutes).
# preload: the two guests; unmodified programs (a plain ping-pong, sockperf,
#        redis, memcached, nginx, iperf3: usertools/rb2_apps.py), server in
#        A, clients in B, over kernel TCP, under rsocket's librspreload.so
#        (as it is, spinning, on poll) and under rb2-run, interleaved
#        (tests/verbs-vm/preload_two.py); JSON in
#        BUILD/verbs-vm/preload.json. RB2_PRELOAD_ROUNDS: rounds (3);
#        RB2_PRELOAD_SCALE_COUNTS: the scaling table's connection counts
#        (1,16,256,1000);
#        RB2_PRELOAD_MODES: some of the modes (kernel,rb2,rb2-unbatched,...;
#        rb2-rearm, rb2-readall, rb2-ahead, rb2-onebyone, rb2-nolink and
#        rb2-ack17 run only when named);
#        RB2_PRELOAD_APPS: some of them (pingpong,pingpong-conns,sockperf,redis,...), or
#        the references that run on request only: rdma-core's rstream
#        (rstream, rstream-block through the socket calls; rstream-native,
#        rstream-native-block through rsocket's own; rstream-bw and
#        rstream-native-bw, its bandwidth test, 64 KiB transfers) and
#        perftest's ib_send_lat and ib_write_lat.
# apps:  the same programs' checks (values read back, files byte for byte,
#        BGSAVE during traffic, iperf3 both ways), server in A, clients in
#        B, under rb2-run (each must pass, every connection over verbs) and
#        under rsocket's preload (what it cannot run is reported); JSON in
#        BUILD/verbs-vm/apps.json. RB2_PRELOAD_APPS: some of them.
# cases: the case studies alone (Fig. 8-10) over rxe, into doc/eval/verbs (replacing
#        only those figures of its results.json).
# pppoe: a real PPPoE session between two namespaces in the guest (Linux's
#        PPPoE against rp-pppoe's server, tests/verbs-vm/pppoe.sh), captured
#        into tests/captures/pppoe-session.pcap, which tests/test_nf.sh
#        checks rb2-nf against tshark on.
#
# Exits with the guest's status; 77 (skip) only when QEMU or mmdebstrap (or
# debootstrap) are missing, saying so.
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(cd "${1:?usage: run.sh BUILD [suite|perf]}" && pwd)
what=${2:-suite}
guestkill=${RB2_VM_GUESTKILL:-1} # two: end by killing guest B mid-stream (0: do not)
case "$what" in two-bench|two-reorder|preload|apps) guestkill=0 ;; esac
cache=$build/verbs-vm
mirror=${RB2_DEBIAN_MIRROR:-http://deb.debian.org/debian}
case "$what" in
eval) timeout_s=${RB2_VM_TIMEOUT:-7200} ;;
eval-quick|two|two-reorder|cases|preload|apps) timeout_s=${RB2_VM_TIMEOUT:-2400} ;; # two: faults on the wire are slow
*) timeout_s=${RB2_VM_TIMEOUT:-1200} ;;
esac

if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: building the guest (mmdebstrap) and sharing its root over 9p need root"
	exit 77
fi
for tool in qemu-system-x86_64 busybox python3 meson ninja; do
	if ! command -v "$tool" >/dev/null; then
		echo "SKIP: $tool not found (apt-get install qemu-system-x86 mmdebstrap busybox-static)"
		exit 77
	fi
done
if ! command -v mmdebstrap >/dev/null && ! command -v debootstrap >/dev/null; then
	echo "SKIP: neither mmdebstrap nor debootstrap found (apt-get install mmdebstrap)"
	exit 77
fi
case "$build" in
"$top"/*) rel=${build#"$top"/} ;;
*) echo "error: BUILD must be inside the project tree ($top), which the guest mounts" >&2; exit 2 ;;
esac
mkdir -p "$cache"
# Steps 1-4 make shared files: one run at a time (prepare, in the background,
# and a suite that starts before it ends).
exec 9> "$cache/.prepare.lock"
flock 9

# 1. Guest rootfs (cached): rdma-core, perftest, the kernel and its modules,
#    and the run-time libraries of the host-built binaries.
#    The marker holds the package list: a changed list rebuilds the guest.
#    The unmodified programs of the preload comparison and their clients
#    come from Debian too, as on the host (usertools/rb2_apps.py).
pkgs=rdma-core,ibverbs-utils,ibverbs-providers,perftest,rdmacm-utils,iproute2,kmod,linux-image-amd64,libnuma1,libbsd0,libpcap0.8,librte-ring23,librte-eal23,librte-telemetry23,librte-kvargs23,librte-ethdev23,librte-mbuf23,librte-mempool23,librte-net23,librte-meter23,librte-net-pcap23,librte-mempool-ring23,librte-hash23,librte-rcu23,libcriterion3,libhttp-parser2.9,libjansson4,procps,python3,ppp,pppoe,tcpdump,iputils-ping,redis-server,redis-tools,memcached,libmemcached-tools,nginx-light,iperf3,sockperf,wrk,curl
if [ "$(cat "$cache/rootfs/.rb2-ok" 2>/dev/null)" != "$pkgs" ]; then
	rm -rf "$cache/rootfs.tmp"
	if command -v mmdebstrap >/dev/null; then
		# One apt run (parallel downloads, one dpkg pass), no documentation,
		# and no initramfs for the kernel package: the guest boots the
		# busybox one made below. About 3x faster than debootstrap here.
		echo "verbs-vm: building the guest rootfs (mmdebstrap, about two minutes)"
		mmdebstrap --variant=minbase --include="$pkgs" \
			--dpkgopt='path-exclude=/usr/share/doc/*' \
			--dpkgopt='path-exclude=/usr/share/man/*' \
			--essential-hook='chroot "$1" dpkg-divert --quiet --local --rename --add /usr/sbin/update-initramfs && ln -s /bin/true "$1/usr/sbin/update-initramfs"' \
			bookworm "$cache/rootfs.tmp" "$mirror" > "$cache/debootstrap.log" 2>&1 ||
			{ echo "error: mmdebstrap failed, see $cache/debootstrap.log" >&2; exit 1; }
	else
		echo "verbs-vm: building the guest rootfs (debootstrap, about seven minutes; mmdebstrap takes two)"
		debootstrap --variant=minbase --include="$pkgs" \
			bookworm "$cache/rootfs.tmp" "$mirror" > "$cache/debootstrap.log" 2>&1 ||
			{ echo "error: debootstrap failed, see $cache/debootstrap.log" >&2; exit 1; }
	fi
	mkdir -p "$cache/rootfs.tmp/rb2"
	echo "$pkgs" > "$cache/rootfs.tmp/.rb2-ok"
	rm -rf "$cache/rootfs" "$cache/vmlinux" "$cache/initramfs.cpio" # its kernel may be newer
	mv "$cache/rootfs.tmp" "$cache/rootfs"
fi
rootfs=$cache/rootfs
kver=$(basename "$(ls -d "$rootfs"/lib/modules/* | head -1)")

# 2. The uncompressed kernel (boots in about half the time under TCG).
if [ ! -f "$cache/vmlinux" ]; then
	python3 - "$rootfs/boot/vmlinuz-$kver" "$cache/vmlinux" <<'PY'
import lzma, sys
data = open(sys.argv[1], "rb").read()
at = data.find(b"\xfd7zXZ\x00")
if at < 0:
    sys.exit("no XZ payload in " + sys.argv[1])
out = lzma.LZMADecompressor().decompress(data[at:])
if out[:4] != b"\x7fELF":
    sys.exit("the payload is not an ELF vmlinux")
open(sys.argv[2], "wb").write(out)
PY
fi

# 3. initramfs: busybox, the virtio and 9p modules, and an init that mounts
#    the rootfs and the project and switch-roots into the guest script.
if [ ! -f "$cache/initramfs.cpio" ] || [ "$0" -nt "$cache/initramfs.cpio" ]; then
	ird=$cache/initramfs.d
	rm -rf "$ird"
	mkdir -p "$ird"/{bin,proc,sys,dev,newroot,mods}
	cp "$(command -v busybox)" "$ird/bin/busybox"
	mods="kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
	      kernel/drivers/virtio/virtio_pci_legacy_dev.ko kernel/drivers/virtio/virtio_pci_modern_dev.ko
	      kernel/drivers/virtio/virtio_pci.ko kernel/fs/netfs/netfs.ko kernel/fs/fscache/fscache.ko
	      kernel/net/9p/9pnet.ko kernel/net/9p/9pnet_virtio.ko kernel/fs/9p/9p.ko"
	: > "$ird/mods/order"
	for m in $mods; do
		cp "$rootfs/lib/modules/$kver/$m" "$ird/mods/"
		basename "$m" >> "$ird/mods/order"
	done
	cat > "$ird/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox mkdir -p /sbin /usr/bin /usr/sbin
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /mods/order); do insmod /mods/$m || echo "init: insmod $m failed"; done
o=trans=virtio,version=9p2000.L,msize=262144,cache=loose
mount -t 9p -o $o root /newroot || { echo "init: cannot mount the rootfs"; poweroff -f; }
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 rb2 /newroot/rb2 ||
	{ echo "init: cannot mount the project"; poweroff -f; }
for d in proc sys dev; do mount --move /$d /newroot/$d; done
script=$(sed -n 's/.*rb2.script=\([^ ]*\).*/\1/p' /newroot/proc/cmdline)
exec switch_root /newroot /bin/bash "$script"
INIT
	chmod +x "$ird/init"
	(cd "$ird" && find . | busybox cpio -o -H newc > "$cache/initramfs.cpio" 2>/dev/null)
fi

# 4. A build the guest's CPU can run: TCG emulates neither AVX-512 nor the
#    host's -march=native, so the guest gets its own x86-64-v2 tree.
vmbuild=$cache/build
if [ ! -f "$vmbuild/build.ninja" ]; then
	meson setup "$vmbuild" "$top" -Dcpu_instruction_set=x86-64-v2 \
		-Dbuildtype=release > "$cache/meson-setup.log" 2>&1 ||
		{ echo "error: configuring the guest build failed, see $cache/meson-setup.log" >&2; exit 1; }
fi
# The suites use these alone: the rest of the tree (the other test
# programs, the header checks) would double the build on a clean machine.
targets=()
case "$what" in
suite|two|two-bench|two-reorder)
	for t in rb2-connperf rb2-http rb2-kv rb2-nf rb2-perf rb2-raasbench rb2-raasd rb2-tracegen; do
		targets+=("apps/$t/$t")
	done
	targets+=(tests/test_verbs tests/test_raas_app tests/test_stream)
	[ "$what" != suite ] && [ "$what" != two-bench ] && targets+=(apps/rb2-run/rb2-run apps/rb2-sockd/rb2-sockd
				       lib/preload/librb2_preload.so) ;;
preload|apps)
	targets=(apps/rb2-run/rb2-run apps/rb2-sockd/rb2-sockd lib/preload/librb2_preload.so
		 tests/rb2run_pingpong) ;;
prepare)
	for t in rb2-connperf rb2-http rb2-kv rb2-nf rb2-perf rb2-raasbench rb2-raasd rb2-tracegen \
		 rb2-run rb2-sockd; do
		targets+=("apps/$t/$t")
	done
	targets+=(tests/test_verbs tests/test_raas_app tests/test_stream tests/rb2run_pingpong
		  lib/preload/librb2_preload.so) ;;
esac
ninja -C "$vmbuild" "${targets[@]}" > "$cache/ninja.log" 2>&1 ||
	{ echo "error: the guest build failed, see $cache/ninja.log" >&2; exit 1; }
if [ "$what" = prepare ]; then
	echo "verbs-vm: prepared $cache (rootfs, kernel, initramfs, guest build)"
	exit 0
fi
exec 9>&-

# 5. Boot. Each guest writes its status to $cache/status[-ROLE] and powers off.
#    The evaluation's 1 MB rings (128 MB each, several at once, and their
#    senders' mirrors) need more than the tests' 3 GB.
vm_mem=3G
case "$what" in eval*) vm_mem=6G ;; esac
rounds=${RB2_PRELOAD_ROUNDS:-3}
[ "$what" = two-reorder ] && rounds=${RB2_TWO_ROUNDS:-5}
# The guest CPU is TCG's "max" without ERMS and FSRM: with them, glibc's
# memcpy and the kernel's copies use "rep movsb", which TCG runs a byte at
# a time. A 64 KiB memcpy ran at 161 MB/s with them and 1202 without (the
# vector loop), and five Python starts took 2.1 s against 1.6.
boot() { # ROLE NETDEV-ARGS...
	local role=$1; shift
	timeout "$timeout_s" qemu-system-x86_64 -accel tcg,thread=multi -cpu max,-erms,-fsrm \
		-m "$vm_mem" -smp 2 \
		-kernel "$cache/vmlinux" -initrd "$cache/initramfs.cpio" \
		-append "console=ttyS0 panic=-1 quiet loglevel=3 rb2.script=/rb2/tests/verbs-vm/guest.sh rb2.build=/rb2/$rel/verbs-vm/build rb2.out=/rb2/$rel/verbs-vm rb2.what=$what rb2.role=$role rb2.guestkill=$guestkill rb2.rounds=$rounds rb2.apps=${RB2_PRELOAD_APPS:-all} rb2.modes=${RB2_PRELOAD_MODES:-all} rb2.scale=${RB2_PRELOAD_SCALE_COUNTS:-1,16,256,1000}" \
		-virtfs local,path="$rootfs",mount_tag=root,security_model=none,id=root \
		-virtfs local,path="$top",mount_tag=rb2,security_model=none,id=rb2 \
		-nographic -monitor none -no-reboot "$@"
}

guest_status() { # ROLE
	if [ ! -f "$cache/status$1" ]; then
		echo "error: guest${1:+ ${1#-}} ended without a status" >&2
		return 1
	fi
	echo "verbs-vm: guest${1:+ ${1#-}} status $(cat "$cache/status$1")"
	return "$(cat "$cache/status$1")"
}

rm -f "$cache"/status*
echo "verbs-vm: booting (QEMU TCG, $what)"
set +e
if [ "$what" = two ] || [ "$what" = two-bench ] || [ "$what" = two-reorder ] || [ "$what" = preload ] || [ "$what" = apps ]; then
	port=$((20000 + $$ % 20000))
	# The wire: a UDP datagram a frame between the two QEMUs, or with
	# RB2_VM_WIRE=tcp QEMU's TCP stream. Its listening end sets no
	# TCP_NODELAY, and RDMA's ACK frame and the next data frame, sent back
	# to back, then wait out the other end's delayed ACK: a verbs round
	# trip took 46 ms on it against 0.6-2.4 ms on UDP (perftest's
	# ib_send_lat; doc/eval/rb2-run-two.md), while a kernel TCP ping-pong,
	# one frame a message, took 1.0-1.4 ms on it and 0.5-1 ms on UDP.
	if [ "${RB2_VM_WIRE:-udp}" = udp ]; then
		net_a="socket,id=n0,udp=127.0.0.1:$((port + 1)),localaddr=127.0.0.1:$port"
		net_b="socket,id=n0,udp=127.0.0.1:$port,localaddr=127.0.0.1:$((port + 1))"
	else
		net_a="socket,id=n0,listen=127.0.0.1:$port"
		net_b="socket,id=n0,connect=127.0.0.1:$port"
	fi
	boot -a -nic none -netdev "$net_a" \
		-device virtio-net-pci,netdev=n0,mac=52:54:00:b2:00:01 > "$cache/guest-a.log" 2>&1 &
	apid=$!
	sleep 1
	boot -b -nic none -netdev "$net_b" \
		-device virtio-net-pci,netdev=n0,mac=52:54:00:b2:00:02 > "$cache/guest-b.log" 2>&1 &
	bpid=$!
	# The last test (unless RB2_VM_GUESTKILL=0): once A streams from B
	# ("guestkill: streaming"), power B off hard. A must report it
	# (suite-two.sh).
	killed=0
	while [ "$guestkill" = 1 ] && kill -0 $bpid 2>/dev/null; do
		if grep -q "^guestkill: streaming" "$cache/guest-a.log"; then
			# B's QEMU (and its timeout), found by B's kernel command line.
			pkill -9 -f -- "rb2.role=-b( |$)" && killed=1
			echo "verbs-vm: guest b killed mid-stream (its QEMU, SIGKILL)"
			break
		fi
		sleep 0.2
	done
	wait $bpid 2>/dev/null
	wait $apid
	grep -hE "^(PASS|FAIL|INFO|stream|kill|guestkill|lat|two|preload|check|\{)" "$cache/guest-a.log" \
		"$cache/guest-b.log"
	# What each failed check printed, which the next run's logs replace:
	# the lines before its FAIL (a check prints its program's output first).
	for g in a b; do
		grep -q "^FAIL" "$cache/guest-$g.log" || continue
		echo "verbs-vm: guest $g, the lines before each FAIL:"
		grep -h -B 12 "^FAIL" "$cache/guest-$g.log" | sed 's/^/  | /'
	done
	guest_status -a; ra=$?
	if [ "$what" = two-bench ] || [ "$what" = two-reorder ] || [ "$what" = preload ] || [ "$what" = apps ]; then
		guest_status -b; rb=$?
		exit $(( ra != 0 || rb != 0 ))
	fi
	# Ctrl-C across hosts: every record B sent, A measured.
	sent=$(sed -n 's/^stop_over_verbs: sent \([0-9]*\).*/\1/p' "$cache/guest-b.log")
	got=$(sed -n 's/^stop_over_verbs: measured \([0-9]*\).*/\1/p' "$cache/guest-a.log")
	if [ -n "$sent" ] && [ "$sent" = "$got" ]; then
		echo "PASS two_guests_ctrl_c_every_record_sent_measured ($sent)"
	else
		echo "FAIL two_guests_ctrl_c_every_record_sent_measured (sent '${sent}', measured '${got}')"
		ra=1
	fi
	if [ "$guestkill" = 1 ]; then
		# B cannot write a status: its summary line is its result.
		rb=1
		grep -q "^two guests (client): [0-9]* passed, 0 failed" "$cache/guest-b.log" && rb=0
		[ $killed = 1 ] || { echo "error: guest b was never killed mid-stream" >&2; rb=1; }
	else
		guest_status -b; rb=$?
	fi
	exit $(( ra != 0 || rb != 0 ))
fi
boot "" -nic none
if [ "$what" = pppoe ] && [ "$(cat "$cache/status" 2>/dev/null)" = 0 ]; then
	mkdir -p "$top/tests/captures"
	cp "$cache/pppoe-session.pcap" "$top/tests/captures/pppoe-session.pcap"
	echo "verbs-vm: wrote tests/captures/pppoe-session.pcap"
fi
if [ "$what" = eval ] || [ "$what" = eval-quick ] || [ "$what" = cases ]; then
	out=$top/doc/eval/verbs${what#eval}
	[ "$what" = cases ] && out=$top/doc/eval/verbs
	[ -f "$out/results.json" ] && python3 "$top/usertools/rb2-eval.py" --replot "$out"
fi
guest_status ""
