# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
#
# What the tests through rb2-raasd (test_raasd.sh, test_kv.sh, test_http.sh) share; sourced
# with $build and $pfx (a --file-prefix unique to the test) set.
set -u
raasd=$build/apps/rb2-raasd/rb2-raasd
base_va=${RB2_BASE_VIRTADDR:-0x200000000000}
tmp=$(mktemp -d)
fails=0
pids=()

cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -f /dev/hugepages/"$pfx"*map_* 2>/dev/null
	rm -rf /var/run/dpdk/"$pfx"* "$tmp"
}
trap cleanup EXIT

ok() { echo "PASS $1"; }
fail() { echo "FAIL $1"; fails=$((fails + 1)); }
# eal LCORES NAME: a primary of its own (--no-huge).
eal() { echo -l "$1" --no-pci --no-huge -m 256 --file-prefix "$pfx$2" --log-level=lib.eal:error; }
# sec LCORES: a secondary of the service started by start_raasd.
sec() { echo -l "$1" --no-pci --proc-type=secondary --file-prefix "$pfx" --log-level=lib.eal:error; }
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
# wait_for FILE PATTERN: until FILE has PATTERN, 10 s at most; 1 if not.
wait_for() {
	for _ in $(seq 200); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done
	return 1
}
# The host service, for the tests' part through it; skips that part (77
# semantics for the rest) where DPDK multi-process has no hugepages.
have_hugepages() {
	local free
	free=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
	[ "${free:-0}" -ge 128 ] && mountpoint -q /dev/hugepages
}
# start_raasd [OPTION...]: the options after the service's "--".
start_raasd() {
	( trap - EXIT; exec "$raasd" -l 0 --no-pci -m 256 --file-prefix "$pfx" --proc-type=primary \
		--base-virtaddr="$base_va" --log-level=lib.eal:error -- "$@" >"$tmp/raasd" 2>&1 ) &
	pids+=("$!")
	wait_for "$tmp/raasd" ready || { echo "rb2-raasd did not start:"; cat "$tmp/raasd"; exit 1; }
}
