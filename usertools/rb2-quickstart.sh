#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
#
# One-command set-up for a fresh Debian 12 machine (as root):
#   usertools/rb2-quickstart.sh main   install, build, run the main job
#   usertools/rb2-quickstart.sh test   install, build (also ASan+UBSan, TSan), run the fast tier
#   usertools/rb2-quickstart.sh test full   ... and run every test (what CI runs)
# Both are idempotent: packages already present are not touched, an existing
# build directory is reused.
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cmd=${1:-}
build=${RB2_BUILD:-$top/build}
build_asan=${RB2_BUILD_ASAN:-$top/build-asan}
build_tsan=${RB2_BUILD_TSAN:-$top/build-tsan}
hugemem=${RB2_HUGEMEM:-1G}

PKGS=(meson ninja-build pkg-config gcc python3
      libdpdk-dev dpdk dpdk-dev
      libibverbs-dev librdmacm-dev libnuma-dev libpcap-dev
      libcriterion-dev clang libclang-rt-14-dev
      golang-github-google-gopacket-dev gnuplot-nox tshark tcpreplay
      qemu-system-x86 mmdebstrap busybox-static
      libhttp-parser-dev curl wrk libmemcached-tools memcached nginx-light
      nfdump softflowd redis-server redis-tools sockperf iperf3 iproute2 postgresql
      apache2)

usage() {
	cat <<EOF
usage: $0 main [TRACE] | test [full]

  main   install missing packages, reserve hugepages, build, and run the
         main job: the measurement NF (rb2-nf on its default pipeline:
         replay on lcore 0, an RB2 channel over shm, measure on lcore 1)
         on TRACE, or on a CAIDA-like trace that rb2-tracegen generates
         (10 M packets, 500 k flows)
  test   install missing packages, reserve hugepages, build a release, an
         ASan+UBSan and a TSan tree, and run the fast tier: the unit and
         application tests that take seconds each (suite fast) in the first
         two (suite fast-release: the first only), the quickest concurrent
         ones (suite fast-tsan) in the third, and a 3 s libFuzzer pass per
         target. Under 15 minutes on 2 cores.
  test full
         everything, as CI runs it: every unit and application test (suite
         unit) in the first two trees, the concurrent tests (suite tsan) in
         the third, the verbs suites on Soft-RoCE inside QEMU guests
         (tests/verbs-vm/run.sh, one guest and two), libFuzzer for 5 s per
         target, and the quick evaluation (usertools/rb2-eval.py --quick).
         43-45 minutes on 2 cores from a clean clone. The sanitizer
         trees build, and libFuzzer runs, while the one-guest suite and
         the apps run (at idle priority: the guests leave the CPUs idle
         most of the time); the two-guest suite runs after, alone.

environment: RB2_BUILD, RB2_BUILD_ASAN, RB2_BUILD_TSAN (build dirs), RB2_HUGEMEM (hugepages made free, default
             1G; a larger reservation is never lowered),
             RB2_FUZZ_SECONDS (per fuzz target, default 3 in the fast tier, 5 in
             the full), CI=true (adds -Werror)
EOF
}

log() { printf '== %s\n' "$*"; }

install_packages() {
	local missing=() p
	for p in "${PKGS[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && { log "packages: all present"; return; }
	if [ "$(id -u)" -ne 0 ]; then
		echo "error: missing packages: ${missing[*]}; run this script as root, or: sudo apt-get install ${missing[*]}" >&2
		exit 1
	fi
	log "installing: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get -o DPkg::Lock::Timeout=300 update -q
	# memcached and nginx are reference points the evaluation starts on
	# ports of its own: no daemon of theirs is left running (policy-rc.d
	# 101: packages do not start services).
	local rc=0 policy=0
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod +x /usr/sbin/policy-rc.d
		policy=1
	fi
	apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends "${missing[@]}" ||
		rc=$?
	[ $policy -eq 0 ] || rm -f /usr/sbin/policy-rc.d
	[ $rc -eq 0 ] || exit $rc
}

