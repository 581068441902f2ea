#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
#
# Sourced by the two-guest runs (suite-two.sh, reorder-two.sh), with side
# (client or server), pass and fail set: the helpers of their rb2-run checks.

# rb2-run across the wire: unmodified programs (rb2run_peer.py, plain
# sockets) under rb2-run on both guests, their connections over verbs. Each
# guest's rb2-sockd is started first: B's service remembers for 30 s that a
# host did not answer, and A's must answer B's first question.
rrun=$RB2_BUILD/apps/rb2-run/rb2-run
sockd=$RB2_BUILD/apps/rb2-sockd/rb2-sockd
rpeer=/rb2/tests/rb2run_peer.py
export RB2_PEER_HOST=169.254.77.1 RB2_RUN_STATS=1  # A's address, on both sides
rr_result() { # NAME RC FILE WANT...: PASS if RC is 0 and FILE has each WANT
	local name=$1 rc=$2 f=$3 w; shift 3
	grep -vE "^(listening|accepted)$" "$f"
	for w in "$@"; do grep -q -- "$w" "$f" || rc="no '$w'"; done
	if [ "$rc" = 0 ]; then pass=$((pass + 1)); echo "PASS two_guests_rb2run_$name ($side)";
	else fail=$((fail + 1)); echo "FAIL two_guests_rb2run_$name ($side: $rc)"; fi
}
# ... and where each stream's set-up went (grep: a basic regex)
verbs_line="of them to other hosts, over verbs (.* doorbells; set-up per stream, mean ms: service [0-9]"
# B waits until A's program listens there, registered with A's service:
# asked as a client without a device, A's service answers "yes" and expects
# nothing. (A connect between A's listen() and its registration would be
# kernel TCP, rightly, and the check for verbs would fail.)
rr_wait_listener() { # PORT
	local ans
	for _ in $(seq 100); do
		ans=$(exec 3<>/dev/tcp/169.254.77.1/7472 && printf 'rb2-sockd 2 listener %s from 0\n' "$1" >&3 &&
		      timeout 2 head -n 1 <&3) 2>/dev/null
		[ "$ans" = "rb2-sockd 2 yes" ] && return 0
		sleep 0.3
	done
	echo "INFO no rb2-run listener on A's port $1 after 30 s"
}
"$sockd" --daemon > /dev/null 2>&1
# Loss and reordering on the wire (netem, both sides): RC retransmits and
# puts packets back in order, so every byte arrives exactly once, in order,
# both ways. The streams READ nothing: Soft-RoCE (Debian 12's kernel) leaves
# a READ uncompleted for good under reordering, so a sender that READ the
# reader's head when its ring was full timed out here.
export RB2_NOEAL_LOG=7   # the channels' own messages too, if one fails
# While RC repairs the wire, every wait must sleep: a wait that looks again
# at once counts a sleep each time, with no wake-up asked. Under loss and
# reordering the peer's FIN, or its half-close, overtakes its last WRITEs;
# a writer that woke for the half-close counted 137453 sleeps for 48
# wake-ups under loss 1%, and 901318 for 75 under reordering (13.1 s of CPU
# in 25.8 s). Each side's CPU time is reported (bash's time: the program
# and rb2-run's threads; under TCG, Python's own work is seconds of it).
# WANT is looked for in the client's stats line: the client writes 1 to
# 100000 bytes at a time, back to back. The server's echo makes each 64 KiB
# in Python, slower under TCG than the round trip, so whether one of its 16
# writes overlaps another is chance (one run had none).
rr_netem() { # NAME PORT BYTES WANT NETEM-ARGS...
	local name=$1 port=$2 bytes=$3 want=$4 rc cpu sw; shift 4
	local TIMEFORMAT='%U %S %R'
	tc qdisc replace dev eth0 root netem "$@"
	echo "INFO rb2-run under netem $* ($side)"
	if [ $side = server ]; then
		{ time timeout -k 5 180 "$rrun" -- python3 "$rpeer" server "$port" \
			> /tmp/rr-$name 2>&1; } 2> /tmp/rr-$name.time
		rc=$?
	else
		rr_wait_listener "$port"
		{ time timeout -k 5 180 "$rrun" -- python3 "$rpeer" client "$port" "$bytes" \
			> /tmp/rr-$name 2>&1; } 2> /tmp/rr-$name.time
		rc=$?
	fi
	cpu=$(awk '{ printf "%.1f s of CPU in %.1f s", $1 + $2, $3 }' /tmp/rr-$name.time)
	sw=$(sed -n 's/.*; \([0-9]*\) sleeps asked the device for \([0-9]*\) wake-ups.*/\1 \2/p' \
		/tmp/rr-$name | tail -n 1)
	echo "INFO rb2-run under netem $*: $cpu, ${sw% *} sleeps for ${sw#* } wake-ups ($side)"
	[ "$rc" = 0 ] && [ -n "$sw" ] && [ "${sw% *}" -gt $((20 * ${sw#* } + 200)) ] &&
		rc="${sw% *} sleeps for ${sw#* } wake-ups: a wait looked again at once"
	if [ $side = server ]; then
		rr_result "$name" "$rc" /tmp/rr-$name "$verbs_line"
	else
		rr_result "$name" "$rc" /tmp/rr-$name "up: whole, down: whole" "$verbs_line" "$want"
	fi
	tc qdisc del dev eth0 root
}
