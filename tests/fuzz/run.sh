#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
#
# Fuzz the pcap reader, the configuration parser, the channel's connection
# descriptor, the connection layer's frames (what a peer sends), the
# relay core (what a hostile application sends a host service) and IPFIX
# (the decoder, and the encoder's round trip) with
# libFuzzer under ASan+UBSan
# (clang from Debian: apt-get install clang libclang-rt-14-dev).
#
#   run.sh BUILD_DIR [SECONDS]     each target runs SECONDS (default:
#                                  $RB2_FUZZ_SECONDS or 30), from a seed corpus
#                                  of crafted captures and the shipped configs;
#                                  RB2_FUZZ_TARGETS="conn relay" picks targets
# Crashes are kept in BUILD_DIR/fuzz/<target>-crashes/.
set -uo pipefail

build=$(cd "$1" && pwd)
secs=${2:-${RB2_FUZZ_SECONDS:-30}}
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=$build/fuzz
cc=$(command -v clang || command -v clang-14 || true)
mkdir -p "$out"

if [ -z "$cc" ]; then
	echo "SKIP: no clang: apt-get install clang libclang-rt-14-dev"
	exit 77
fi
if ! echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n){(void)d;(void)n;return 0;}' |
	"$cc" -x c -fsanitize=fuzzer -o "$out/probe" - 2>/dev/null; then
	echo "SKIP: clang cannot link libFuzzer: apt-get install libclang-rt-14-dev"
	exit 77
fi

flags=(-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -I"$src/lib/trace" -I"$src/lib/pipeline")
# The channel library asks libnuma where its rings are, where the build has it.
numa_libs=
grep -q "RB2_HAS_NUMA 1" "$build/config/rb2_build_config.h" && numa_libs=$(pkg-config --libs numa)
# shellcheck disable=SC2207 # pkg-config's words
dpdk_cflags=($(pkg-config --cflags libdpdk))
rb2_cflags=(-I"$build/config" -include rb2_build_config.h -I"$src/lib/rb2" -I"$src/lib/xport"
	    -I"$src/lib/conn" "${dpdk_cflags[@]}")

# The libraries the targets share (channels, transports, connections, the
# shm driver), instrumented, compiled once and two at a time: the targets
# link the objects they need (objects, not an archive, so that the shm
# driver's constructor, which registers it, is linked).
obj=$out/obj
rm -rf "$obj" "$out"/fuzz_pcap "$out"/fuzz_config "$out"/fuzz_desc "$out"/fuzz_conn "$out"/fuzz_relay \
	"$out"/fuzz_ipfix
