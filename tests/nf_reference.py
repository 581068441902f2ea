#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
"""An independent reference for the measurement NF, in plain Python.

It reads pcap and pcapng itself (no libpcap), decodes the link layers and
IP headers from their specifications, and computes totals and the flow
records an exporter makes: per flow packets, IP bytes, first/last timestamps
and TCP flags, a record ending on a TCP FIN or RST and on the idle and
active timeouts (those of the NF's JSON, by trace time; when both have
passed, the one due first), to check rb2-nf's JSON against.

  nf_reference.py compare TRACE NF_JSON   exit 1 and print the differences
  nf_reference.py summary TRACE           print the reference as JSON
  nf_reference.py craft DIR               write small captures of every
                                          supported link type, with VLAN
                                          tags, PPPoE, MPLS, fragments, IPv6
                                          extension headers, snapped and
                                          broken packets
  nf_reference.py tshark TRACE NF_JSON    check rb2-nf's kinds and IPv4 flows
                                          against tshark's decoding
  nf_reference.py nfdump NFDUMP_JSON NF_JSON
                                          the records a collector stored
                                          (TZ=UTC nfdump -r FILE -o json) = the
                                          NF's, record for record, to the ms
  nf_reference.py nfpcapd NFDUMP_JSON NF_JSON
                                          nfpcapd's records of the same capture:
                                          each is one of the NF's records of its
                                          flow, or several in a row (nfpcapd
                                          cuts on idle at most as often); DNS
                                          and ICMP, which nfpcapd reports a
                                          packet at a time, left out
  nf_reference.py ipfix FILE NF_JSON      an IPFIX file (RFC 5655) decoded
                                          here = the NF's records, reasons and
                                          ports included
"""
import calendar
import datetime
import ipaddress
import json
import os
import pickle
import struct
import sys
from collections import Counter, defaultdict

PORT_PROTOS = {6, 17, 33, 132, 136}     # TCP UDP DCCP SCTP UDP-Lite


# ---- Reading captures --------------------------------------------------------

def read_pcap(b):
    magic = b[:4]
    endian = {b"\xd4\xc3\xb2\xa1": ("<", 1000), b"\xa1\xb2\xc3\xd4": (">", 1000),
              b"\x4d\x3c\xb2\xa1": ("<", 1), b"\xa1\xb2\x3c\x4d": (">", 1)}[magic]
    e, mul = endian
    linktype = struct.unpack(e + "I", b[20:24])[0] & 0x0FFFFFFF
    off = 24
    while off + 16 <= len(b):
        sec, frac, incl, orig = struct.unpack(e + "IIII", b[off:off + 16])
        data = b[off + 16:off + 16 + incl]
        if len(data) < incl:
            raise ValueError("truncated packet")
        yield linktype, sec * 1_000_000_000 + frac * mul, data, orig
        off += 16 + incl
    if off != len(b):
        raise ValueError("truncated record header")


def read_pcapng(b):
    off = 0
    e = "<"
    ifaces = []
    while off + 12 <= len(b):
        if b[off:off + 4] == b"\x0a\x0d\x0d\x0a":
            e = "<" if b[off + 8:off + 12] == b"\x4d\x3c\x2b\x1a" else ">"
            ifaces = []
        btype, blen = struct.unpack(e + "II", b[off:off + 8])
        if blen < 12 or off + blen > len(b):
            raise ValueError("truncated block")
        body = b[off + 8:off + blen - 4]
        if btype == 1:                                   # interface description
            lt = struct.unpack(e + "H", body[0:2])[0]
            units = 10 ** 6                              # default: microseconds
            o = 8
            while o + 4 <= len(body):
                code, olen = struct.unpack(e + "HH", body[o:o + 4])
                if code == 0:
                    break
                if code == 9 and olen >= 1:              # if_tsresol
                    v = body[o + 4]
                    units = 10 ** (v & 0x7F) if not v & 0x80 else 2 ** (v & 0x7F)
                o += 4 + (olen + 3) // 4 * 4
            ifaces.append((lt, units))
        elif btype in (6, 2):                            # enhanced / obsolete packet
            if btype == 6:
                iface, hi, lo, incl, orig = struct.unpack(e + "IIIII", body[:20])
            else:
                iface, _drops, hi, lo, incl, orig = struct.unpack(e + "HHIIII", body[:20])
            lt, units = ifaces[iface]
            ts = (hi << 32) | lo                         # in 1/units s: exact ns
            yield lt, ts // units * 10 ** 9 + ts % units * 10 ** 9 // units, \
                body[20:20 + incl], orig
        elif btype == 3:                                 # simple packet: no timestamp
            orig = struct.unpack(e + "I", body[:4])[0]
            lt, _ = ifaces[0]
            yield lt, 0, body[4:4 + min(orig, len(body) - 4)], orig
        off += blen


def read_capture(path):
    b = open(path, "rb").read()
    if b[:4] == b"\x0a\x0d\x0d\x0a":
        return read_pcapng(b)
    return read_pcap(b)


# ---- Decoding ----------------------------------------------------------------

