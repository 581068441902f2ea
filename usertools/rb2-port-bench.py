#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
"""The port layer's benchmark: the measurement NF fed from net_null.

  rx (lcore 0, net_null0) --[link of mbuf pointers]--> parse -> measure (lcore 1)

In interleaved rounds of one run (this machine's throughput swings; only
ratios within a run mean anything), each variant once per round:
  rb2         the link is an RB2 channel over shm carrying mbuf pointers,
              each in a descriptor (the mbuf, its data address, lengths,
              port, receive time, and its pool if it is plain), so that
              parse's lcore never reads an mbuf header and puts plain mbufs
              back in their pool without reading them
  rte_ring    the same stages joined by DPDK's rte_ring (SP/SC) of mbuf
              pointers instead: the baseline the RB2 channel must match
  rte_ring_desc  an rte_ring of the same 40-byte descriptors (carry =
              descriptors): the same idea on DPDK's ring, to tell what the
              ring is worth from what the descriptor is
  rb2_nocache the RB2 variant with a pool without per-lcore caches: what the
              mempool cache is worth here
  nf_port     config/nf-port.ini's placement instead: rx -> parse on lcore 0,
              the records over an RB2 channel to measure on lcore 1
  one_lcore   rx -> parse -> measure all on lcore 1, run to completion (no
              channel): one forwarding lcore, as testpmd's
  two_queues  two RX queues, each lcore running rx -> parse -> measure of its
              own queue to completion (no channel): one_lcore scaled out
  two_cross   two RX queues, each lcore running rx -> parse of its own queue
              and the measure of the other's, the records crossing over RB2
              channels both ways: both lcores busy, every record on a channel
  two_ports   two_queues with a net_null port per lcore instead of two queues
              of one (two queues of one net_null port cost each rx 5-6 more
              cycles per packet: net_null keeps its queues' counters side by
              side, so both lcores add to one cache line every burst)
  testpmd     dpdk-testpmd's io forwarding on one net_null port (loop
              topology, one forwarding lcore): the packet-rate ceiling of the
              port layer on this machine

Both links hold the same number of packets (4096). Prints one JSON object:
every round's Mpps per variant, medians, the ratios rb2/rte_ring,
rb2/rte_ring_desc and rb2/testpmd (per round, then their median), and cycles per packet of each
stage (rx's include waiting for room when the consumer is slower).

  usertools/rb2-port-bench.py [--build DIR] [--rounds N] [--packets N] [--seconds S]
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

CONFIG = """
[pipeline]
burst = 32
[stage rx]
type = rx
lcore = 0
port = net_null0
count = {packets}
pool_size = 16383
pool_cache = {cache}
[stage parse]
type = parse
lcore = 1
batch = 32
[stage measure]
type = measure
lcore = 1
top = 0
flows = 1k
[link pkts]
from = rx.out
to = parse
{link}
[link records]
from = parse.out
to = measure
"""

# Equal capacity in packets: 128 messages of 32 descriptors (40 bytes each),
# or 4096 ring elements.
LINKS = {
    "rb2": "slots = 128\nslot_size = 1280\nalpha = 4\nbeta = 4\ngamma = 4",
    "rte_ring": "via = rte_ring\nslots = 4096",
    "rte_ring_desc": "via = rte_ring\ncarry = descriptors\nslots = 4096",
}

# The placements whose packets or records cross an RB² channel between the
# two lcores, as the pipeline does; one_lcore, two_queues and
# two_ports run each lcore's stages to completion, with no channel.
CHANNEL_PLACEMENTS = ["rb2", "nf_port", "two_cross"]


# Two RX queues of net_null0 (a pipeline configures one per rx stage), half
# the packets each; {m0} and {m1}: the lcores of the two measure stages.
TWO_QUEUES = """
[pipeline]
burst = 32
""" + "".join(f"""
[stage rx{q}]
type = rx
lcore = {q}
port = net_null0
count = {{half}}
pool_size = 16383
pool_cache = 256
[stage parse{q}]
type = parse
lcore = {q}
batch = 32
[stage measure{q}]
type = measure
lcore = {{m{q}}}
top = 0
flows = 1k
[link pkts{q}]
from = rx{q}.out
to = parse{q}
[link records{q}]
from = parse{q}.out
to = measure{q}
""" for q in (0, 1))


def mem_args():
    try:
        free = int(re.search(r"HugePages_Free:\s+(\d+)", open("/proc/meminfo").read()).group(1))
    except (OSError, AttributeError):
        free = 0
    # --huge-unlink: no hugepage file outlives the run (a leftover keeps
    # its pages from everyone else).
    return ["-m", "512", "--huge-unlink"] if free >= 512 else ["--no-huge", "-m", "1024"]


def run_nf(build, variant, packets, tmp, n):
    link = LINKS[variant if variant in LINKS else "rb2"]
    cfg = os.path.join(tmp, f"{variant}.ini")
    text = CONFIG.format(packets=packets, cache=0 if variant == "rb2_nocache" else 256, link=link)
    vdevs = ["--vdev", "net_null0"]
    if variant in ("two_queues", "two_cross", "two_ports"):
        packets -= packets % 2
        cross = variant == "two_cross"
        text = TWO_QUEUES.format(half=packets // 2, m0=int(cross), m1=int(not cross))
    if variant == "two_ports":
        i = text.index("[stage rx1]")
        text = text[:i] + text[i:].replace("port = net_null0", "port = net_null1", 1)
        vdevs += ["--vdev", "net_null1"]
    if variant == "nf_port":
        text = text.replace("[stage parse]\ntype = parse\nlcore = 1",
                            "[stage parse]\ntype = parse\nlcore = 0")
    if variant == "one_lcore":
        text = text.replace("[stage rx]\ntype = rx\nlcore = 0", "[stage rx]\ntype = rx\nlcore = 1")
    with open(cfg, "w") as f:
        f.write(text)
    st = os.path.join(tmp, f"{variant}-{n}.json")
    cmd = [os.path.join(build, "apps/rb2-nf/rb2-nf"), "-l", "0-1", "--no-pci",
           "--file-prefix", f"rb2pb-{os.getpid()}-{n}", "--log-level=lib.eal:warning",
           *vdevs] + mem_args() + ["--", "--config", cfg, "--stats-json", st]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        sys.exit(f"rb2-port-bench: {variant}: rb2-nf failed:\n{p.stderr}")
    d = json.load(open(st))
    # Counters and cycles by stage type, over every queue's stages.
    total = lambda typ, key: sum(s["counters"][key] if key else s["cycles"]
                                 for s in d["stages"] if s["type"] == typ)
    got, measured = total("rx", "received"), total("measure", "records")
    if got != packets or measured != packets:
        sys.exit(f"rb2-port-bench: {variant}: {got} received, {measured} measured, "
                 f"of {packets}")
    return {"mpps": packets / d["seconds"] / 1e6,
            "cycles_per_packet": {t: total(t, None) / packets
                                  for t in ("rx", "parse", "measure")}}


def dpdk_runtime_dir(prefix):
    """Where the EAL keeps a process's runtime files (its config, its IPC
    socket): testpmd leaves them behind, so the bench removes them."""
    base = "/var/run" if os.getuid() == 0 else os.environ.get("XDG_RUNTIME_DIR", "/tmp")
    return os.path.join(base, "dpdk", prefix)


def run_testpmd(seconds, n):
    prefix = f"rb2pb-tp-{os.getpid()}-{n}"
    cmd = ["dpdk-testpmd", "-l", "0-1", "--no-pci", "--file-prefix",
           prefix, "--log-level=lib.eal:warning", "--vdev", "net_null0"] + \
        mem_args() + ["--", "-i", "--forward-mode=io", "--nb-cores=1", "--port-topology=loop",
                      "--total-num-mbufs=16384"]
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    # start, then two "show port stats": the second's Rx-pps covers
    # exactly the seconds between them.
    script = ["start", "show port stats all", None, "show port stats all", "stop", "quit"]
    for line in script:
        if line is None:
            time.sleep(seconds)
            continue
        p.stdin.write(line + "\n")
        p.stdin.flush()
        time.sleep(1 if line == "start" else 0.2)
    out, _ = p.communicate(timeout=60)
    shutil.rmtree(dpdk_runtime_dir(prefix), ignore_errors=True)
    pps = [int(x) for x in re.findall(r"Rx-pps:\s+(\d+)", out)]
    if len(pps) < 2:
        sys.exit(f"rb2-port-bench: testpmd gave no rate:\n{out[-2000:]}")
    return {"mpps": pps[-1] / 1e6}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--build", default=os.path.join(top, "build"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--packets", type=int, default=20_000_000)
    ap.add_argument("--seconds", type=float, default=3, help="testpmd's measured span")
    ap.add_argument("--quick", action="store_true", help="rb2, rte_ring and rte_ring_desc only")
    a = ap.parse_args()
    placements = ["rb2", "nf_port", "one_lcore", "two_queues", "two_cross", "two_ports"]
    variants = ["rb2", "rte_ring", "rte_ring_desc"]
    if not a.quick:
        variants += ["rb2_nocache", "nf_port", "one_lcore", "two_queues", "two_cross",
                     "two_ports", "testpmd"]
    rounds = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            order = variants[r % len(variants):] + variants[:r % len(variants)]
            res = {}
            for v in order:
                res[v] = run_testpmd(a.seconds, r) if v == "testpmd" else \
                    run_nf(a.build, v, a.packets, tmp, r)
                print(f"round {r + 1}/{a.rounds} {v}: {res[v]['mpps']:.2f} Mpps", file=sys.stderr)
            rounds.append(res)
    med = {v: statistics.median(r[v]["mpps"] for r in rounds) for v in variants}
    ratio = lambda x, y: statistics.median(r[x]["mpps"] / r[y]["mpps"] for r in rounds)
    if a.quick:
        print(json.dumps({"packets": a.packets, "rounds": a.rounds, "mpps_median": med,
                          "rb2_over_rte_ring": ratio("rb2", "rte_ring"),
                          "rb2_over_rte_ring_desc": ratio("rb2", "rte_ring_desc"),
                          "per_round": [{v: round(r[v]["mpps"], 3) for v in variants}
                                        for r in rounds]}, indent=1))
        return
    cyc = {v: {k: statistics.median(r[v]["cycles_per_packet"][k] for r in rounds)
               for k in ("rx", "parse", "measure")}
           for v in ("rte_ring", "rte_ring_desc", "rb2_nocache", *placements)}
    out = {
        "packets": a.packets, "rounds": a.rounds,
        "mpps_median": med,
        "rb2_over_rte_ring": ratio("rb2", "rte_ring"),
        "rb2_over_rte_ring_desc": ratio("rb2", "rte_ring_desc"),
        "rb2_over_testpmd_io": ratio("rb2", "testpmd"),
        "nf_port_over_testpmd_io": ratio("nf_port", "testpmd"),
        "one_lcore_over_testpmd_io": ratio("one_lcore", "testpmd"),
        "two_queues_over_testpmd_io": ratio("two_queues", "testpmd"),
        "two_cross_over_testpmd_io": ratio("two_cross", "testpmd"),
        "two_ports_over_testpmd_io": ratio("two_ports", "testpmd"),
        "mempool_cache_gain": ratio("rb2", "rb2_nocache"),
        "cycles_per_packet_median": cyc,
        # The pipeline has an RB² channel between two lcores
        # (rx -> parse -> channel -> measure): the placements with one are
        # judged apart from those that run each lcore to completion.
        "targets": {"rb2_over_rte_ring >= 1.0": ratio("rb2", "rte_ring") >= 1.0,
                    "best NF placement with an RB2 channel over testpmd_io >= 0.66":
                        max(ratio(v, "testpmd") for v in CHANNEL_PLACEMENTS) >= 0.66,
                    "best NF placement of any kind over testpmd_io >= 0.66":
                        max(ratio(v, "testpmd") for v in placements) >= 0.66},
        "per_round": [{v: round(r[v]["mpps"], 3) for v in variants} for r in rounds],
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
