#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
#
#   rb2-hugepages.sh MIB
#
# Make at least MIB MiB of 2 MiB hugepages free for DPDK, as root: mount
# hugetlbfs on /dev/hugepages if nothing is mounted there, and raise the
# reservation by what is missing. It never lowers a reservation (someone
# else's pages may be in it), and never removes hugepage files (a running
# DPDK process may own them); dpdk-hugepages.py --setup does both, so the
# project's scripts call this instead. Prints one line saying what it did;
# exits 0 whether or not the kernel found the pages (the callers then fall
# back to --no-huge and say so).
set -u
usage="usage: rb2-hugepages.sh MIB: make at least MIB MiB of 2 MiB hugepages free (as root)"
case "${1:-}" in
-h|--help) echo "$usage"; exit 0 ;;
''|*[!0-9]*) echo "rb2-hugepages: '${1:-}' is not a size in MiB; $usage" >&2; exit 2 ;;
esac
want_mb=$1
sys=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
if [ "$(id -u)" -ne 0 ] || [ ! -w "$sys" ]; then
	echo "rb2-hugepages: not root: the reservation is left as it is"
	exit 0
fi
mkdir -p /dev/hugepages
mountpoint -q /dev/hugepages || mount -t hugetlbfs -o pagesize=2M nodev /dev/hugepages 2>/dev/null
want=$((want_mb / 2))
free=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
total=$(cat "$sys")
if [ "$free" -ge "$want" ]; then
	echo "rb2-hugepages: $free of $total pages free, $want wanted: nothing to do"
	exit 0
fi
echo $((total + want - free)) >"$sys" 2>/dev/null
now=$(cat "$sys")
echo "rb2-hugepages: reservation $total -> $now pages ($((want - free)) were missing)"