def ipv4(p, rec):
    if len(p) < 20 or p[0] >> 4 != 4 or (p[0] & 15) * 4 < 20:
        rec["kind"] = "malformed"
        return
    ihl = (p[0] & 15) * 4
    rec.update(kind="ipv4", proto=p[9], src=str(ipaddress.IPv4Address(p[12:16])),
               dst=str(ipaddress.IPv4Address(p[16:20])), iplen=struct.unpack(">H", p[2:4])[0])
    if struct.unpack(">H", p[6:8])[0] & 0x1FFF:
        rec["frag"] = True                       # a later fragment: no ports
    elif len(p) >= ihl:
        l4ports(p[ihl:], rec)
    else:
        rec["trunc"] = True


def l4ports(l4, rec):
    if rec["proto"] not in PORT_PROTOS:
        return
    if len(l4) < 4:
        rec["trunc"] = True
        return
    rec["sport"], rec["dport"] = struct.unpack(">HH", l4[:4])
    if rec["proto"] == 6 and len(l4) >= 14:
        rec["tcp_flags"] = l4[13]


def ipv6(p, rec):
    if len(p) < 40 or p[0] >> 4 != 6:
        rec["kind"] = "malformed"
        return
    rec["kind"] = "ipv6"
    rec["iplen"] = 40 + struct.unpack(">H", p[4:6])[0]
    nh, off = p[6], 40
    for _ in range(8):
        if nh in (0, 43, 60):
            if len(p) < off + 8:
                rec["trunc"] = True
                break
            nh, off = p[off], off + 8 + p[off + 1] * 8
        elif nh == 44:
            if len(p) < off + 8:
                rec["trunc"] = True
                break
            if struct.unpack(">H", p[off + 2:off + 4])[0] & 0xFFF8:
                rec["frag"] = True
            nh, off = p[off], off + 8
        else:
            break
    rec["proto"] = nh
    if not rec.get("frag") and not rec.get("trunc"):
        if len(p) < off:
            rec["trunc"] = True
        else:
            l4ports(p[off:], rec)
    rec["src"] = str(ipaddress.IPv6Address(p[8:24]))
    rec["dst"] = str(ipaddress.IPv6Address(p[24:40]))


def ip_any(p, rec):
    if not p:
        rec["kind"] = "malformed"
    elif p[0] >> 4 == 4:
        ipv4(p, rec)
    elif p[0] >> 4 == 6:
        ipv6(p, rec)
    else:
        rec["kind"] = "nonip"


def pppoe_session(p, rec):
    """RFC 2516 session header, then PPP's protocol (RFC 1661, maybe compressed)."""
    if len(p) < 7 or p[0] != 0x11:
        rec["kind"] = "malformed"
        return
    if p[6] & 1:
        proto, off = p[6], 7
    elif len(p) < 8:
        rec["kind"] = "malformed"
        return
    else:
        proto, off = struct.unpack(">H", p[6:8])[0], 8
    if proto == 0x0021:
        ipv4(p[off:], rec)
    elif proto == 0x0057:
        ipv6(p[off:], rec)
    else:
        rec["kind"] = "nonip"


def mpls(p, rec):
    """RFC 3032 label stack; explicit nulls name the payload, else its first nibble."""
    off = 0
    while True:
        if len(p) < off + 4:
            rec["kind"] = "malformed"
            return
        entry = struct.unpack(">I", p[off:off + 4])[0]
        off += 4
        if entry & 0x100:
            break
    label = entry >> 12
    if label == 0:
        ipv4(p[off:], rec)
    elif label == 2:
        ipv6(p[off:], rec)
    else:
        ip_any(p[off:], rec)


def by_ethertype(et, p, rec):
    if et == 0x0800:
        ipv4(p, rec)
    elif et == 0x86DD:
        ipv6(p, rec)
    elif et == 0x8864:
        pppoe_session(p, rec)
    elif et in (0x8847, 0x8848):
        mpls(p, rec)
    else:
        rec["kind"] = "nonip"


def decode(lt, p):
    rec = {"kind": None, "proto": 0, "sport": 0, "dport": 0}
    if lt in (12, 14, 101, 228, 229):                       # raw IP
        ip_any(p, rec)
    elif lt == 1:                                           # Ethernet
        if len(p) < 14:
            rec["kind"] = "malformed"
            return rec
        off = 12
        et = struct.unpack(">H", p[12:14])[0]
        while et in (0x8100, 0x88A8, 0x9100) and len(p) >= off + 6:
            off += 4
            et = struct.unpack(">H", p[off:off + 2])[0]
        if et in (0x8100, 0x88A8, 0x9100):
            rec["kind"] = "malformed"
        else:
            by_ethertype(et, p[off + 2:], rec)
    elif lt == 113:                                         # Linux SLL
        if len(p) < 16:
            rec["kind"] = "malformed"
        else:
            by_ethertype(struct.unpack(">H", p[14:16])[0], p[16:], rec)
    elif lt == 276:                                         # Linux SLL2
        if len(p) < 20:
            rec["kind"] = "malformed"
        else:
            by_ethertype(struct.unpack(">H", p[0:2])[0], p[20:], rec)
    elif lt in (0, 108):                                    # NULL / LOOP
        if len(p) < 4:
            rec["kind"] = "malformed"
            return rec
        le, be = struct.unpack("<I", p[:4])[0], struct.unpack(">I", p[:4])[0]
        af = le if le <= 0xFFFF else be
        if af == 2:
            ipv4(p[4:], rec)
        elif af in (10, 24, 28, 30):
            ipv6(p[4:], rec)
        else:
            rec["kind"] = "nonip"
    else:
        raise ValueError(f"link type {lt}")
    return rec


