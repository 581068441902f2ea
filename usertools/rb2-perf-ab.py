#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
"""Before/after comparison of a fast-path change: rb2-perf from two build
trees, run alternately in one session (A B A B ...), so that the machine's
drift (vCPUs moving between near and far host cores) hits both alike.

  usertools/rb2-perf-ab.py OLD_BUILD NEW_BUILD [--runs N] [--set NAME=ARGS]...
  usertools/rb2-perf-ab.py OLD_BUILD NEW_BUILD --callgrind
  usertools/rb2-perf-ab.py OLD_BUILD NEW_BUILD --kv 1,16 [--runs N]

--callgrind counts instead of timing: rb2-perf --mode ops (both halves in
turns on one lcore) under valgrind's callgrind, instructions per message of
the measured loop only, for every design on both shm modes. The counts
repeat exactly from run to run, so one run each settles whether a change
made the code do more work. The build trees must not use -march=native
(valgrind lacks AVX-512): configure them with -Dcpu_instruction_set=x86-64-v3.

--kv DEPTHS runs the connection layer's case instead: rb2-kv's bench (YCSB-C,
2000 records, 300,000 operations, 3 rounds) with --designs rb2,l5 at each
depth, the builds alternating. Each run's figure is its own rb2/l5, L5's ring
pairs in the same process and minute, so a pair of runs compares the builds
where the machine's drift moves both alike. Prints, per depth, each build's
median rb2/l5 and quartiles, the median over the pairs of new/old with the
number of pairs the new build won, and the quartiles of L5's p50 round trip
(from the first run of each pair), which tell where the vCPUs sat.

Each set is one rb2-perf argument list (after '--'); the defaults are the
issue-tracker's checks of the channel's fast path: --compare at 64 and 40 B
and --designs rb2,farm,l5,socksdirect at 64 B. Prints one JSON object: for
every set and variant, each build's median over its runs (of rb2-perf's own
per-run medians) and the ratio new/old. Where a set runs DPDK's rte_ring in
the same process (--compare), each run is also divided by that run's
rte_ring zero-copy rate, which neither build changes: the ratio of those
("new_over_old_vs_ring") is the figure that drift does not move.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

DEFAULT_SETS = {
    "compare64": "--mode bw --size 64 --compare --rounds 3 --count 3000000",
    "compare40": "--mode bw --size 40 --compare --rounds 3 --count 3000000",
    "presets64": "--mode bw --size 64 --designs rb2:fixed,farm,l5:fixed,socksdirect:fixed "
                 "--rounds 3 --count 1000000",
}


def run(build, args, out):
    perf = os.path.join(build, "apps", "rb2-perf", "rb2-perf")
    cmd = [perf, "-l", "0-1", "--no-pci", "--no-huge", "-m", "512",
           "--file-prefix", "rb2ab%d" % os.getpid(), "--log-level=lib.eal:error",
           "--"] + args.split() + ["--json", out]
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit("rb2-perf failed (%s): %s\n%s" % (build, " ".join(cmd), r.stderr))
    with open(out) as f:
        return {v["name"]: v["median_mmsg_s"] for v in json.load(f)["variants"]}


CG_PRESETS = ["rb2", "rb2:fixed", "l5", "l5:fixed", "farm", "socksdirect",
              "socksdirect:fixed", "pull+wt"]
CG_COUNT = 200000


def callgrind(build, transport, preset, tmp):
    perf = os.path.join(build, "apps", "rb2-perf", "rb2-perf")
    out = os.path.join(tmp, "cg.out")
    cmd = ["valgrind", "--tool=callgrind", "--toggle-collect=perf_ops_loop",
           "--callgrind-out-file=" + out, perf, "-l", "0", "--no-pci", "--no-huge", "-m", "256",
           "--file-prefix", "rb2cg%d" % os.getpid(), "--log-level=lib.eal:error", "--",
           "--mode", "ops", "--transport", transport, "--count", str(CG_COUNT),
           "--designs", preset]
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit("callgrind run failed (%s): %s\n%s" % (build, " ".join(cmd), r.stderr[-2000:]))
    with open(out) as f:
        for line in f:
            if line.startswith("summary:"):
                return int(line.split()[1]) / CG_COUNT
    sys.exit("no summary in " + out)


def kv_run(build, depth):
    """rb2-kv's bench of rb2 against L5 at @depth: that run's rb2/l5, and
    L5's p50 round trip in µs, which tells the vCPUs' placement."""
    kv = os.path.join(build, "apps", "rb2-kv", "rb2-kv")
    cmd = [kv, "-l", "0-1", "--no-pci", "--no-huge", "-m", "1024",
           "--file-prefix", "rb2ab%d" % os.getpid(), "--log-level=lib.*:error", "--",
           "bench", "--records", "2000", "--operations", "300000", "--rounds", "3",
           "--depth", str(depth), "--designs", "rb2,l5", "--quiet"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("rb2-kv failed (%s): %s\n%s" % (build, " ".join(cmd), r.stderr[-2000:]))
    j = json.loads(r.stdout)
    return j["ratios"]["rb2/l5"], j["designs"]["l5"]["median_p50_us"]


def quartiles(xs):
    xs = sorted(xs)
    return [round(xs[len(xs) // 4], 3), round(xs[(3 * len(xs)) // 4], 3)]


def main_kv(o):
    out = {"old": os.path.abspath(o.old), "new": os.path.abspath(o.new), "runs": o.runs,
           "measure": "rb2-kv bench --records 2000 --operations 300000 --rounds 3 "
                      "--designs rb2,l5: each run's rb2/l5", "depths": {}}
    for depth in (int(d) for d in o.kv.split(",")):
        pairs = []
        for i in range(o.runs):
            print("rb2-kv depth %d: pair %d/%d" % (depth, i + 1, o.runs), file=sys.stderr)
            if i % 2 == 0:
                old, p50 = kv_run(o.old, depth)
                new, _ = kv_run(o.new, depth)
            else:
                new, p50 = kv_run(o.new, depth)
                old, _ = kv_run(o.old, depth)
            pairs.append((old, new, p50))
        olds = [p[0] for p in pairs]
        news = [p[1] for p in pairs]
        out["depths"][str(depth)] = {
            "old_rb2_over_l5": round(statistics.median(olds), 3),
            "old_quartiles": quartiles(olds),
            "new_rb2_over_l5": round(statistics.median(news), 3),
            "new_quartiles": quartiles(news),
            "new_over_old": round(statistics.median(n / p for p, n, _ in pairs), 3),
            "pairs_new_higher": sum(1 for p, n, _ in pairs if n > p),
            "l5_p50_us_quartiles": quartiles([p[2] for p in pairs])}
        if o.raw:
            out["depths"][str(depth)]["raw"] = pairs
    print(json.dumps(out, indent=1))


def main_callgrind(o):
    out = {"old": os.path.abspath(o.old), "new": os.path.abspath(o.new),
           "measure": "instructions per message, rb2-perf --mode ops under callgrind",
           "messages": CG_COUNT, "variants": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for transport in ("shm,mode=loadstore", "shm,mode=copy"):
            for preset in CG_PRESETS:
                name = transport.split("=")[1] + " " + preset
                print("callgrind: " + name, file=sys.stderr)
                old = callgrind(o.old, transport, preset, tmp)
                new = callgrind(o.new, transport, preset, tmp)
                out["variants"][name] = {"old_ir_per_msg": round(old, 2),
                                         "new_ir_per_msg": round(new, 2),
                                         "new_over_old": round(new / old, 4)}
    print(json.dumps(out, indent=1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--runs", type=int, default=5, help="runs of each build per set")
    ap.add_argument("--set", action="append", default=[],
                    help="NAME=ARGS: an rb2-perf argument set (replaces the defaults)")
    ap.add_argument("--raw", action="store_true", help="also print every run's figures")
    ap.add_argument("--callgrind", action="store_true",
                    help="count instructions per message instead (see above)")
    ap.add_argument("--kv", metavar="DEPTHS",
                    help="rb2-kv's rb2/l5 at these outstanding depths instead (see above)")
    o = ap.parse_args()
    if o.kv:
        return main_kv(o)
    if o.callgrind:
        return main_callgrind(o)
    sets = dict(s.split("=", 1) for s in o.set) if o.set else DEFAULT_SETS
    out = {"old": os.path.abspath(o.old), "new": os.path.abspath(o.new), "runs": o.runs,
           "sets": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for name, args in sets.items():
            res = {"old": [], "new": []}
            for i in range(o.runs):
                for which in ("old", "new") if i % 2 == 0 else ("new", "old"):
                    print("%s: %s run %d/%d" % (name, which, i + 1, o.runs), file=sys.stderr)
                    res[which].append(run(getattr(o, which), args, os.path.join(tmp, "r.json")))
            variants = {}
            for v in res["old"][0]:
                old = statistics.median(r[v] for r in res["old"])
                new = statistics.median(r[v] for r in res["new"])
                variants[v] = {"old_mmsg_s": round(old, 3), "new_mmsg_s": round(new, 3),
                               "new_over_old": round(new / old, 3) if old else None}
                if "ring-zc" in res["old"][0] and v != "ring-zc":
                    old_n = statistics.median(r[v] / r["ring-zc"] for r in res["old"])
                    new_n = statistics.median(r[v] / r["ring-zc"] for r in res["new"])
                    variants[v]["old_vs_ring"] = round(old_n, 3)
                    variants[v]["new_vs_ring"] = round(new_n, 3)
                    variants[v]["new_over_old_vs_ring"] = round(new_n / old_n, 3)
            out["sets"][name] = {"args": args, "variants": variants}
            if o.raw:
                out["sets"][name]["raw"] = res
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
