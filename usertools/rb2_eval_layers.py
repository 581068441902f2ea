# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
"""rb2-eval.py's experiments beyond the paper's figures: one per layer, each
run by that layer's own benchmark, variants interleaved in rounds of one run
(this machine's rates swing; only ratios within a run mean anything).

  conn     the connection layer (rb2-connperf): connections over one channel
           pair against a pair each (RaaS's Fig. 6) and against a bare
           channel, throughput and the 64 B round trip
  service  the host service (rb2-raasbench through rb2-raasd): large messages
           lent against copied, per size (RaaS's copy/register threshold);
           DPDK multi-process, so hugepages are needed
  nf-rate  the measurement NF's record rate on its default pipeline (replay ->
           RB2 channel over shm -> measure) from a generated CAIDA-like trace,
           preloaded
  nf-monitor  rb2-nf as a flow monitor (application layer), whole processes
           timed on one capture (rb2-nf streams it, as a user's run does):
           rb2-nf with its timeouts and IPFIX export
           (to a file) against the same without them, with two measure
           shards, and against nfdump's nfpcapd and softflowd with the same
           timeouts; and the flow table alone against rte_hash
           (rb2-flowbench): cycles per record and memory per flow
  port     the port layer: the NF fed from net_null, its link an RB2 channel
           of mbuf descriptors against rte_ring, the placements of its
           stages, and dpdk-testpmd's io forwarding as the ceiling

Each writes rows for its CSV and the figures of its verdicts into results.json,
and layers.md puts them next to the targets the project holds them to.

The port experiment's variants, each once per round:
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
Both links hold the same number of packets (4096).
"""
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
        raise RuntimeError(f"port {variant}: rb2-nf failed: {' '.join(cmd)}\n{p.stderr[-2000:]}")
    d = json.load(open(st))
    # Counters and cycles by stage type, over every queue's stages.
    total = lambda typ, key: sum(s["counters"][key] if key else s["cycles"]
                                 for s in d["stages"] if s["type"] == typ)
    got, measured = total("rx", "received"), total("measure", "records")
    if got != packets or measured != packets:
        raise RuntimeError(f"port {variant}: {got} received, {measured} measured, "
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
        raise RuntimeError(f"port testpmd: no rate:\n{out[-2000:]}")
    return {"mpps": pps[-1] / 1e6}


def port(r, o, res):
    """The port layer (see above): o.port_packets packets a run."""
    placements = ["rb2", "nf_port", "one_lcore", "two_queues", "two_cross", "two_ports"]
    variants = ["rb2", "rte_ring", "rte_ring_desc"]
    if not o.quick:
        variants += ["rb2_nocache", "nf_port", "one_lcore", "two_queues", "two_cross",
                     "two_ports", "testpmd"]
    build = os.path.dirname(os.path.dirname(os.path.dirname(r.perf)))
    rounds = []
    for n in range(o.layer_rounds):
        # Each round starts one variant later: none always runs first.
        order = variants[n % len(variants):] + variants[:n % len(variants)]
        got = {}
        for v in order:
            r.log.append(f"port {v}, round {n + 1}")
            got[v] = run_testpmd(o.testpmd_seconds, n) if v == "testpmd" else \
                run_nf(build, v, o.port_packets, r.tmp, n)
            progress(f"port round {n + 1}/{o.layer_rounds} {v}: {got[v]['mpps']:.2f} Mpps")
        rounds.append(got)
    med = {v: statistics.median(x[v]["mpps"] for x in rounds) for v in variants}
    ratio = lambda a, b: statistics.median(x[a]["mpps"] / x[b]["mpps"] for x in rounds)
    out = {"packets": o.port_packets, "rounds": o.layer_rounds, "mpps_median": med,
           "rb2_over_rte_ring": ratio("rb2", "rte_ring"),
           "rb2_over_rte_ring_desc": ratio("rb2", "rte_ring_desc"),
           "rows": [{"variant": v, "mpps": med[v]} for v in variants],
           "per_round": [{v: round(x[v]["mpps"], 3) for v in variants} for x in rounds]}
    if not o.quick:
        out["cycles_per_packet_median"] = {
            v: {k: statistics.median(x[v]["cycles_per_packet"][k] for x in rounds)
                for k in ("rx", "parse", "measure")}
            for v in ("rb2", "rte_ring", "rte_ring_desc", "rb2_nocache", *placements)}
        for v in placements:
            out[f"{v}_over_testpmd_io"] = ratio(v, "testpmd")
        out["mempool_cache_gain"] = ratio("rb2", "rb2_nocache")
        # The pipeline with an RB² channel between two lcores (rx -> parse
        # -> channel -> measure) is judged apart from the placements that
        # run each lcore to completion.
        out["best_channel_placement_over_testpmd_io"] = max(
            ratio(v, "testpmd") for v in CHANNEL_PLACEMENTS)
        out["best_placement_over_testpmd_io"] = max(ratio(v, "testpmd") for v in placements)
    res["port"] = out


def conn(r, o, res):
    """The connection layer: rb2-connperf's designs, throughput over 1..N
    connections, then the 64 B round trip against a bare channel."""
    cp = app_path(r, "rb2-connperf")
    conns = "1,16" if o.quick else "1,16,256,1000"
    eal = r.eal(r.huge_mb >= 4096, 4096 if not o.quick else 1024, 2)
    tput = json.loads(run_app(r, [cp, *eal, "--", "--transport", r.transport,
                                  "--designs", "shared,perconn", "--conns", conns,
                                  "--rounds", str(o.layer_rounds),
                                  "--seconds", str(o.layer_seconds)], "conn throughput"))
    lat = json.loads(run_app(r, [cp, *r.eal(False, 1024, 2), "--", "--transport", r.transport,
                                 "--designs", "shared,bare", "--lat",
                                 str(o.lat_count), "--rounds", str(o.layer_rounds)],
                             "conn latency"))
    rows = [{"test": "throughput", "design": v["mode"], "conns": v["conns"],
             "median": v["median"], "unit": "Mmsg/s"} for v in tput["variants"]]
    rows += [{"test": "latency", "design": v["mode"], "conns": v["conns"],
              "median": v["median"], "unit": "p50 round trip ns"} for v in lat["variants"]]
    res["conn"] = {"throughput": tput, "latency": lat, "rows": rows}


def service(r, o, res):
    """The host service: rb2-raasbench through one rb2-raasd, lent against
    copied, per size. Two secondaries of the service: hugepages needed."""
    raasd, bench = app_path(r, "rb2-raasd"), app_path(r, "rb2-raasbench")
    if r.huge_mb < 600:
        res["service"] = {"skipped": "DPDK multi-process needs hugepages (600 MiB free): "
                                     "as root, usertools/rb2-hugepages.sh 1024", "rows": []}
        progress("service: skipped, no hugepages")
        return
    pfx = f"rb2evs{os.getpid()}"
    sizes = [65536, 1048576] if o.quick else [65536, 131072, 262144, 1048576, 4194304]
    log = os.path.join(r.tmp, "raasd.log")
    cmd = [raasd, "-l", "0", "--no-pci", "-m", "512", "--file-prefix", pfx,
           "--proc-type=primary", "--log-level=lib.eal:error", "--"]
    r.log.append(" ".join(cmd))
    d = subprocess.Popen(cmd, stdout=open(log, "w"), stderr=subprocess.STDOUT)
    sec = ["-l", "1", "--no-pci", "--proc-type=secondary", "--file-prefix", pfx,
           "--log-level=lib.eal:error"]
    rows, runs = [], []
    try:
        wait_for(log, "ready", d, "rb2-raasd")
        for port, size in enumerate(sizes, start=10):
            rlog = os.path.join(r.tmp, f"recv{port}.log")
            rc = [bench, *sec, "--", "recv", "--port", str(port)]
            r.log.append(" ".join(rc))
            recv = subprocess.Popen(rc, stdout=open(rlog, "w"), stderr=subprocess.STDOUT)
            wait_for(rlog, "listening", recv, "rb2-raasbench recv")
            j = json.loads(run_app(r, [bench, *sec, "--", "send", "--port", str(port),
                                       "--size", str(size), "--rounds", str(o.layer_rounds),
                                       "--seconds", str(o.layer_seconds)],
                                   f"service {size} B"))
            if recv.wait(timeout=120) != 0:
                raise RuntimeError(f"service {size} B: the receiver failed:\n"
                                   f"{open(rlog).read()[-2000:]}")
            runs.append(j)
            rows.append({"bytes": size, "lent_MBps": j["lent_MBps_median"],
                         "copied_MBps": j["copied_MBps_median"],
                         "lent_over_copied": j["lent_over_copied_median"]})
            progress(f"service {size} B: lent/copied {j['lent_over_copied_median']:.2f}")
    finally:
        d.terminate()
        d.wait(timeout=30)
        for f in os.listdir("/dev/hugepages") if os.path.isdir("/dev/hugepages") else []:
            if f.startswith(pfx):
                os.unlink(os.path.join("/dev/hugepages", f))
        shutil.rmtree(dpdk_runtime_dir(pfx), ignore_errors=True)
    res["service"] = {"runs": runs, "rows": rows}


def nf_rate(r, o, res):
    """The NF's record rate on its default pipeline, o.nf_rate_packets records
    of a generated CAIDA-like trace (o.nf_rate_packets / 20 flows)."""
    nf, gen = app_path(r, "rb2-nf"), app_path(r, "rb2-tracegen")
    n = o.nf_rate_packets
    trace = os.path.join(r.tmp, "nf-rate.pcap")
    run_app(r, [gen, "-o", trace, "--packets", str(n), "--flows", str(max(1, n // 20)),
                "--snaplen", "64", "--seed", "42"], "nf-rate trace")
    mb = 2048
    runs = []
    for k in range(o.layer_rounds):
        st = os.path.join(r.tmp, f"nf-rate{k}.json")
        # Preloaded: the pipeline's own rate, not the file's reading.
        run_app(r, [nf, *r.eal(r.huge_mb >= mb, mb, 2), "--", "--trace", trace, "--preload",
                    "yes", "--flows", "2M", "--top", "0", "--stats-json", st], "nf-rate")
        s = json.load(open(st))
        stages = {x["name"]: x for x in s["stages"]}
        m, rp = stages["measure"], stages["replay"]
        recs = m["counters"]["records"]
        if recs != n:
            raise RuntimeError(f"nf-rate: {recs} records measured of {n}")
        runs.append({"records": recs, "seconds": s["seconds"],
                     "records_per_s": recs / s["seconds"],
                     "measure_cycles_per_record": m["cycles"] / recs,
                     "replay_cycles_per_record": rp["cycles"] / rp["produced"],
                     "replay_waits_full": rp["edges"]["out"]["waits"]})
        progress(f"nf-rate round {k + 1}/{o.layer_rounds}: "
                 f"{runs[-1]['records_per_s'] / 1e6:.1f} M records/s")
    med = statistics.median(x["records_per_s"] for x in runs)
    res["nf-rate"] = {"records": n, "runs": runs, "median_records_per_s": med,
                      "median_measure_cycles_per_record":
                          statistics.median(x["measure_cycles_per_record"] for x in runs),
                      "rows": runs}


def nf_monitor(r, o, res):
    """rb2-nf as a flow monitor against nfpcapd and softflowd (see above), for
    each size of o.monitor_packets: the whole process timed, start-up,
    reading and exit included, the tools interleaved in each round."""
    nf, gen = app_path(r, "rb2-nf"), app_path(r, "rb2-tracegen")
    rows, runs = [], {}
    have = {t: shutil.which(t) is not None for t in ("nfpcapd", "softflowd")}
    sizes = o.monitor_packets if isinstance(o.monitor_packets, list) else [o.monitor_packets]
    for n in sizes:
        trace = os.path.join(r.tmp, f"monitor-{n}.pcap")
        flows = 200000 if n <= 2000000 else 1500000
        flows = min(flows, max(1, n // 10))
        progress(f"nf-monitor: a trace of {n} packets, {flows} flows drawn")
        run_app(r, [gen, "-o", trace, "--packets", str(n), "--flows", str(flows),
                    "--nonip", "0.001", "--snaplen", "96", "--seed", "44"], "nf-monitor trace")
        # rb2-nf streams the capture: its memory is the flow tables' (two
        # shards: two) and the channels'. With hugepages it runs as a user
        # would, without -m: the EAL maps pages as the heap grows.
        mb = 768
        huge = r.huge_mb >= mb
        nf_mb = 0 if huge else mb
        pre_mb = mb + n * 64 // (1 << 20) + 64
        out = os.path.join(r.tmp, "monitor-out")
        tools = {
            "rb2_on": [nf, *r.eal(huge, nf_mb, 2), "--", "--trace", trace, "--top", "0",
                       "--ipfix-file", os.path.join(r.tmp, "monitor.ipfix"),
                       "--stats-json", os.path.join(r.tmp, "monitor-on.json")],
            "rb2_off": [nf, *r.eal(huge, nf_mb, 2), "--", "--trace", trace, "--top", "0",
                        "--active-timeout", "off", "--idle-timeout", "off",
                        "--stats-json", os.path.join(r.tmp, "monitor-off.json")],
            # The pipeline's own rate, one measure stage against two shards
            # (lcores 0 and 1) and their one exporter: preloaded, so that
            # reading the file bounds neither.
            "rb2_pre_one": [nf, *r.eal(r.huge_mb >= pre_mb, pre_mb, 2), "--", "--trace", trace,
                            "--preload", "yes", "--top", "0",
                            "--ipfix-file", os.path.join(r.tmp, "monitor1.ipfix"),
                            "--stats-json", os.path.join(r.tmp, "monitor-1pre.json")],
            "rb2_pre_two": [nf, *r.eal(r.huge_mb >= pre_mb, pre_mb, 2), "--", "--config",
                            os.path.join(os.path.dirname(os.path.dirname(
                                os.path.abspath(__file__))), "config", "nf-sharded.ini"),
                            "--trace", trace, "--preload", "yes",
                            "--top", "0", "--ipfix-file", os.path.join(r.tmp, "monitor2.ipfix"),
                            "--stats-json", os.path.join(r.tmp, "monitor-2pre.json")],
        }
        if have["nfpcapd"]:
            tools["nfpcapd"] = ["nfpcapd", "-r", trace, "-w", out, "-e", "300,60"]
        if have["softflowd"]:
            # Its table as large as rb2-nf's, the same timeouts; the export
            # goes to a port nobody listens on (sent, then dropped).
            tools["softflowd"] = ["softflowd", "-r", trace, "-n", "127.0.0.1:9", "-v", "10",
                                  "-6", "-m", "1048576", "-t", "maxlife=300", "-t",
                                  "general=60", "-d", "-p", os.path.join(r.tmp, "sf.pid"),
                                  # A control socket path of at most 12
                                  # characters: with a longer one softflowd
                                  # 1.1.0 never exits after -r's end of file.
                                  "-c", f"/tmp/sf{os.getpid() % 100000}"]
        secs = {t: [] for t in tools}
        # --quick only checks that it runs: one round.
        rounds = 1 if o.quick else o.layer_rounds
        cyc = {"rb2_on": [], "rb2_off": []}
        rate = {"rb2_pre_one": [], "rb2_pre_two": []}
        for k in range(rounds):
            # Each round starts with the next tool, so that no tool always
            # runs in the same place (first: after the last round's longest).
            order = list(tools.items())
            order = order[k % len(order):] + order[:k % len(order)]
            for t, cmd in order:
                shutil.rmtree(out, ignore_errors=True)
                os.makedirs(out)
                t0 = time.monotonic()
                run_app(r, cmd, f"nf-monitor {t}", timeout=600)
                secs[t].append(time.monotonic() - t0)
                if t.startswith("rb2"):
                    st = json.load(open(cmd[cmd.index("--stats-json") + 1]))
                    ms = [x for x in st["stages"] if x["type"] == "measure"]
                    got = sum(x["counters"]["records"] for x in ms)
                    if got != n:
                        raise RuntimeError(f"nf-monitor {t}: {got} records measured of {n}")
                    if t in cyc:
                        cyc[t].append(ms[0]["cycles"] / n)
                    if t in rate:       # the pipeline's own rate, start-up aside
                        rate[t].append(n / st["seconds"])
            progress(f"nf-monitor {n} round {k + 1}/{rounds}: " +
                     ", ".join(f"{t} {v[-1]:.2f} s" for t, v in secs.items()))
        med = {t: statistics.median(v) for t, v in secs.items()}
        ratio = lambda a, b: statistics.median(x / y for x, y in zip(secs[a], secs[b]))
        row = {"packets": n, "flows_drawn": flows, "rounds": rounds,
               **{f"{t}_s": v for t, v in med.items()},
               "on_over_off_rate": ratio("rb2_off", "rb2_on"),
               "measure_cycles_on": statistics.median(cyc["rb2_on"]),
               "measure_cycles_off": statistics.median(cyc["rb2_off"]),
               "pipeline_mrps_one_measure": statistics.median(rate["rb2_pre_one"]) / 1e6,
               "pipeline_mrps_two_shards": statistics.median(rate["rb2_pre_two"]) / 1e6,
               "two_shards_over_one": statistics.median(
                   b / a for a, b in zip(rate["rb2_pre_one"], rate["rb2_pre_two"]))}
        for t in ("nfpcapd", "softflowd"):
            row[f"{t}_over_rb2"] = ratio(t, "rb2_on") if t in secs else None
        # The flow table alone against rte_hash, on the same records.
        fb = os.path.join(r.tmp, "flowbench.json")
        fb_mb = 1024 + n * 64 // (1 << 20) * 2     # it preloads the records
        run_app(r, [app_path(r, "rb2-flowbench"), *r.eal(r.huge_mb >= fb_mb, fb_mb, 1), "--",
                    "--trace", trace,
                    "--rounds", str(rounds), "--reader", "both", "--json", fb],
                "nf-monitor rb2-flowbench")
        fbj = json.load(open(fb))
        for d in ("rb2", "rte_hash"):
            x = fbj["designs"][d]
            row[f"table_{d}_cycles"] = x["cycles_per_record"]
            row[f"table_{d}_bytes_per_flow"] = x["bytes_per_flow_of_cap"]
        row["table_rb2_over_rte_hash"] = fbj["rb2_over_rte_hash"]
        # Reading the capture into records: rb2's reader against libpcap.
        row["read_rb2_ns"] = fbj["read"]["rb2_ns_per_record"]
        row["read_libpcap_ns"] = fbj["read"]["libpcap_ns_per_record"]
        row["read_libpcap_over_rb2"] = fbj["read"]["libpcap_over_rb2"]
        rows.append(row)
        runs[str(n)] = secs
    # The table's memory per flow of its cap, and a full table's bytes a
    # flow held (the table sizes itself for the cap at a load of 0.7).
    slots = 64
    while slots // 10 * 7 < (1 << 20):
        slots *= 2
    mem = slots * 80 + slots // 8 + (1 << 20) * 40
    res["nf-monitor"] = {"rows": rows, "runs": runs, "tools_missing": [t for t, h in have.items() if not h],
                         "table_bytes_1M": mem, "table_bytes_per_flow": mem / (1 << 20)}


def wait_for(log, word, proc, what, seconds=20):
    """Until @log holds @word; an error if @proc ended first, or in time."""
    for _ in range(int(seconds * 20)):
        if os.path.exists(log) and word in open(log).read():
            return
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not start:\n{open(log).read()[-2000:]}")


# The helpers every experiment uses, rb2-eval.py's too.
def progress(msg):
    print(f"rb2-eval: {msg}", file=sys.stderr, flush=True)


def app_path(r, name):
    return os.path.join(os.path.dirname(os.path.dirname(r.perf)), name, name)


def run_app(r, cmd, what, timeout=None):
    r.log.append(" ".join(cmd))
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       stdin=subprocess.DEVNULL, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{what}: {' '.join(cmd)}: exit {p.returncode}\n{p.stderr[-2000:]}")
    return p.stdout


STEPS = {"conn": conn, "service": service, "nf-rate": nf_rate, "nf-monitor": nf_monitor,
         "port": port}


def fmt(v):
    """Three significant digits, and no exponent for a large figure."""
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return f"{v:.0f}" if abs(v) >= 100 else f"{v:.3g}"
    return str(v)


def report(out, res):
    """layers.md: each layer's figures, beside the command that made them."""
    lines = ["<!-- SPDX-License-Identifier: BSD-3-Clause -->", "",
             "# Each layer's own benchmark", "",
             f"Written by `{res['command']}` ({res.get('cpus', '?')} CPUs, transport "
             f"{res['transport']}{', --quick' if res['quick'] else ''}). Every figure is a "
             "median over interleaved rounds of one run; ratios are medians of per-round "
             "ratios.", ""]
    if "conn" in res:
        c = res["conn"]
        lines += ["## Connections (rb2-connperf)", "",
                  "| design | connections | Mmsg/s |", "|---|---|---|"]
        lines += [f"| {x['design']} | {x['conns']} | {fmt(x['median'])} |"
                  for x in c["rows"] if x["test"] == "throughput"]
        lines += ["", "| design | 64 B round trip, p50 ns |", "|---|---|"]
        lines += [f"| {x['design']} | {fmt(x['median'])} |"
                  for x in c["rows"] if x["test"] == "latency"]
        lines += ["", f"Command: `{c['command']}`", ""]
    if "service" in res:
        s = res["service"]
        lines += ["## The host service (rb2-raasbench through rb2-raasd)", ""]
        if "skipped" in s:
            lines += [f"Not run: {s['skipped']}.", ""]
        else:
            lines += ["| bytes | lent MB/s | copied MB/s | lent / copied |", "|---|---|---|---|"]
            lines += [f"| {x['bytes']} | {fmt(x['lent_MBps'])} | {fmt(x['copied_MBps'])} | "
                      f"{fmt(x['lent_over_copied'])} |" for x in s["rows"]]
            lines += [""]
        lines += [f"Command: `{s['command']}`", ""]
    if "nf-rate" in res:
        n = res["nf-rate"]
        lines += ["## The NF's record rate (rb2-nf, default pipeline)", "",
                  f"{n['records']} records a run, {len(n['runs'])} runs: median "
                  f"{n['median_records_per_s'] / 1e6:.2f} M records/s, "
                  f"{n['median_measure_cycles_per_record']:.1f} measure cycles per record.", "",
                  f"Command: `{n['command']}`", ""]
    if "nf-monitor" in res:
        m = res["nf-monitor"]
        lines += ["## rb2-nf as a flow monitor (whole processes, one capture)", "",
                  "| packets | rb2-nf, timeouts and IPFIX, s | without them, s | on / off rate "
                  "| nfpcapd, s | softflowd, s | nfpcapd / rb2-nf | softflowd / rb2-nf | "
                  "measure cycles/record on, off |", "|---|---|---|---|---|---|---|---|---|"]
        lines += [f"| {x['packets']} | {fmt(x['rb2_on_s'])} | {fmt(x['rb2_off_s'])} | "
                  f"{fmt(x['on_over_off_rate'])} | {fmt(x.get('nfpcapd_s'))} | "
                  f"{fmt(x.get('softflowd_s'))} | {fmt(x['nfpcapd_over_rb2'])} | "
                  f"{fmt(x['softflowd_over_rb2'])} | {fmt(x['measure_cycles_on'])}, "
                  f"{fmt(x['measure_cycles_off'])} |" for x in m["rows"]]
        lines += ["", "The pipeline's own rate (preloaded, start-up aside):", "",
                  "| packets | pipeline M records/s, one measure | two shards | two / one |",
                  "|---|---|---|---|"]
        lines += [f"| {x['packets']} | {fmt(x.get('pipeline_mrps_one_measure'))} | "
                  f"{fmt(x.get('pipeline_mrps_two_shards'))} | {fmt(x.get('two_shards_over_one'))} |"
                  for x in m["rows"]]
        lines += ["", "The flow table alone (rb2-flowbench, the same records, a capacity of 1M "
                  "flows, no timeouts):", "",
                  "| packets | rb2_flowtab cycles/record | rte_hash | rb2 / rte_hash rate | "
                  "bytes per flow of the cap, rb2 | rte_hash |", "|---|---|---|---|---|---|"]
        lines += [f"| {x['packets']} | {fmt(x.get('table_rb2_cycles'))} | "
                  f"{fmt(x.get('table_rte_hash_cycles'))} | {fmt(x.get('table_rb2_over_rte_hash'))} | "
                  f"{fmt(x.get('table_rb2_bytes_per_flow'))} | "
                  f"{fmt(x.get('table_rte_hash_bytes_per_flow'))} |" for x in m["rows"]]
        lines += ["", "Reading the capture into records (rb2-flowbench --reader both, the "
                  "records compared equal):", "",
                  "| packets | rb2's reader, ns/record | libpcap's | libpcap / rb2 |",
                  "|---|---|---|---|"]
        lines += [f"| {x['packets']} | {fmt(x.get('read_rb2_ns'))} | "
                  f"{fmt(x.get('read_libpcap_ns'))} | {fmt(x.get('read_libpcap_over_rb2'))} |"
                  for x in m["rows"]]
        lines += ["", f"Medians of {m['rows'][0]['rounds'] if m['rows'] else 0} interleaved "
                  "rounds; ratios are medians of per-round ratios. The flow table of the "
                  f"default 1M flows holds {m['table_bytes_1M'] / (1 << 20):.0f} MiB, "
                  f"{m['table_bytes_per_flow']:.0f} bytes per flow of its cap.", ""]
        if m["tools_missing"]:
            lines += [f"Not installed, not run: {', '.join(m['tools_missing'])}.", ""]
        lines += [f"Command: `{m['command']}`", ""]
    if "port" in res:
        p = res["port"]
        lines += ["## The port layer (rb2-nf from net_null)", "",
                  "| variant | Mpps |", "|---|---|"]
        lines += [f"| {x['variant']} | {fmt(x['mpps'])} |" for x in p["rows"]]
        lines += ["", f"rb2 / rte_ring = {fmt(p['rb2_over_rte_ring'])}, rb2 / rte_ring of "
                      f"descriptors = {fmt(p['rb2_over_rte_ring_desc'])}"]
        if "best_channel_placement_over_testpmd_io" in p:
            lines += [f"; the best placement with an RB2 channel / testpmd io = "
                      f"{fmt(p['best_channel_placement_over_testpmd_io'])}, of any kind "
                      f"{fmt(p['best_placement_over_testpmd_io'])}"]
        lines += ["", f"Command: `{p['command']}`", ""]
    with open(os.path.join(out, "layers.md"), "w") as f:
        f.write("\n".join(lines))