def decoded(path):
    """Totals, and the IP packets as (key, ts, bytes, TCP flags) in trace order."""
    tot = Counter()
    pkts = []
    first = last = None
    for lt, ts, data, orig in read_capture(path):
        r = decode(lt, data)
        tot["packets"] += 1
        tot["bytes"] += orig
        tot[r["kind"]] += 1
        first = ts if first is None else min(first, ts)
        last = ts if last is None else max(last, ts)
        if r["kind"] not in ("ipv4", "ipv6"):
            continue
        key = (r["kind"], r["src"], r["dst"], r["sport"], r["dport"], r["proto"])
        # A flow's bytes are IP bytes (the header's length), as IPFIX's
        # octetDeltaCount; the totals count the frames on the wire.
        pkts.append((key, ts, r["iplen"], r.get("tcp_flags", 0)))
    return {"packets": tot["packets"], "bytes": tot["bytes"], "ipv4": tot["ipv4"],
            "ipv6": tot["ipv6"], "nonip": tot["nonip"], "malformed": tot["malformed"],
            "first_ns": first or 0, "last_ns": last or 0}, pkts


def records(pkts, active_ns=0, idle_ns=0, end_ns=0):
    """The flow records, as rb2_flowtab.h cuts them: [(key, rec)] in the
    order they end; rec has packets, bytes, first_ns, last_ns, tcp_flags, end.
    At the end (the latest record time, end_ns), a record whose timeout has
    passed ends for it, the others are forced."""
    open_, out = {}, []
    for key, ts, size, flags in pkts:
        f = open_.get(key)
        if f is not None:
            di = f["last_ns"] + idle_ns if idle_ns else None
            da = f["first_ns"] + active_ns if active_ns else None
            due = min(x for x in (di, da, float("inf")) if x is not None)
            if ts >= due:
                f["end"] = "idle" if di is not None and di == due else "active"
                out.append((key, f))
                f = None
        if f is None:
            f = open_[key] = {"packets": 0, "bytes": 0, "first_ns": ts, "last_ns": ts,
                              "tcp_flags": 0}
        f["packets"] += 1
        f["bytes"] += size
        f["last_ns"] = ts      # as the NF: the last one seen, in trace order
        f["tcp_flags"] |= flags
        if key[5] == 6 and flags & 0x05:        # FIN or RST
            f["end"] = "end"
            out.append((key, f))
            del open_[key]
    for key, f in open_.items():
        idle = idle_ns and end_ns > f["last_ns"] and end_ns - f["last_ns"] >= idle_ns
        active = active_ns and end_ns > f["first_ns"] and end_ns - f["first_ns"] >= active_ns
        if idle and active:
            idle = f["last_ns"] + idle_ns <= f["first_ns"] + active_ns
        f["end"] = "idle" if idle else "active" if active else "forced"
        out.append((key, f))
    return out


def reference(path, active_ns=0, idle_ns=0):
    tot, pkts = decoded_kept(path)
    recs = records(pkts, active_ns, idle_ns, tot["last_ns"])
    return tot, recs


def decoded_kept(path):
    """decoded(), kept beside the trace (PATH.ref) for the next compare of
    the same trace, unchanged since: a test compares one trace with many
    runs, and decoding it here takes seconds."""
    st = os.stat(path)
    key, kept = (3, st.st_size, st.st_mtime_ns), path + ".ref"
    try:
        with open(kept, "rb") as f:
            k, val = pickle.load(f)
        if k == key:
            return val
    except (OSError, EOFError, ValueError, pickle.UnpicklingError):
        pass
    val = decoded(path)
    try:
        with open(kept, "wb") as f:
            pickle.dump((key, val), f)
    except OSError:
        pass                    # a read-only place: decode again next time
    return val


def nf_timeouts(nf):
    """The NF's timeouts (ns) from its JSON; None: off."""
    t = nf.get("timeouts_s") or {}
    return (int(round(t["active"] * 1e9)) if t.get("active") else 0,
            int(round(t["idle"] * 1e9)) if t.get("idle") else 0)


