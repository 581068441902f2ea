#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
"""Unmodified programs under rb2-run against kernel TCP on loopback, the same
binaries in one run, interleaved rounds (each round starts with the other
mode). Prints JSON: per measurement the median of the rounds for each mode,
the ratio, and every round's figure.

  usertools/rb2_run_bench.py [--build build] [--rounds 3] [--seconds 3]
  usertools/rb2_run_bench.py --nginx-spin 2000,0 [--rounds 3] [--seconds 5]
  usertools/rb2_run_bench.py --bells memcached,nginx,redis [--rounds 3]
  usertools/rb2_run_bench.py --postgres [--rounds 3] [--seconds 8]
  usertools/rb2_run_bench.py --apache [--rounds 3] [--seconds 5]

--nginx-spin runs nginx and wrk alone, over the kernel and under rb2-run with
its default spin and with each RB2_RUN_SPIN_NS given: what a waiting thread's
spin does to the rate and to wrk's p50 and p99 on this machine's vCPUs.
--bells runs the apps named over the kernel and under rb2-run with each bell
that wakes a sleeping peer: its eventfd (the default), and a byte on the
connection's TCP socket (RB2_RUN_BELL=socket).
--postgres runs PostgreSQL alone (a backend forked per connection) under
pgbench -S with 1 and 8 clients, over the kernel and under rb2-run: as root,
with the build tree readable by the user postgres.
--apache runs Apache's event MPM alone (one process, -X: a listener thread and
16 workers) serving a 1 KB file to wrk -t1 -c8, as nginx is measured.

Also, each round, the layer's own cost: the same 64 B round trip on a bare rb2
channel (rb2-perf --mode lat) and through blocking send()/recv()
(tests/rb2run_pingpong) under rb2-run and over kernel TCP.

Measured (issue 42's table): sockperf ping-pong --tcp, 64 B, p50 latency;
redis-benchmark GET and SET, 1 client and 50 clients; memcached -t 4 under
memcslap --concurrency=4 --execute-number=20000 (seconds); nginx with 2
workers serving a 1 KB file to wrk -t1 -c8 (requests/s); iperf3, one stream
each way (Gbit/s). The programs' recipes are usertools/rb2_apps.py's. In rb2
mode both ends run under rb2-run, and every connection must have gone over
rb2 (the stats lines say), or the run fails rather than report a kernel
figure as rb2's.

Also measured, for SocksDirect's claims (message throughput, nginx latency):
sockperf throughput --tcp, 64 B (messages/s), and wrk's p50 and p99 latency. And
the CPU each request cost: the user and system time of the server's
processes, the client's and rb2-sockd's while the client ran, over the
requests it made (requests for redis, memcached and nginx, per GB for
iperf3; not for sockperf, which paces its round trips and spins between
them in both modes).
"""
import argparse
import json
import os
import re
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import rb2_apps


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_port(port, timeout=10):
    """Until something listens on @port (rb2_apps.listening())."""
    t0 = time.time()
    while time.time() - t0 < timeout:
        if rb2_apps.listening(port):
            return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


CLK_TCK = os.sysconf("SC_CLK_TCK")


def tree_cpu_s(roots):
    """User plus system seconds of the processes @roots and all their
    descendants alive now, every thread included, and of the children they
    have reaped (/proc/PID/stat), such as PostgreSQL's backends, which end
    with their connections."""
    kids, cpu = {}, {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read()
        except OSError:
            continue
        f = st[st.rindex(")") + 2:].split()      # fields from the 3rd on
        kids.setdefault(int(f[1]), []).append(int(d))
        cpu[int(d)] = (int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])) / CLK_TCK
    seen, todo = set(), [r for r in roots if r in cpu]
    while todo:
        p = todo.pop()
        if p not in seen:
            seen.add(p)
            todo.extend(kids.get(p, []))
    return sum(cpu[p] for p in seen)


def sockd_pids():
    pids = []
    for d in os.listdir("/proc"):
        try:
            if d.isdigit() and open(f"/proc/{d}/comm").read().strip() == "rb2-sockd":
                pids.append(int(d))
        except OSError:
            pass
    return pids