mkdir -p "$obj"
compile() {
	"$cc" -g -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined \
		"${rb2_cflags[@]}" -c "$1" -o "$obj/$(basename "$1" .c).o"
}
for f in "$src"/lib/rb2/*.c "$src"/lib/xport/*.c "$src"/lib/conn/*.c \
	 "$src"/drivers/xport/shm/*.c; do
	compile "$f" &
	[ "$(jobs -rp | wc -l)" -ge 2 ] && wait -n
done
wait
for f in "$src"/lib/rb2/*.c "$src"/lib/xport/*.c "$src"/lib/conn/*.c \
	 "$src"/drivers/xport/shm/*.c; do
	[ -s "$obj/$(basename "$f" .c).o" ] || { echo "fuzz: cannot compile $f"; exit 1; }
done
chan_objs=("$obj"/rb2_chan*.o "$obj"/rb2_sync_*.o "$obj"/rb2_bulk.o "$obj"/rb2_lcore.o
	   "$obj"/rb2_xport.o "$obj"/rb2_xport_lane.o "$obj"/rb2_xport_oob.o "$obj"/rb2_mr_cache.o)
conn_objs=("${chan_objs[@]}" "$obj"/rb2_conn_*.o)
# shellcheck disable=SC2207 # pkg-config's words
dpdk_libs=($(pkg-config --libs libdpdk) $numa_libs)

"$cc" "${flags[@]}" -o "$out/fuzz_pcap" "$src/tests/fuzz/fuzz_pcap.c" \
	"$src/lib/trace/rb2_trace.c" -lpcap &
"$cc" "${flags[@]}" -o "$out/fuzz_config" "$src/tests/fuzz/fuzz_config.c" \
	"$src/lib/pipeline/rb2_config.c" &
wait
"$cc" "${flags[@]}" -I"$src/lib/nf" -o "$out/fuzz_ipfix" "$src/tests/fuzz/fuzz_ipfix.c" \
	"$src/lib/nf/rb2_ipfix.c" &
# The descriptor check with the channel library it belongs to (instrumented
# too: the region size comes from the sync policies' tables).
"$cc" "${flags[@]}" "${rb2_cflags[@]}" -o "$out/fuzz_desc" "$src/tests/fuzz/fuzz_desc.c" \
	"${chan_objs[@]}" "${dpdk_libs[@]}" &
# Connection frames into an endpoint, over a shm channel pair.
"$cc" "${flags[@]}" "${rb2_cflags[@]}" -o "$out/fuzz_conn" "$src/tests/fuzz/fuzz_conn.c" \
	"${conn_objs[@]}" "$obj"/rb2_xport_shm.o "${dpdk_libs[@]}" &
wait
# The relay core, as a hostile application drives it.
"$cc" "${flags[@]}" "${rb2_cflags[@]}" -o "$out/fuzz_relay" "$src/tests/fuzz/fuzz_relay.c" \
	"${conn_objs[@]}" "$obj"/rb2_xport_shm.o "${dpdk_libs[@]}"
for t in pcap config desc conn relay ipfix; do
	[ -x "$out/fuzz_$t" ] || { echo "fuzz: cannot build fuzz_$t"; exit 1; }
done

# Seeds: captures of every link type, and every configuration we ship.
seeds=$out/seeds
rm -rf "$seeds"
mkdir -p "$seeds/pcap" "$seeds/config" "$seeds/desc" "$seeds/conn" "$seeds/ipfix"
python3 "$src/tests/nf_reference.py" craft "$seeds/pcap" >/dev/null
[ -x "$build/apps/rb2-tracegen/rb2-tracegen" ] &&
	"$build/apps/rb2-tracegen/rb2-tracegen" -o "$seeds/pcap/gen.pcap" --packets 20 \
		--flows 5 --ipv6 0.3 --nonip 0.1 --snaplen 48 >/dev/null
cp "$src"/config/*.ini "$src"/examples/*/*.ini "$seeds/config/"
# Descriptors: every parameter selector, as the valid one (overlay of zeros).
for sel in $(seq 0 255); do
	printf "\\x$(printf %02x "$sel")\\x01" >"$seeds/desc/valid-$sel"
done

# Frames (fuzz_conn.c's and fuzz_relay.c's input format): a SYN to the
# listening port, data and a FIN for the open connection, a credit, a lent
# buffer's descriptor (one segment of 256 bytes), a REFDONE, a READREQ, a
# LISTEN, a BYE, raw garbage.
mkdir -p "$seeds/relay"
python3 - "$seeds/conn" "$seeds/relay" <<'PY'
import struct, sys
NONE, OPEN = 0x40, 0x80
def frame(t, flags, aux, body):
    return bytes([t, len(body) & 0xff, (len(body) >> 8) & 3 | flags]) + struct.pack("<H", aux) + body