def compare(trace, nf_json):
    nf = json.load(open(nf_json))
    tot, recs = reference(trace, *nf_timeouts(nf))
    bad = []
    for k, v in tot.items():
        if nf["totals"].get(k) != v:
            bad.append(f"totals.{k}: NF {nf['totals'].get(k)}, reference {v}")
    if nf["totals"].get("bad_msgs", 0) or nf.get("unexported", 0):
        bad.append(f"NF lost records: {nf['totals']}")
    if nf["flows"] != len(recs):
        bad.append(f"flow records: NF {nf['flows']}, reference {len(recs)}")
    # Record for record: a flow's records told apart by their first packet.
    got = {}
    for f in nf["flow_list"]:
        key = (f["kind"], f["src"], f["dst"], f["sport"], f["dport"], f["proto"],
               f["first_ns"])
        got[key] = (f["packets"], f["bytes"], f["last_ns"], f["tcp_flags"], f["end"])
    for key, f in recs:
        vals = (f["packets"], f["bytes"], f["last_ns"], f["tcp_flags"])
        g = got.pop(key + (f["first_ns"],), None)
        # Shards: each ends the run at the latest record time it saw, which
        # may come before the trace's last: a record timed out by the end
        # of the trace may be forced there.
        ok_end = (f["end"],)
        if nf.get("shards", 1) > 1 and f["end"] in ("idle", "active"):
            ok_end = (f["end"], "forced")
        if g is None or g[:4] != vals or g[4] not in ok_end:
            bad.append(f"record {key} from {f['first_ns']}: NF {g}, reference {vals + (f['end'],)}")
    for key, g in list(got.items())[:10]:
        bad.append(f"record {key} only in the NF: {g}")
    return tot, len(recs), bad


# ---- Crafting captures -------------------------------------------------------

def ip4(src, dst, proto, payload, frag=0, ihl=5):
    h = struct.pack(">BBHHHBBH4s4s", 0x40 | ihl, 0, 20 + len(payload), 1, frag, 64, proto,
                    0, ipaddress.IPv4Address(src).packed, ipaddress.IPv4Address(dst).packed)
    return h + b"\0" * ((ihl - 5) * 4) + payload


def ip6(src, dst, nh, payload, ext=b""):
    return struct.pack(">IHBB16s16s", 0x60000000, len(ext) + len(payload), nh, 64,
                       ipaddress.IPv6Address(src).packed,
                       ipaddress.IPv6Address(dst).packed) + ext + payload


def l4(sport, dport, n=12):
    return struct.pack(">HH", sport, dport) + b"\xab" * n


def packets():
    """(ethertype, ip bytes) of every case the decoder must handle."""
    tcp, udp = 6, 17
    cases = []
    for i in range(40):                          # a few flows, repeated
        cases.append((0x0800, ip4(f"10.0.0.{i % 5}", "192.168.1.1", tcp, l4(1000 + i % 3, 80))))
        cases.append((0x86DD, ip6(f"2001:db8::{i % 4}", "2001:db8::ff", udp, l4(53, 5353 + i % 2))))
    cases += [
        (0x0800, ip4("10.1.1.1", "10.2.2.2", udp, l4(1, 2), frag=0x2000)),     # first fragment
        (0x0800, ip4("10.1.1.1", "10.2.2.2", udp, b"\x00" * 16, frag=0x0010)),  # later fragment
        (0x0800, ip4("10.1.1.1", "10.2.2.2", 1, b"\x08\x00" + b"\0" * 6)),     # ICMP: no ports
        (0x0800, ip4("10.3.3.3", "10.4.4.4", tcp, l4(7, 8), ihl=7)),           # IP options
        (0x0800, ip4("10.3.3.3", "10.4.4.4", tcp, b"")[:20]),                  # ports snapped
        (0x0800, b"\x45\x00\x00"),                                             # cut header
        (0x0800, b"\x65" + b"\0" * 30),                                        # wrong version
        (0x86DD, ip6("fe80::1", "fe80::2", 0, l4(9, 10), ext=bytes([6, 0]) + b"\0" * 6)),
        (0x86DD, ip6("fe80::1", "fe80::2", 44, b"\0" * 8,
                     ext=bytes([17, 0, 0, 0x11]) + b"\0" * 4)),                  # v6 later fragment
        (0x86DD, b"\x60" + b"\0" * 10),                                        # cut v6 header
        (0x0806, b"\x00\x01\x08\x00\x06\x04\x00\x01" + b"\0" * 20),             # ARP
    ]
    return cases


def write_pcap(path, lt, frames, nano=False, big=False):
    e = ">" if big else "<"
    magic = 0xA1B23C4D if nano else 0xA1B2C3D4
    with open(path, "wb") as f:
        f.write(struct.pack(e + "IHHiIII", magic, 2, 4, 0, 0, 65535, lt))
        for i, fr in enumerate(frames):
            wire = len(fr) + (i % 3) * 100       # as if snapped
            f.write(struct.pack(e + "IIII", 1700000000 + i // 7, (i * 1237) % 1000000,
                                len(fr), wire) + fr)


def write_pcapng(path, lt, frames):
    def block(t, body):
        body += b"\0" * (-len(body) % 4)
        return struct.pack("<II", t, len(body) + 12) + body + struct.pack("<I", len(body) + 12)
    with open(path, "wb") as f:
        f.write(block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1)))
        tsres = struct.pack("<HHB3x", 9, 1, 9) + struct.pack("<HH", 0, 0)   # ns resolution
        f.write(block(1, struct.pack("<HHI", lt, 0, 0) + tsres))
        for i, fr in enumerate(frames):
            ts = 1700000000_000000000 + i * 1234567
            f.write(block(6, struct.pack("<IIIII", 0, ts >> 32, ts & 0xFFFFFFFF, len(fr),
                                         len(fr) + 4) + fr))