# 1G, 512M or 768 (MiB) -> MiB.
to_mib() {
	case "$1" in
	*G|*g) echo $(( ${1%[Gg]} * 1024 )) ;;
	*M|*m) echo "${1%[Mm]}" ;;
	*) echo "$1" ;;
	esac
}

# Sets EAL_MEM to the EAL memory arguments this machine supports.
setup_hugepages() {
	EAL_MEM="--no-huge -m 1024"
	HUGE=0
	# At least $hugemem free; a larger reservation is left as it is.
	[ "$(id -u)" -ne 0 ] || log "$("$top/usertools/rb2-hugepages.sh" "$(to_mib "$hugemem")")"
	local free
	free=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
	if [ "${free:-0}" -ge 256 ] && mountpoint -q /dev/hugepages; then
		EAL_MEM="-m 768"
		HUGE=1
		log "hugepages: $free x 2 MiB free on /dev/hugepages"
	else
		log "hugepages: none free, running with --no-huge (to enable: as root, usertools/rb2-hugepages.sh 1024)"
	fi
}

# configure_build DIR [--tests-only] MESON_OPTIONS...: configures DIR and
# builds it, or with --tests-only builds nothing: meson test then builds
# just what the tests it runs depend on (the ThreadSanitizer tree runs 15
# tests, which need a quarter of the targets; the others compile in the
# first two trees).
configure_build() {
	local dir=$1; shift
	local all=1
	[ "${1:-}" = --tests-only ] && { all=0; shift; }
	local werror=()
	[ "${CI:-}" = "true" ] && werror=(-Dwerror=true)
	if [ ! -f "$dir/build.ninja" ]; then
		log "configuring $dir"
		meson setup "$dir" "$top" "${werror[@]}" "$@"
	else
		meson configure "$dir" "${werror[@]}" "$@" >/dev/null
	fi
	if [ $all = 1 ]; then
		log "building $dir"
		ninja -C "$dir"
	else
		log "$dir: configured; what its tests need builds before they run"
	fi
}

# ThreadSanitizer lists every loaded module again at each dlopen, and an EAL
# start dlopens every driver in DPDK's plugin directory (Debian's: 128, in
# 384 files): 2 s per EAL start under TSan, half its tests' time. As root,
# the sanitizer trees' tests run in a mount namespace of their own where
# that directory holds only the drivers rb2 uses: 1.4 s less per start
# under TSan, the same code under test (tests/tsan/README.md); under ASan,
# whose loads map shadow memory for each library, 8-15% of the property,
# chan and xport tests' time. Otherwise, or if no namespace can be made,
# they run as they are.
rb2_drivers=(bus_vdev bus_pci mempool_ring mempool_stack net_null net_pcap net_ring net_af_packet)
with_rb2_drivers_only() { # CMD...
	local pmds few=$build_tsan/eal-drivers l
	pmds=$(ls -d "$(pkg-config --variable=libdir libdpdk)"/dpdk/pmds-* 2>/dev/null | head -n 1)
	if [ "$(id -u)" -ne 0 ] || [ -z "$pmds" ]; then
		"$@"
		return
	fi
	rm -rf "$few" && mkdir -p "$few"
	for l in "${rb2_drivers[@]}"; do
		cp -a "$pmds/librte_$l.so"* "$few/" 2>/dev/null || true
	done
	if unshare -m mount --bind "$few" "$pmds" 2>/dev/null; then
		log "DPDK's plugin directory narrowed to ${#rb2_drivers[@]} drivers for these tests (a mount namespace of their own)"
		unshare -m sh -c 'mount --bind "$1" "$2" && shift 2 && exec "$@"' sh "$few" "$pmds" "$@"
	else
		"$@"
	fi
}