hello = struct.pack("<IIIHHI", 5, 4096, 4088, 0x7262, 5, 0)
ref = struct.pack("<IIQ", 7, 1, 256) + struct.pack("<QII", 0x1000, 256, 0)
seeds = {
    "syn": frame(2, NONE, 7, hello),
    "data-fin": frame(1, OPEN, 0, b"hello!!!") + frame(5, OPEN, 0, b""),
    "credit": frame(7, NONE, 1, struct.pack("<II", 0, 64)),
    "ref": frame(13, OPEN, 0, ref),
    "refdone": frame(14, NONE, 1, struct.pack("<Ii", 1, 0)),
    "readreq": frame(15, NONE, 0, struct.pack("<IIQQ", 1, 0, 0x1000, 256)),
    "listen-bye": frame(11, NONE, 9, b"") + frame(17, NONE, 0, b""),
    "raw": frame(0, 0, 0, bytes(range(40))),
}
for d in sys.argv[1:]:
    for name, b in seeds.items():
        open(d + "/" + name, "wb").write(b)
PY

# IPFIX: a message of both templates and a record of each, and the same
# message's data alone (a collector that missed the templates); the first
# again as NetFlow v9.
python3 - "$seeds/ipfix" <<'PY'
import struct, sys
fields = lambda a: [(a, 4 if a == 8 else 16), (a + 4 if a == 8 else a + 1, 4 if a == 8 else 16),
                    (7, 2), (11, 2), (4, 1), (6, 2), (2, 8), (1, 8), (152, 8), (153, 8),
                    (136, 1), (10, 4)]
def tmpl(tid, f):
    return struct.pack(">HH", tid, len(f)) + b"".join(struct.pack(">HH", *x) for x in f)
def s(sid, body):
    return struct.pack(">HH", sid, 4 + len(body)) + body
def msg(body, seq=0):
    return struct.pack(">HHIII", 10, 16 + len(body), 1800000000, seq, 1) + body
t = s(2, tmpl(256, fields(8)) + tmpl(257, fields(27)))
r4 = bytes([10, 0, 0, 1, 10, 0, 0, 2]) + struct.pack(">HHBHQQQQBI", 1234, 80, 6, 0x12, 3, 180,
                                                       1700000000000, 1700000000500, 1, 0)
r6 = bytes(range(32)) + struct.pack(">HHBHQQQQBI", 53, 5353, 17, 0, 1, 90,
                                    1700000000000, 1700000000000, 4, 2)
open(sys.argv[1] + "/both", "wb").write(msg(t + s(256, r4) + s(257, r6)))
open(sys.argv[1] + "/data-only", "wb").write(msg(s(256, r4 + r4), seq=2))
# NetFlow v9: a 20-byte header (count, uptime, time, sequence, source ID),
# templates in FlowSet 0.
t9 = s(0, tmpl(256, fields(8)) + tmpl(257, fields(27)))
open(sys.argv[1] + "/v9-both", "wb").write(struct.pack(">HHIIII", 9, 4, 0, 1800000000, 0, 1) +
                                           t9 + s(256, r4) + s(257, r6))
PY

# Two targets at a time (libFuzzer runs one thread), reported in order.
targets=(${RB2_FUZZ_TARGETS:-pcap config desc conn relay ipfix})
run_target() {
	local t=$1
	mkdir -p "$out/$t-corpus" "$out/$t-crashes"
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		"$out/fuzz_$t" -max_total_time="$secs" -max_len=8192 -timeout=10 \
		-rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$out/$t-crashes/" \
		"$out/$t-corpus" "$seeds/$t" >"$out/$t.log" 2>&1
	echo $? >"$out/$t.rc"
}
for ((i = 0; i < ${#targets[@]}; i += 2)); do
	for t in "${targets[@]:i:2}"; do
		echo "== fuzz_$t: $secs s"
		run_target "$t" &
	done
	wait
done
rc=0
for t in "${targets[@]}"; do
	if [ "$(cat "$out/$t.rc")" = 0 ]; then
		grep -E "^stat::number_of_executed_units|^#[0-9]+.*DONE" "$out/$t.log" | tail -2
		echo "fuzz_$t: no crash"
	else
		echo "fuzz_$t: FAILED (reproducer in $out/$t-crashes/):"
		grep -A30 "ERROR: \|runtime error\|deadly signal" "$out/$t.log" | head -40
		rc=1
	fi
done
exit $rc