ETH = b"\x02" * 6 + b"\x04" * 6


def pppoe(ppp_proto, p, session=0x1234):
    return struct.pack(">BBHHH", 0x11, 0, session, len(p) + 2, ppp_proto) + p


def pppoe_disc(code):
    tags = struct.pack(">HH", 0x0101, 0)                        # Service-Name, empty
    return struct.pack(">BBHH", 0x11, code, 0, len(tags)) + tags


def lcp(code=1):
    opts = struct.pack(">BBH", 1, 4, 1492)                       # MRU
    return struct.pack(">BBH", code, 7, 4 + len(opts)) + opts


def mpls_stack(labels, payload):
    out = b""
    for i, lab in enumerate(labels):
        out += struct.pack(">I", lab << 12 | (0x100 if i == len(labels) - 1 else 0) | 64)
    return out + payload


def access_core_frames(flows=24, seed=7):
    """A well-formed capture such as access and core links carry: PPPoE
    discovery and LCP/IPCP, PPPoE sessions (some over a VLAN) of IPv4 and
    IPv6, MPLS stacks of one to three labels (explicit nulls too), plain and
    tagged Ethernet, ARP, LLDP and STP. For checking against tshark."""
    frames = [ETH + struct.pack(">H", 0x8863) + pppoe_disc(c) for c in (0x09, 0x07, 0x19, 0x65)]
    frames += [ETH + struct.pack(">H", 0x8864) + pppoe(0xC021, lcp(c)) for c in (1, 2, 9, 10)]
    frames += [ETH + struct.pack(">H", 0x8864) + pppoe(0x8021, lcp(1))]
    x = seed
    for i in range(flows * 10):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        f = x % flows
        tcp = f % 3 != 0
        v4 = ip4(f"100.64.{f}.{f % 7 + 1}", f"198.51.100.{f % 5 + 1}", 6 if tcp else 17,
                 l4(20000 + f, 443 if tcp else 53, n=8 + f % 40))
        v6 = ip6(f"2001:db8:{f:x}::1", "2001:db8:ffff::53", 17, l4(30000 + f, 53))
        form = (x >> 8) % 7
        if form == 0:
            frames.append(ETH + struct.pack(">H", 0x8864) + pppoe(0x0021, v4))
        elif form == 1:
            frames.append(ETH + struct.pack(">HHH", 0x8100, 100 + f % 4, 0x8864) + pppoe(0x0021, v4))
        elif form == 2:
            frames.append(ETH + struct.pack(">H", 0x8864) + pppoe(0x0057, v6))
        elif form == 3:
            labels = [16 + f, 1000 + f, 2000][:1 + f % 3]
            frames.append(ETH + struct.pack(">H", 0x8847) + mpls_stack(labels, v4))
        elif form == 4:
            frames.append(ETH + struct.pack(">H", 0x8847) + mpls_stack([3000 + f, 2], v6))
        elif form == 5:
            frames.append(ETH + struct.pack(">HHH", 0x8100, 7, 0x0800) + v4)
        else:
            frames.append(ETH + struct.pack(">H", 0x0800) + v4)
        if i % 40 == 0:
            frames.append(ETH + struct.pack(">H", 0x0806) +
                          b"\x00\x01\x08\x00\x06\x04\x00\x01" + b"\x02" * 6 + b"\x0a\0\0\x01" +
                          b"\0" * 6 + b"\x0a\0\0\x02")
        if i % 55 == 0:
            frames.append(b"\x01\x80\xc2\x00\x00\x0e" + b"\x04" * 6 + struct.pack(">H", 0x88CC) +
                          bytes([2, 7, 4]) + b"\x04" * 6 + bytes([4, 7, 3]) + b"\x04" * 6 +
                          bytes([6, 2, 0, 120, 0, 0]))                        # LLDP
        if i % 70 == 0:
            bpdu = b"\x42\x42\x03" + b"\0" * 35
            frames.append(b"\x01\x80\xc2\x00\x00\x00" + b"\x04" * 6 +
                          struct.pack(">H", len(bpdu)) + bpdu)              # STP over LLC
    frames.append(ETH + struct.pack(">H", 0x8863) + pppoe_disc(0xA7))        # PADT
    return frames


