#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
#
# Runs inside the verbs-vm guest (guest.sh, rb2.what=pppoe): captures a real
# PPPoE session, made by Linux's PPPoE and pppd on one side and rp-pppoe's
# pppoe-server on the other, between two network namespaces joined by a veth
# pair (the host's kernel has no PPP; nothing leaves the guest).
#
#   pppoe.sh OUT.pcap
#
# The capture, taken on the concentrator's end of the wire, holds the
# discovery (PADI, PADO, PADR, PADS), LCP (to the hang-up's Terminate), IPCP
# and IPv6CP, and IPv4 and IPv6 inside the session: ICMP echoes, a TCP
# exchange, UDP datagrams and the ICMP error one draws, and what the kernel
# sends on its own.
# tests/test_nf.sh checks rb2-nf's decoding of it against tshark's.
set -u
out=${1:?usage: pppoe.sh OUT.pcap}
tmp=/tmp/pppoe
mkdir -p "$tmp"

step() { echo "pppoe: $*"; }
die() { echo "pppoe: error: $*" >&2; exit 1; }

modprobe pppoe || die "no pppoe module in the guest's kernel"
modprobe ppp_async || die "no ppp_async module (pppoe-server's pppd runs over a pty)"
[ -e /dev/ppp ] || mknod /dev/ppp c 108 0
# pppoe-server's pppd talks to its pppoe over a pseudo-tty.
if ! mountpoint -q /dev/pts; then
	mkdir -p /dev/pts && mount -t devpts -o ptmxmode=0666 devpts /dev/pts ||
		die "cannot mount devpts (pppoe-server needs pseudo-ttys)"
fi

# The access concentrator (ns ac) and the subscriber (ns cl), one wire.
ip netns add ac && ip netns add cl || die "cannot make the namespaces"
ip link add veth-ac netns ac type veth peer name veth-cl netns cl || die "no veth pair"
for ns in ac cl; do
	# No IPv6 of the wire's own: every IPv6 packet captured is in the session.
	ip netns exec $ns sysctl -qw net.ipv6.conf.veth-$ns.disable_ipv6=1
	ip -n $ns link set lo up
	ip -n $ns link set veth-$ns up
done

# The capture runs from before the first PADI to after the hang-up.
ip netns exec ac tcpdump -i veth-ac -U -Z root -w "$tmp/cap.pcap" >"$tmp/tcpdump.log" 2>&1 &
tcpdump_pid=$!
for _ in $(seq 50); do grep -q "listening on" "$tmp/tcpdump.log" && break; sleep 0.1; done

# A TCP echo server and a UDP sink on the concentrator, bound before the
# session exists (they listen on every address).
cat >"$tmp/srv.py" <<'PY'
import socket, threading
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.bind(("0.0.0.0", 5300))
def udp():
    while True:
        d, a = u.recvfrom(2048)
        u.sendto(d.upper(), a)
threading.Thread(target=udp, daemon=True).start()
t = socket.socket()
t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
t.bind(("0.0.0.0", 8080))
t.listen(4)
while True:
    c, _ = t.accept()
    while True:
        d = c.recv(4096)
        if not d:
            break
        c.sendall(d)
    c.close()
PY
ip netns exec ac python3 "$tmp/srv.py" &
srv_pid=$!

cat >"$tmp/server-options" <<EOF
noauth
lcp-echo-interval 0
+ipv6
debug
logfile $tmp/pppd-ac.log
EOF
ip netns exec ac pppoe-server -I veth-ac -L 10.77.0.1 -R 10.77.0.2 -N 4 \
	-O "$tmp/server-options" -X "$tmp/server.pid" || die "pppoe-server did not start"
step "concentrator up on veth-ac"

# The subscriber: the kernel's PPPoE through pppd's plugin.
ip netns exec cl pppd plugin pppoe.so nic-veth-cl noauth noipdefault nodefaultroute \
	+ipv6 lcp-echo-interval 0 maxfail 1 updetach debug logfile "$tmp/pppd-cl.log" ||
	{ tail -n 30 "$tmp/pppd-cl.log" "$tmp/pppd-ac.log" >&2
	  die "the subscriber's pppd did not bring the session up"; }
for _ in $(seq 100); do
	ip -n cl -4 addr show dev ppp0 2>/dev/null | grep -q "inet 10.77.0.2" && break
	sleep 0.1
done
ip -n cl addr show dev ppp0 || die "no ppp0 in the subscriber's namespace"
step "session up"
sleep 2 # IPv6CP, and the kernel's own router and listener reports

# Traffic inside the session.
ip netns exec cl ping -c 4 -i 0.2 10.77.0.1 || die "no IPv4 echo over the session"
ip netns exec cl python3 - <<'PY' || die "no TCP or UDP exchange over the session"
import socket
s = socket.create_connection(("10.77.0.1", 8080), timeout=10)
for m in (b"GET / rb2\r\n", b"x" * 1000, b"the last one"):
    s.sendall(m)
    got = b""
    while len(got) < len(m):
        got += s.recv(4096)
    assert got == m, got
s.close()
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.settimeout(10)
for i in range(3):
    u.sendto(b"datagram %d" % i, ("10.77.0.1", 5300))
    assert u.recvfrom(2048)[0] == b"DATAGRAM %d" % i
u.sendto(b"to nobody", ("10.77.0.1", 5301))   # draws ICMP port unreachable
PY
peer6=$(ip -n ac -6 addr show dev ppp0 2>/dev/null | sed -n 's/.*inet6 \(fe80::[0-9a-f:]*\).*/\1/p' | head -1)
if [ -n "$peer6" ]; then
	ip netns exec cl ping -6 -c 3 -i 0.2 "$peer6%ppp0" || die "no IPv6 echo over the session"
else
	die "IPv6CP gave ppp0 no link-local address"
fi
sleep 1

# Hang up: LCP Terminate.
pkill -f "pppd plugin pppoe.so"
for _ in $(seq 50); do pgrep -f "pppd plugin pppoe.so" >/dev/null || break; sleep 0.1; done
sleep 1
kill "$(cat "$tmp/server.pid")" "$srv_pid" 2>/dev/null
kill -INT "$tcpdump_pid"
wait "$tcpdump_pid"
cp "$tmp/cap.pcap" "$out" || die "cannot write $out"
step "captured $(tcpdump -r "$out" 2>/dev/null | wc -l) packets into $out"