case "$cmd" in
main)
	install_packages
	setup_hugepages
	configure_build "$build"
	trace=${2:-}
	if [ -z "$trace" ]; then
		trace=$build/caida-like.pcap
		if [ ! -f "$trace" ]; then
			log "generating a CAIDA-like trace: $trace"
			"$build/apps/rb2-tracegen/rb2-tracegen" -o "$trace" --packets 10000000 \
				--flows 500000 --snaplen 64 --seed 1
		fi
	fi
	log "main job: rb2-nf, replay -> RB2 channel (shm) -> measure, on $trace"
	"$build/apps/rb2-nf/rb2-nf" -l 0-1 --no-pci $EAL_MEM --file-prefix rb2-main \
		--log-level=lib.eal:warning -- \
		--trace "$trace" --top 10 --json "$build/rb2-nf.json" \
		--stats-json "$build/rb2-nf-stats.json"
	log "every flow: $build/rb2-nf.json; per-stage statistics: $build/rb2-nf-stats.json"
	;;
test)
	tier=${2:-fast}
	case "$tier" in
	fast|full) ;;
	*) echo "error: test $tier: the tiers are 'fast' (the default) and 'full'" >&2; exit 2 ;;
	esac
	t0=$(date +%s)
	# The closing summary reads every log this run writes, and no older one.
	rm -f "$build"/meson-logs/testlog-{guests,two-guests,fuzz,extra}.json
	install_packages
	setup_hugepages
	export RB2_HUGEPAGES=$HUGE
	configure_build "$build"
	# The full tier's Soft-RoCE guests need a Debian rootfs (a download of
	# about two minutes) and a build of their own: made now, in the
	# background at SCHED_IDLE (it takes only a CPU that nothing else wants,
	# so the tests' timed checks keep theirs); the first guest suite waits
	# for it if it has not ended (tests/verbs-vm/run.sh prepare).
	prep_pid=
	if [ "$tier" = full ] && [ "$(id -u)" -eq 0 ]; then
		log "full tier: preparing the Soft-RoCE guests in the background, at idle priority ($build/verbs-vm-prepare.log)"
		chrt --idle 0 "$top/tests/verbs-vm/run.sh" "$build" prepare \
			> "$build/verbs-vm-prepare.log" 2>&1 &
		prep_pid=$!
	fi
	# In the full tier the ASan tree builds later, at idle priority.
	asan_when=()
	[ "$tier" = full ] && asan_when=(--tests-only)
	configure_build "$build_asan" "${asan_when[@]}" -Db_sanitize=address,undefined \
		-Dbuildtype=debug -Db_lundef=false
	configure_build "$build_tsan" --tests-only -Db_sanitize=thread -Dbuildtype=debugoptimized \
		-Db_lundef=false
	rc=0
	asan_env=(ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
		  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1)
	if [ "$tier" = fast ]; then
		log "fast tier: release build"
		meson test -C "$build" --print-errorlogs --num-processes 1 --suite fast \
			--suite fast-release || rc=1
		log "fast tier: libFuzzer on the pcap reader, the configuration parser, descriptors, frames and the relay (3 s each)"
		RB2_FUZZ_SECONDS=${RB2_FUZZ_SECONDS:-3} meson test -C "$build" --print-errorlogs \
			--num-processes 1 --suite fuzz --logbase testlog-extra || rc=1
		log "fast tier: ASan+UBSan build"
		with_rb2_drivers_only env "${asan_env[@]}" meson test -C "$build_asan" \
			--print-errorlogs --num-processes 1 --suite fast --timeout-multiplier 4 || rc=1
		log "fast tier: ThreadSanitizer build, the concurrent tests (0 findings; tests/tsan/README.md)"
		with_rb2_drivers_only env TSAN_OPTIONS=halt_on_error=0:atexit_sleep_ms=0 \
			meson test -C "$build_tsan" --print-errorlogs --num-processes 1 --suite fast-tsan \
			--timeout-multiplier 4 || rc=1
	else
		log "full tier: release build"
		meson test -C "$build" --print-errorlogs --num-processes 1 --suite unit || rc=1
		# The guests leave the host's CPUs idle most of the time: their
		# checks wait on sleeps, timeouts and the emulated wire (a
		# two-guest run kept 38% of the two CPUs busy). The sanitizer
		# trees build and libFuzzer runs in that idle time, at SCHED_IDLE.
		# libFuzzer runs for a time, not a count, so it gets fewer inputs
		# through than alone.
		idle_log=$build/full-tier-idle.log
		log "full tier: the verbs transport on Soft-RoCE in QEMU guests; meanwhile, at idle priority, the ASan+UBSan and TSan trees build and libFuzzer runs 5 s per target ($idle_log)"
		chrt --idle 0 bash -c 'ninja -C "$1" && ninja -C "$2" meson-test-prereq &&
			RB2_FUZZ_SECONDS=$4 meson test -C "$3" --no-rebuild --print-errorlogs \
				--num-processes 1 --suite fuzz --logbase testlog-fuzz' \
			idle "$build_asan" "$build_tsan" "$build" "${RB2_FUZZ_SECONDS:-5}" \
			> "$idle_log" 2>&1 &
		idle_pid=$!
		# The two-guest suite runs last, once that work has ended: its
		# checks time the wire between two guests, and two of them failed
		# in the suite's first minutes while libFuzzer ran beside it (a
		# QP's retries ran out; a check whose log was cut, most likely
		# two services' link).
		meson test -C "$build" --print-errorlogs --num-processes 1 \
			--logbase testlog-guests verbs_vm verbs_vm_apps || rc=1
		if ! wait "$idle_pid"; then
			rc=1
			echo "error: the sanitizer trees' build or libFuzzer failed (its last lines; all of it in $idle_log):" >&2
			tail -n 40 "$idle_log" >&2
		fi
		meson test -C "$build" --print-errorlogs --num-processes 1 \
			--logbase testlog-two-guests verbs_vm_two_guests || rc=1
		log "full tier: the quick evaluation"
		meson test -C "$build" --print-errorlogs --num-processes 1 --suite eval \
			--logbase testlog-extra || rc=1
		log "full tier: ASan+UBSan tree, the unit tests"
		with_rb2_drivers_only env "${asan_env[@]}" meson test -C "$build_asan" \
			--print-errorlogs --num-processes 1 --suite unit --timeout-multiplier 4 || rc=1
		log "full tier: ThreadSanitizer tree, the concurrent tests (0 findings; tests/tsan/README.md)"
		with_rb2_drivers_only env TSAN_OPTIONS=halt_on_error=0:atexit_sleep_ms=0 \
			meson test -C "$build_tsan" --print-errorlogs --num-processes 1 --suite tsan \
			--timeout-multiplier 4 || rc=1
	fi
	# Its failure is the first guest suite's to report: that run makes
	# what is missing again, and names the step that fails.
	[ -z "$prep_pid" ] || wait "$prep_pid" || true
	# One closing summary over every build, from meson's own logs: the
	# counts, the wall time, and the slowest tests (where time goes).
	python3 - "$tier" "$(( $(date +%s) - t0 ))" "$build/meson-logs/testlog.json" \
		"$build/meson-logs/testlog-guests.json" "$build/meson-logs/testlog-two-guests.json" \
		"$build/meson-logs/testlog-fuzz.json" \
		"$build/meson-logs/testlog-extra.json" "$build_asan/meson-logs/testlog.json" \
		"$build_tsan/meson-logs/testlog.json" <<'PY'
import json, sys
tier, wall = sys.argv[1], int(sys.argv[2])
n = {"OK": 0, "FAIL": 0, "SKIP": 0}
times = []
for path in sys.argv[3:]:
    build = path.split("/")[-3]
    try:
        lines = open(path).readlines()
    except OSError:
        continue            # a build that failed: its error is above
    for line in lines:
        r = json.loads(line)
        res = r["result"]
        n["OK" if res == "OK" else "SKIP" if res == "SKIP" else "FAIL"] += 1
        times.append((r["duration"], f"{build}/{r['name']}"))
slow = ", ".join(f"{name} {d:.0f} s" for d, name in sorted(times, reverse=True)[:10])
print(f"{tier} tier: {n['OK']} passed, {n['FAIL']} failed, {n['SKIP']} skipped, "
      f"{wall // 60} min {wall % 60} s with the builds; slowest: {slow}")
PY
	exit $rc
	;;
-h|--help|help)
	usage
	;;
*)
	usage >&2
	exit 2
	;;
esac