def tshark_compare(trace, nf_json):
    """rb2-nf's kinds and IPv4 flows against tshark's own decoding."""
    import subprocess
    # The outer header's fields only (occurrence=f): an ICMP error carries the
    # packet it answers, whose addresses and ports tshark decodes too.
    out = subprocess.run(["tshark", "-n", "-r", trace, "-T", "fields", "-E", "separator=|",
                          "-E", "occurrence=f",
                          "-e", "ip.src", "-e", "ip.dst", "-e", "ip.proto",
                          "-e", "tcp.srcport", "-e", "tcp.dstport", "-e", "udp.srcport",
                          "-e", "udp.dstport", "-e", "ipv6.src"],
                         check=True, capture_output=True, text=True).stdout
    n4 = n6 = other = 0
    flows4 = Counter()
    for line in out.splitlines():
        src, dst, proto, ts, td, us, ud, src6 = line.split("|")
        if src:
            n4 += 1
            sp, dp = (ts, td) if proto == "6" else (us, ud) if proto == "17" else (0, 0)
            flows4[(src, dst, int(sp or 0), int(dp or 0), int(proto))] += 1
        elif src6:
            n6 += 1
        else:
            other += 1
    nf = json.load(open(nf_json))
    t = nf["totals"]
    bad = []
    for k, v in (("ipv4", n4), ("ipv6", n6), ("nonip", other), ("malformed", 0)):
        if t.get(k) != v:
            bad.append(f"{k}: rb2-nf {t.get(k)}, tshark {v}")
    # A flow may be in several records (FIN, RST, timeouts): add them up.
    got = Counter()
    for f in nf["flow_list"]:
        if f["kind"] == "ipv4":
            got[(f["src"], f["dst"], f["sport"], f["dport"], f["proto"])] += f["packets"]
    if got != flows4:
        bad.append(f"IPv4 flows: rb2-nf only {list((got - flows4).items())[:3]}, "
                   f"tshark only {list((flows4 - got).items())[:3]}")
    return {"ipv4": n4, "ipv6": n6, "nonip": other}, bad


# ---- What exporters send -----------------------------------------------------

