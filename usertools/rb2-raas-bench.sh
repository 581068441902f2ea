#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
#
# Large messages through the host service on this host, lent against
# copied (RaaS's copy/register threshold, measured through rb2-raasd): a
# service on lcore 0 and two applications, its secondaries, sharing lcore 1
# (rb2-raasbench: blocking mode, so that they take turns). One JSON line per
# size, from rb2-raasbench's sender; each line's rounds interleave the two
# modes. Needs hugepages (DPDK multi-process).
#
#   usertools/rb2-raas-bench.sh [--build DIR] [--private] [SIZE...] [-- BENCH ARGS]
#     SIZE: message sizes in bytes (default 65536 131072 262144 1048576 4194304)
#     --private: the receiver READs into malloc()'d memory (a bounce buffer)
#     BENCH ARGS: more rb2-raasbench send options (--rounds, --seconds, ...)
set -u
build=build
private=
sizes=()
extra=()
while [ $# -gt 0 ]; do
	case $1 in
	--build) build=$2; shift 2 ;;
	--private) private=--private; shift ;;
	--help|-h) sed -n '4,15p' "$0"; exit 0 ;;
	--) shift; extra=("$@"); break ;;
	*) sizes+=("$1"); shift ;;
	esac
done
[ ${#sizes[@]} -gt 0 ] || sizes=(65536 131072 262144 1048576 4194304)
raasd=$build/apps/rb2-raasd/rb2-raasd
bench=$build/apps/rb2-raasbench/rb2-raasbench
for b in "$raasd" "$bench"; do
	[ -x "$b" ] || { echo "error: $b not built (meson compile -C $build)" >&2; exit 1; }
done
free=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
if [ "${free:-0}" -lt 300 ] || ! mountpoint -q /dev/hugepages; then
	echo "error: DPDK multi-process needs hugepages (600 MiB free): as root, dpdk-hugepages.py -p 2M --setup 1G" >&2
	exit 1
fi
pfx=rb2rb$$
tmp=$(mktemp -d)
rpid=
cleanup() {
	[ -n "$rpid" ] && kill "$rpid" 2>/dev/null && wait "$rpid" 2>/dev/null
	rm -f /dev/hugepages/"$pfx"*map_* 2>/dev/null
	rm -rf /var/run/dpdk/"$pfx" "$tmp"
}
trap cleanup EXIT
"$raasd" -l 0 --no-pci -m 512 --file-prefix "$pfx" --proc-type=primary \
	--log-level=lib.eal:error -- >"$tmp/raasd" 2>&1 &
rpid=$!
for _ in $(seq 200); do grep -q ready "$tmp/raasd" && break; sleep 0.05; done
grep -q ready "$tmp/raasd" || { echo "error: rb2-raasd did not start:" >&2; cat "$tmp/raasd" >&2; exit 1; }
sec=(-l 1 --no-pci --proc-type=secondary --file-prefix "$pfx" --log-level=lib.eal:error)
port=9
for size in "${sizes[@]}"; do
	port=$((port + 1))
	timeout -k 5 600 "$bench" "${sec[@]}" -- recv --port $port $private >"$tmp/recv" 2>&1 &
	r=$!
	for _ in $(seq 200); do grep -q listening "$tmp/recv" && break; sleep 0.05; done
	echo "size $size ..." >&2
	timeout -k 5 600 "$bench" "${sec[@]}" -- send --port $port --size "$size" "${extra[@]}" \
		2>"$tmp/send.err" || { echo "error: size $size:" >&2; cat "$tmp/send.err" "$tmp/recv" >&2; }
	wait $r || { echo "error: the receiver, size $size:" >&2; cat "$tmp/recv" >&2; }
done
kill "$rpid"; wait "$rpid"; rpid=
grep "lent buffers" "$tmp/raasd" >&2