class Cpu:
    """CPU seconds spent by a server's process tree, rb2-sockd and the
    clients run in between (waited-for children: RUSAGE_CHILDREN)."""

    def __init__(self, server):
        self.roots = [server.pid] + sockd_pids()
        self.t0 = tree_cpu_s(self.roots)
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.c0 = ru.ru_utime + ru.ru_stime

    def seconds(self):
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        return tree_cpu_s(self.roots) - self.t0 + ru.ru_utime + ru.ru_stime - self.c0


class Bench:
    def __init__(self, build, seconds):
        self.run = os.path.join(build, "apps", "rb2-run", "rb2-run")
        self.seconds = seconds
        self.tmp = tempfile.mkdtemp(prefix="rb2-run-bench-")
        self.build = build
        self.env = dict(os.environ, RB2_SOCKD_PATH=os.path.join(self.tmp, "sockd.sock"),
                        RB2_RUN_STATS="1")

    def close(self):
        """Stop the rb2-sockd that rb2-run started, and remove the files."""
        subprocess.run([os.path.join(self.build, "apps", "rb2-sockd", "rb2-sockd"), "--stop"],
                       env=self.env, capture_output=True)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def prefix(self, mode):
        return [self.run] if mode == "rb2" else []

    def check_rb2(self, mode, err, what):
        """In rb2 mode: every connection of the client went over rb2."""
        if mode != "rb2":
            return
        m = re.search(r"(\d+) connections over rb2 .*?(\d+) failed(.*)", err)
        if not m or int(m.group(1)) == 0 or "kernel TCP" in m.group(3):
            raise RuntimeError(f"{what}: not every connection went over rb2: {err.strip()}")

    def app(self, mode, app):
        """@app's server (a recipe of rb2_apps) and each of its clients, all
        in @mode; @return their figures, with the CPU each cost."""
        port = free_port()
        srv = subprocess.Popen(self.prefix(mode) + app.server("127.0.0.1", port, self.tmp),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env=self.env, cwd=self.tmp)
        res = {}
        try:
            wait_port(port)
            for cl in app.clients("127.0.0.1", port, self.seconds):
                cpu = Cpu(srv)
                r = subprocess.run(self.prefix(mode) + cl.argv, capture_output=True, text=True,
                                   env=self.env, timeout=300)
                cpu_s = cpu.seconds()
                what = f"{app.name} {cl.name} ({mode})"
                if r.returncode != 0:
                    raise RuntimeError(f"{what}: exit {r.returncode}: "
                                       f"{(r.stdout + r.stderr)[-300:]}")
                try:
                    figs = cl.parse(r.stdout + r.stderr if cl.stderr else r.stdout)
                except ValueError as e:
                    raise RuntimeError(f"{what}: {e}")
                self.check_rb2(mode, r.stderr, what)
                cpu_fig = cl.cpu_figure(figs, cpu_s)      # pops the _keys
                res.update(figs)
                res.update(cpu_fig)
        finally:
            srv.terminate()
            srv.wait()
        return res

    def pingpong(self, mode, count=100000):
        """tests/rb2run_pingpong: 64 B round trips through plain blocking
        send() and recv(); p50 in ns."""
        return self.app(mode, rb2_apps.PingPong(self.build, 64, count))["pingpong_p50_ns"]

    def bare_lat(self, count=100000):
        """rb2-perf --mode lat: the same round trip on a bare rb2 channel
        (two lcores of one process, shm); p50 in ns."""
        out = os.path.join(self.tmp, "lat.json")
        r = subprocess.run([os.path.join(self.build, "apps", "rb2-perf", "rb2-perf"),
                            "-l", "0-1", "--no-pci", "--no-huge", "-m", "512",
                            "--file-prefix", f"rb2runbench{os.getpid()}",
                            "--log-level", "lib.eal:error", "--", "--mode", "lat",
                            "--size", "64", "--count", str(count), "--json", out],
                           capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            raise RuntimeError(f"rb2-perf --mode lat: {(r.stdout + r.stderr)[-300:]}")
        return json.load(open(out))["rb2"]["p50_ns"]

    def iperf3(self, mode):
        port = free_port()
        srv = subprocess.Popen(self.prefix(mode) + ["iperf3", "-s", "-1", "-p", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env=self.env)
        try:
            wait_port(port)
            cpu = Cpu(srv)
            r = subprocess.run(self.prefix(mode) + ["iperf3", "-c", "127.0.0.1", "-p",
                                                    str(port), "-t", str(self.seconds), "-J"],
                               capture_output=True, text=True, env=self.env, timeout=300)
            cpu_s = cpu.seconds()
        finally:
            srv.wait(timeout=30)
        if r.returncode != 0:
            raise RuntimeError(f"iperf3 {mode}: {(r.stdout + r.stderr)[-300:]}")
        self.check_rb2(mode, r.stderr, "iperf3")
        got = json.loads(r.stdout)["end"]["sum_received"]
        return {"iperf3_gbps": got["bits_per_second"] / 1e9,
                "iperf3_cpu_s_per_gb": cpu_s / (got["bytes"] / 1e9)}


def compare(b, rounds, configs, apps, what):
    """@apps (names of rb2_apps.ALL) under each of @configs, (label, mode,
    extra environment), interleaved, each round in the other order; the
    median of the rounds and every round's figures."""
    env = dict(b.env)
    figs = {label: [] for label, _, _ in configs}
    for k in range(rounds):
        for label, mode, extra in configs if k % 2 == 0 else configs[::-1]:
            b.env = dict(env, **extra)
            fig = {}
            for name in apps:
                fig.update(b.app(mode, (rb2_apps.ALL | rb2_apps.MORE)[name]))
            figs[label].append(fig)
            print(f"round {k + 1}/{rounds} {label}: {fig}", file=sys.stderr)
    b.env = env
    return {"rounds": rounds, "host_cpus": os.cpu_count(), "what": what,
            "configs": {label: {key: statistics.median(r[key] for r in figs[label])
                                for key in figs[label][0]} | {"rounds": figs[label]}
                        for label in figs}}


def nginx_spin(b, rounds, spins):
    """nginx under each spin setting ("default": rb2-run's own), interleaved
    with kernel TCP."""
    configs = [("kernel", "kernel", {}), ("default", "rb2", {})] + \
        [(f"spin_{ns}_ns", "rb2", {"RB2_RUN_SPIN_NS": str(ns)}) for ns in spins]
    return compare(b, rounds, configs, ["nginx"],
                   "nginx (2 workers, 1 KB file) under wrk -t1 -c8 --latency")


def bells(b, rounds, apps):
    """@apps over kernel TCP and under rb2-run with each bell: a peer's
    eventfd (the default) and a byte on the connection's socket
    (RB2_RUN_BELL=socket)."""
    configs = [("kernel", "kernel", {}), ("eventfd", "rb2", {}),
               ("socket", "rb2", {"RB2_RUN_BELL": "socket"})]
    return compare(b, rounds, configs, apps,
                   "the bell that wakes a sleeping peer on one host: eventfd or socket")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=3, help="sockperf's run per round")
    ap.add_argument("--nginx-spin", metavar="NS[,NS...]",
                    help="nginx alone, under each RB2_RUN_SPIN_NS too")
    ap.add_argument("--bells", metavar="APP[,APP...]",
                    help="these of %s alone, under rb2-run with each bell too "
                         "(eventfd, socket)" % ",".join(rb2_apps.ALL))
    ap.add_argument("--postgres", action="store_true",
                    help="PostgreSQL alone, pgbench -S with 1 and 8 clients (as root)")
    ap.add_argument("--apache", action="store_true",
                    help="Apache's event MPM alone, a 1 KB file to wrk -t1 -c8")
    o = ap.parse_args()
    if o.bells and any(a not in rb2_apps.ALL for a in o.bells.split(",")):
        ap.error(f"--bells: apps are among {','.join(rb2_apps.ALL)}: {o.bells}")
    try:
        spins = [int(x) for x in o.nginx_spin.split(",")] if o.nginx_spin else None
    except ValueError:
        ap.error(f"--nginx-spin: not a list of nanoseconds: {o.nginx_spin}")
    o.build = os.path.abspath(o.build)
    os.environ["PATH"] += ":/usr/sbin"
    for app in rb2_apps.ALL.values():
        for tool in app.tools:
            if shutil.which(tool) is None:
                sys.exit(f"rb2_run_bench: {tool} is not installed (apt-get install "
                         f"{rb2_apps.PACKAGES})")
    if o.postgres or o.apache:
        name, what = ("postgres", "PostgreSQL under pgbench -S") if o.postgres else \
            ("apache", "Apache's event MPM (-X, 16 workers), a 1 KB file to wrk -t1 -c8")
        why = rb2_apps.Postgres.missing(os.path.join(o.build, "lib", "preload",
                                                     "librb2_preload.so")) \
            if o.postgres else rb2_apps.Apache.missing()
        if why is not None:
            sys.exit(f"rb2_run_bench: --{name}: {why}")
        b = Bench(o.build, o.seconds)
        try:
            print(json.dumps(compare(b, o.rounds, [("kernel", "kernel", {}), ("rb2", "rb2", {})],
                                     [name], what), indent=1))
        finally:
            b.close()
        return
    b = Bench(o.build, o.seconds)
    if spins is not None or o.bells:
        try:
            res = nginx_spin(b, o.rounds, spins) if spins is not None else \
                bells(b, o.rounds, o.bells.split(","))
            print(json.dumps(res, indent=1))
        finally:
            b.close()
        return
    rounds = {"kernel": [], "rb2": []}
    layer = []
    try:
        for k in range(o.rounds):
            # The layer's own cost: the same 64 B round trip on a bare
            # channel, and through send()/recv() under rb2-run.
            lay = {"bare_chan_p50_ns": b.bare_lat(),
                   "rb2_run_pingpong_p50_ns": b.pingpong("rb2"),
                   "kernel_pingpong_p50_ns": b.pingpong("kernel")}
            layer.append(lay)
            print(f"round {k + 1}/{o.rounds} layer: {lay}", file=sys.stderr)
            order = ["kernel", "rb2"] if k % 2 == 0 else ["rb2", "kernel"]
            for mode in order:
                fig = {}
                for app in rb2_apps.ALL.values():
                    fig.update(b.app(mode, app))
                rounds[mode].append(fig)
                print(f"round {k + 1}/{o.rounds} {mode}: {fig}", file=sys.stderr)
    finally:
        b.close()
    result = {"rounds": o.rounds, "host_cpus": os.cpu_count(), "measurements": {},
              "layer": {
                  "what": "64 B round trip, p50: tests/rb2run_pingpong (blocking send() and "
                          "recv()) under rb2-run against rb2-perf --mode lat on a bare "
                          "shm channel; issue 42's target: at most 2x",
                  "rounds": layer,
                  "rb2_run_over_bare": statistics.median(
                      [x["rb2_run_pingpong_p50_ns"] / x["bare_chan_p50_ns"] for x in layer]),
                  "kernel_over_rb2_run": statistics.median(
                      [x["kernel_pingpong_p50_ns"] / x["rb2_run_pingpong_p50_ns"]
                       for x in layer])}}
    for key in rounds["kernel"][0]:
        kern = [r[key] for r in rounds["kernel"]]
        rb2 = [r[key] for r in rounds["rb2"]]
        # Times and costs: kernel / rb2 (higher is better for rb2); rates:
        # rb2 / kernel.
        per_round = [(a / c if rb2_apps.cost(key) else c / a)
                     for a, c in zip(kern, rb2)]
        result["measurements"][key] = {
            "kernel": statistics.median(kern), "rb2": statistics.median(rb2),
            "rb2_advantage": statistics.median(per_round),
            "kernel_rounds": kern, "rb2_rounds": rb2}
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