def nf_records_ms(nf):
    """The NF's records keyed by flow and first millisecond."""
    out = {}
    for f in nf["flow_list"]:
        key = (str(ipaddress.ip_address(f["src"])), str(ipaddress.ip_address(f["dst"])),
               f["sport"], f["dport"], f["proto"], f["first_ns"] // 10**6)
        out[key] = {"packets": f["packets"], "bytes": f["bytes"],
                    "last_ms": f["last_ns"] // 10**6, "tcp_flags": f["tcp_flags"],
                    "in_port": f["in_port"], "end": f["end"]}
    return out


def diff_records(what, got, nf):
    bad = []
    for k, v in got.items():
        w = nf.pop(k, None)
        if w is None or any(w[x] != v[x] for x in v):
            bad.append(f"record {k}: {what} {v}, NF {w}")
    for k, w in list(nf.items())[:10]:
        bad.append(f"record {k}: only in the NF: {w}")
    return bad


def nfdump_compare(nfdump_json, nf_json):
    """A collector's records (nfdump -o json, TZ=UTC) against the NF's."""
    def ms(t):
        d = datetime.datetime.strptime(t, "%Y-%m-%dT%H:%M:%S.%f")
        return calendar.timegm(d.timetuple()) * 1000 + d.microsecond // 1000

    got = {}
    for r in json.load(open(nfdump_json)):
        if r.get("type") != "FLOW":
            continue
        src = r.get("src4_addr") or r.get("src6_addr")
        dst = r.get("dst4_addr") or r.get("dst6_addr")
        key = (str(ipaddress.ip_address(src)), str(ipaddress.ip_address(dst)),
               r["src_port"], r["dst_port"], r["proto"], ms(r["first"]))
        flags = sum(1 << (7 - i) for i, c in enumerate(r["tcp_flags"]) if c != ".")
        if key in got:
            return [f"record {key} twice at the collector"]
        got[key] = {"packets": r["in_packets"], "bytes": r["in_bytes"],
                    "last_ms": ms(r["last"]), "tcp_flags": flags}
        if "input_snmp" in r:          # an exporter's ingressInterface (nfpcapd has none)
            got[key]["in_port"] = r["input_snmp"]
    return diff_records("collector", got, nf_records_ms(json.load(open(nf_json))))


def nfpcapd_compare(nfdump_json, nf_json):
    """nfpcapd (nfdump 1.7) cuts a flow where its expiry run, every 10 s of
    packet time in whole seconds, finds it idle for more than the inactive
    timeout (or older than the active one), on FIN/RST as rb2 does, and
    reports every DNS (UDP port 53) and ICMP packet as a record of its own.
    With an active timeout longer than the capture, each of its records is
    then one rb2 record or several in a row of the same flow: this checks it,
    with the packets, IP bytes and first/last milliseconds adding up."""
    def ms(t):
        d = datetime.datetime.strptime(t, "%Y-%m-%dT%H:%M:%S.%f")
        return calendar.timegm(d.timetuple()) * 1000 + d.microsecond // 1000

    def skip(proto, sp, dp):
        return proto in (1, 58) or (proto == 17 and 53 in (sp, dp))

    theirs, ours = defaultdict(list), defaultdict(list)
    for r in json.load(open(nfdump_json)):
        if r.get("type") != "FLOW" or skip(r["proto"], r.get("src_port"), r.get("dst_port")):
            continue
        key = (str(ipaddress.ip_address(r.get("src4_addr") or r.get("src6_addr"))),
               str(ipaddress.ip_address(r.get("dst4_addr") or r.get("dst6_addr"))),
               r["src_port"], r["dst_port"], r["proto"])
        theirs[key].append((ms(r["first"]), ms(r["last"]), r["in_packets"], r["in_bytes"]))
    for f in json.load(open(nf_json))["flow_list"]:
        if skip(f["proto"], f["sport"], f["dport"]):
            continue
        key = (str(ipaddress.ip_address(f["src"])), str(ipaddress.ip_address(f["dst"])),
               f["sport"], f["dport"], f["proto"])
        ours[key].append((f["first_ns"] // 10**6, f["last_ns"] // 10**6, f["packets"], f["bytes"]))
    bad = []
    for key in set(theirs) | set(ours):
        t, o = sorted(theirs.get(key, [])), sorted(ours.get(key, []))
        j = 0
        for first, last, pk, by in t:
            if j >= len(o) or o[j][0] != first:
                bad.append(f"flow {key}: nfpcapd's record from {first} starts no rb2 record")
                break
            sp = sb = 0
            while j < len(o) and o[j][0] <= last:
                sp, sb, end = sp + o[j][2], sb + o[j][3], o[j][1]
                j += 1
            if (sp, sb, end) != (pk, by, last):
                bad.append(f"flow {key}: nfpcapd {(first, last, pk, by)}, rb2's records "
                           f"in it {(sp, sb, end)}")
                break
        else:
            if j != len(o):
                bad.append(f"flow {key}: rb2 records {o[j:][:3]} not in nfpcapd's")
    return sum(len(v) for v in theirs.values()), sum(len(v) for v in ours.values()), bad


REASONS = {1: "idle", 2: "active", 3: "end", 4: "forced", 5: "evicted"}


def ipfix_file(path):
    """Decode an IPFIX file (RFC 5655: messages back to back) from RFC 7011
    alone: any template of the elements rb2 sends, reduced sizes too."""
    b = open(path, "rb").read()
    templates, recs, off, seq_next, lost = {}, [], 0, None, 0
    while off < len(b):
        ver, length, _, seq, dom = struct.unpack(">HHIII", b[off:off + 16])
        if ver != 10 or length < 16 or off + length > len(b):
            raise ValueError(f"not an IPFIX message at byte {off}")
        if seq_next is not None and seq != seq_next:
            lost += (seq - seq_next) % 2**32
        n, o, end = 0, off + 16, off + length
        while o + 4 <= end:
            sid, sl = struct.unpack(">HH", b[o:o + 4])
            body, o = b[o + 4:o + sl], o + sl
            if sid == 2:
                i = 0
                while i + 4 <= len(body):
                    tid, nf = struct.unpack(">HH", body[i:i + 4])
                    i += 4
                    fields = []
                    for _ in range(nf):
                        ie, fl = struct.unpack(">HH", body[i:i + 4])
                        i += 4 + (4 if ie & 0x8000 else 0)
                        fields.append((ie & 0x7FFF, fl))
                    templates[(dom, tid)] = fields
            elif sid >= 256 and (dom, sid) in templates:
                fields = templates[(dom, sid)]
                size = sum(fl for _, fl in fields)
                for j in range(0, len(body) - size + 1, size):
                    r, k = {}, j
                    for ie, fl in fields:
                        v = body[k:k + fl]
                        k += fl
                        r[ie] = v if ie in (8, 12, 27, 28) else int.from_bytes(v, "big")
                    recs.append(r)
                    n += 1
        seq_next = (seq + n) % 2**32
        off += length
    return recs, lost


def ipfix_compare(path, nf_json):
    recs, lost = ipfix_file(path)
    got = {}
    for r in recs:
        src = ipaddress.ip_address(r.get(8) or r.get(27))
        dst = ipaddress.ip_address(r.get(12) or r.get(28))
        key = (str(src), str(dst), r[7], r[11], r[4], r[152])
        got[key] = {"packets": r[2], "bytes": r[1], "last_ms": r[153], "tcp_flags": r[6],
                    "in_port": r[10], "end": REASONS.get(r[136], r[136])}
    bad = diff_records("IPFIX file", got, nf_records_ms(json.load(open(nf_json))))
    if lost:
        bad.append(f"sequence numbers skip {lost} records")
    return len(recs), bad


def craft(d):
    os.makedirs(d, exist_ok=True)
    cases = packets()
    eth = [ETH + struct.pack(">H", et) + p for et, p in cases]
    vlan = [b"\x02" * 12 + struct.pack(">HHHH", 0x88A8, 10, 0x8100, 20) +
            struct.pack(">H", et) + p for et, p in cases]
    sll = [struct.pack(">HHH8sH", 0, 1, 6, b"\x02" * 8, et) + p for et, p in cases]
    sll2 = [struct.pack(">HHIHBB8s", et, 0, 1, 1, 0, 6, b"\x02" * 8) + p for et, p in cases]
    null = [struct.pack("<I", 2 if et == 0x0800 else 30 if et == 0x86DD else 99) + p
            for et, p in cases]
    loop = [struct.pack(">I", 2 if et == 0x0800 else 24 if et == 0x86DD else 99) + p
            for et, p in cases]
    raw = [p for et, p in cases if et != 0x0806]
    # Access links: every case in a PPPoE session (ARP's place taken by
    # discovery and LCP), one with PPP's compressed protocol, one cut short.
    ppp = [ETH + struct.pack(">H", 0x8864) + pppoe(0x0021 if et == 0x0800 else 0x0057, p)
           for et, p in cases if et != 0x0806]
    ppp += [ETH + struct.pack(">H", 0x8863) + pppoe_disc(0x09),
            ETH + struct.pack(">H", 0x8864) + pppoe(0xC021, lcp()),
            ETH + struct.pack(">H", 0x8864) + struct.pack(">BBHHB", 0x11, 0, 1, 21, 0x21) +
            cases[0][1],
            ETH + struct.pack(">H", 0x8864) + b"\x11\x00\x12"]
    # Core links: one to three MPLS labels, explicit nulls, a pseudowire
    # (not IP), a stack cut short.
    mp = [ETH + struct.pack(">H", 0x8847) +
          mpls_stack(([0] if et == 0x0800 else [2]) if i % 4 == 0 else [100 + i, 200][:1 + i % 2], p)
          for i, (et, p) in enumerate(cases) if et != 0x0806]
    mp += [ETH + struct.pack(">H", 0x8847) + mpls_stack([300], b"\0\0\0\0" + ETH + b"\x08\x00"),
           ETH + struct.pack(">H", 0x8848) + struct.pack(">I", 100 << 12)]
    out = {"ethernet.pcap": (1, eth), "vlan-qinq.pcap": (1, vlan), "sll.pcap": (113, sll),
           "sll2.pcap": (276, sll2), "null.pcap": (0, null), "loop.pcap": (108, loop),
           "raw.pcap": (101, raw), "pppoe.pcap": (1, ppp), "mpls.pcap": (1, mp),
           "access-core.pcap": (1, access_core_frames())}
    for name, (lt, frames) in out.items():
        write_pcap(os.path.join(d, name), lt, frames)
    write_pcap(os.path.join(d, "raw-nano-be.pcap"), 101, raw, nano=True, big=True)
    write_pcapng(os.path.join(d, "ethernet.pcapng"), 1, eth)
    print(" ".join(sorted(list(out) + ["raw-nano-be.pcap", "ethernet.pcapng"])))


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "compare":
        tot, nflows, bad = compare(sys.argv[2], sys.argv[3])
        print(f"{os.path.basename(sys.argv[2])}: {tot['packets']} packets, {nflows} flow records, "
              f"{tot['ipv4']} IPv4 / {tot['ipv6']} IPv6 / {tot['nonip']} non-IP / "
              f"{tot['malformed']} malformed: {'MATCH' if not bad else 'DIFFERENT'}")
        for b in bad[:20]:
            print("  " + b)
        sys.exit(1 if bad else 0)
    if len(sys.argv) == 3 and sys.argv[1] == "summary":
        tot, recs = reference(sys.argv[2], 300 * 10**9, 60 * 10**9)
        print(json.dumps({"totals": tot, "flows": len(recs)}))
        return
    if len(sys.argv) == 4 and sys.argv[1] == "tshark":
        got, bad = tshark_compare(sys.argv[2], sys.argv[3])
        print(f"{os.path.basename(sys.argv[2])}: tshark decodes {got['ipv4']} IPv4 / "
              f"{got['ipv6']} IPv6 / {got['nonip']} other: "
              f"{'rb2-nf MATCHES' if not bad else 'rb2-nf DIFFERS'}")
        for b in bad[:20]:
            print("  " + b)
        sys.exit(1 if bad else 0)
    if len(sys.argv) == 4 and sys.argv[1] == "nfdump":
        bad = nfdump_compare(sys.argv[2], sys.argv[3])
        print(f"collector: {'the NF records, each' if not bad else 'DIFFERENT'}")
        for b in bad[:20]:
            print("  " + b)
        sys.exit(1 if bad else 0)
    if len(sys.argv) == 4 and sys.argv[1] == "nfpcapd":
        n_t, n_o, bad = nfpcapd_compare(sys.argv[2], sys.argv[3])
        print(f"nfpcapd {n_t} records, rb2 {n_o} (DNS and ICMP left out): "
              f"{'each of nfpcapd is rb2 records in a row' if not bad else 'DIFFERENT'}")
        for b in bad[:20]:
            print("  " + b)
        sys.exit(1 if bad else 0)
    if len(sys.argv) == 4 and sys.argv[1] == "ipfix":
        n, bad = ipfix_compare(sys.argv[2], sys.argv[3])
        print(f"{os.path.basename(sys.argv[2])}: {n} IPFIX records: "
              f"{'the NF records, each' if not bad else 'DIFFERENT'}")
        for b in bad[:20]:
            print("  " + b)
        sys.exit(1 if bad else 0)
    if len(sys.argv) == 3 and sys.argv[1] == "craft":
        craft(sys.argv[2])
        return
    print(__doc__, file=sys.stderr)
    sys.exit(2)


if __name__ == "__main__":
    main()
