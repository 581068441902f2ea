#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
"""The two-guest comparison of unmodified programs (run.sh BUILD preload):
each program of usertools/rb2_apps.py, and tests/rb2run_pingpong (one
connection; and 1 and 50 in a poll() loop, pingpong-conns), with its
server in guest A and its clients in guest B, over kernel TCP, under
rsocket's preload (librspreload.so, rdma-core) and under rb2-run, in
interleaved rounds of one boot (each round starts with another mode).
rsocket-spin is rsocket's preload with its blocking calls polling the
completion queue for up to a second before they sleep (polling_time; the
default is 10 µs). rsocket-poll is rsocket's preload again, with the server
told to wait in poll() where it can be (rb2_apps: can_poll): Debian 12's
preload (rdma-core 44) wraps poll and select, not epoll. rsocket-wake is
rsocket-poll with rpoll()'s sleeps bounded at RS_WAKE_MS rather than 5 s
(wake_up_interval): rpoll() waits for a new connection on the listener's
RDMA CM channel, whose events rsocket's own listening thread takes, so a
listener in poll() sees a connection only when its sleep's bound runs out
(rdma-core 63 lowered the default to 500 ms for this). rb2-unbatched is
rb2-run with every write sent at once (RB2_RUN_BATCH_US=0): set against
rb2, what batching small writes behind one in flight gives.

References that run on request (--apps): rdma-core's own benchmark, rstream,
as a ping-pong through the socket calls (rstream, rstream-block) and through
rsocket's own (rstream-native, rstream-native-block: no preload, rsocket
modes only), and as a stream of 64 KiB transfers each way the same two ways
(rstream-bw, rstream-native-bw: one stream's rate with calls rsocket's
preload takes, where iperf3 cannot run under it); and perftest's
ib_send_lat and ib_write_lat (kernel mode only: they are verbs programs),
which give the round trip of rxe0 itself.

  preload_two.py serve --addr A --ctl PORT --build BUILD        (guest A)
  preload_two.py drive --peer A --ctl PORT --build BUILD --out FILE
                 [--rounds 3] [--seconds 3] [--scale 0.05] [--apps LIST]  (guest B)
  preload_two.py check --peer A --ctl PORT --build BUILD --out FILE  (guest B)

check: the programs' checks (rb2_apps: checks()) instead of their figures,
under rb2-run and under rsocket's preload: values read back, files fetched
byte for byte, BGSAVE during traffic, both directions of iperf3. Under
rb2-run each must pass with every connection over verbs and none failed
(its processes' stats lines say so): a PASS or FAIL line each. What rsocket
cannot run is an INFO line with the reason; the JSON (FILE) keeps both.

B drives: over a control connection (kernel TCP) it asks A to start a
server in a mode, runs the clients in the same mode, and asks A to stop it.
A client that fails or hangs (each has a deadline) is recorded with why,
and the run goes on: rsocket's preload cannot run every program, and the
JSON says which and how each failed.

Per client B also counts the RoCE packets rxe0 sent and received (its
hw_counters), per request where the client makes requests: what crossed
the wire for each, whatever library put it there. Every counter that moved
(RDMA sends and receives, retries, RNR NAKs) is kept in the round's
"_rxe_CLIENT", one per client.
Under rb2-run it also takes rb2's own counters from the client's stats
line: the send WRs its streams posted and their doorbells, per request.

The JSON (FILE): per program and mode the median of each figure over the
rounds that succeeded, every round's figures and failures; then per figure
the ratios rb2/rsocket, rb2/kernel and rsocket/kernel: the median of the
ratios within each round (lower_is_better says which way a figure points).
`preload_two.py summarize FILE` recomputes them from FILE's rounds.
"""
import argparse
import glob
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "usertools"))
import rb2_apps  # noqa: E402

MODES = ("kernel", "rsocket", "rsocket-spin", "rsocket-poll", "rsocket-wake", "rb2",
         "rb2-spin", "rb2-unbatched", "rb2-rearm", "rb2-readall", "rb2-ahead", "rb2-onebyone",
         "rb2-nolink", "rb2-ack17", "rb2-inline")
# rb2-rearm: rb2-run with every stream's CQ armed at every sleep (the verbs
# transport's rearm=1), against rb2, which arms only those whose last arm
# fired: what that costs a wait over many streams. rb2-readall: every
# armed stream's completion channel read on waking (readall=1), against
# rb2, which reads only those its wait saw readable. rb2-ahead: two ends
# of streams kept made ahead of their connections by a thread
# (RB2_RUN_AHEAD=2), against rb2, which makes each on the program's thread:
# what that saves a connect. rb2-onebyone: each stream's three queues
# connected in an exchange each (the verbs transport's onebyone=1), against
# rb2, which sends all three in one message each way: what that saves a
# connect. rb2-nolink: the guests' rb2-sockd opening a TCP connection to
# the other's for every question (RB2_SOCKD_LINK_IDLE_MS=0), against rb2,
# whose services keep one link for them: what that saves a connect.
# rb2-ack17: the queues waiting 0.54 s for an ACK (ack_timeout=17), against
# rb2's 67 ms: what the shorter wait gives where rxe retries. rb2-inline:
# each stream's set-up made inside the program's connect() or accept()
# (RB2_RUN_SETUP=inline), against rb2, which makes it in the background:
# how long a server's event loop is held by an accept. These seven run
# only when named (--modes, RB2_PRELOAD_MODES).
ONLY_NAMED = ("rb2-rearm", "rb2-readall", "rb2-ahead", "rb2-onebyone", "rb2-nolink",
              "rb2-ack17", "rb2-inline")
DEFAULT_MODES = tuple(m for m in MODES if m not in ONLY_NAMED)
# rb2-unbatched: rb2-run with every write sent at once (RB2_RUN_BATCH_US=0),
# against rb2: what batching writes behind one in flight gives.
# rb2-spin: rb2-run's waits spin this long (ns) before they sleep, as
# rsocket-spin's do: set against rb2's p50, the cost of a wake-up. The
# ping-pongs alone: elsewhere a spinning waiter only takes the CPU.
RB2_SPIN_NS = 1000000000
SPIN_APPS = ("pingpong", "sockperf")
# rsocket reads its tunables from files here (run.sh's guest mounts a tmpfs
# on it, so that nothing outlives the boot).
RS_CONF = "/etc/rdma/rsocket"
# rsocket-spin: its blocking calls poll the completion queue this long (µs)
# before they sleep on the completion channel (default 10).
RS_SPIN_US = 1000000
# rsocket-wake: rpoll() sleeps at most this long (ms) before it looks at
# every rsocket again (wake_up_interval, default 5000).
RS_WAKE_MS = 10
RXE = "/sys/class/infiniband/rxe0/ports/1/hw_counters"


def rspreload():
    libs = sorted(glob.glob("/usr/lib/*/rsocket/librspreload.so*"))
    if not libs:
        sys.exit("preload_two: no librspreload.so (Debian's librdmacm1 ships it)")
    return libs[0]


def modes_of(app, only=MODES):
    """rsocket-poll: the server on poll() (rb2_apps: can_poll), for programs
    that can be told to, as rsocket's preload here has no epoll;
    rsocket-wake for those and for programs that wait in poll() anyway
    (.waits_in_poll). A recipe with .modes runs in those alone."""
    return [m for m in MODES if m in only and (m != "rsocket-poll" or app.can_poll) and
            (m != "rsocket-wake" or app.can_poll or getattr(app, "waits_in_poll", False)) and
            (m != "rb2-spin" or app.name in SPIN_APPS) and
            m in getattr(app, "modes", MODES)]


def rsocket_conf(mode):
    """Write rsocket's tunables for @mode: polling_time for rsocket-spin,
    wake_up_interval for rsocket-wake; each removed (its default) for any
    other mode."""
    for name, value, mine in (("polling_time", RS_SPIN_US, "rsocket-spin"),
                              ("wake_up_interval", RS_WAKE_MS, "rsocket-wake")):
        path = os.path.join(RS_CONF, name)
        if mode == mine:
            os.makedirs(RS_CONF, exist_ok=True)
            with open(path, "w") as f:
                f.write(f"{value}\n")
        elif os.path.exists(path):
            os.remove(path)


SOCKD_NOLINK_MARK = "/tmp/rb2-preload-nolink"


def sockd_conf(mode, build):
    """Make this guest's rb2-sockd the one @mode needs: rb2-nolink's asks
    on a new link for every question (RB2_SOCKD_LINK_IDLE_MS=0, in the
    environment rb2-run starts it with), every other mode's keeps one. The
    other kind, if it runs, is stopped, and rb2-run starts the right one."""
    want = mode == "rb2-nolink"
    if os.path.exists(SOCKD_NOLINK_MARK) == want:
        return
    sockd = os.path.join(build, "apps", "rb2-sockd", "rb2-sockd")
    subprocess.run([sockd, "--stop"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=False)
    for _ in range(100):
        if subprocess.run([sockd, "--stats"], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, check=False).returncode != 0:
            break
        time.sleep(0.05)
    if want:
        open(SOCKD_NOLINK_MARK, "w").close()
    else:
        os.remove(SOCKD_NOLINK_MARK)


def mode_launch(mode, build, env, app=None):
    """@return (argv prefix, environment) that put a program in @mode, and
    set rsocket's tunables (rsocket_conf()) and rb2-sockd (sockd_conf()) for
    it on this guest."""
    rsocket_conf(mode)
    sockd_conf(mode, build)
    if mode in ("rsocket-poll", "rsocket-wake"):
        return [], dict(env, LD_PRELOAD=rspreload(), **getattr(app, "poll_env", {}))
    if mode in ("rsocket", "rsocket-spin"):
        # a program that calls rsocket itself runs without the preload
        return [], dict(env) if getattr(app, "native", False) else dict(env,
                                                                         LD_PRELOAD=rspreload())
    knobs = {"rb2": {}, "rb2-spin": {"RB2_RUN_SPIN_NS": str(RB2_SPIN_NS)},
             "rb2-unbatched": {"RB2_RUN_BATCH_US": "0"},
             "rb2-rearm": {"RB2_RUN_VERBS_ARGS": "rearm=1"},
             "rb2-readall": {"RB2_RUN_VERBS_ARGS": "readall=1"},
             "rb2-ahead": {"RB2_RUN_AHEAD": "2"},
             "rb2-onebyone": {"RB2_RUN_VERBS_ARGS": "onebyone=1"},
             "rb2-nolink": {"RB2_SOCKD_LINK_IDLE_MS": "0"},
             "rb2-ack17": {"RB2_RUN_VERBS_ARGS": "ack_timeout=17"},
             "rb2-inline": {"RB2_RUN_SETUP": "inline"}}
    if mode in knobs:
        knob = knobs[mode]
        return [os.path.join(build, "apps", "rb2-run", "rb2-run")], dict(env, RB2_RUN_STATS="1",
                                                                          **knob)
    return [], dict(env)


class Rstream:
    """rdma-core's own benchmark, rstream, as a 64 B ping-pong (-C 1: one
    transfer each way an iteration) through the socket calls (-T s), which
    the preloads wrap: by default non-blocking, retrying at once on EAGAIN
    (a spinning reader); with @blocking (-T b) blocking calls with
    MSG_WAITALL. With @native, through rsocket's own calls (no -T s), no
    preload: in the rsocket modes only. With @size above 64, its bandwidth
    test instead: @count transfers of @size bytes from the client, then as
    many back (-C count -I 1), in Gbit/s over both halves: one stream a
    way at a time, what iperf3 measures, with calls rsocket's preload
    takes (named -bw, blocking in all three uses). Its server takes one
    client, then exits."""
    tools = ("rstream",)
    can_poll = False

    def __init__(self, blocking, count=1000, native=False, size=64):
        self.name = ("rstream" + ("-native" if native else "") +
                     ("-bw" if size > 64 else "-block" if blocking else ""))
        self.opts = ([] if native else ["-T", "s"]) + (["-T", "b"] if blocking else [])
        self.count, self.native, self.size = count, native, size
        if native:
            self.modes = ("rsocket", "rsocket-spin")

    def args(self, port, n):
        if self.size > 64:
            return ["-p", str(port), "-S", str(self.size), "-C", str(n), "-I", "1"] + self.opts
        return ["-p", str(port), "-S", "64", "-C", "1", "-I", str(n)] + self.opts

    def server(self, addr, port, workdir):
        return ["rstream", "-b", addr] + self.args(port, self.count)

    def clients(self, addr, port, seconds, scale=1.0):
        key = self.name.replace("-", "_")
        bw = self.size > 64

        def parse(out):
            # name bytes xfers iters total time Gb/sec usec/xfer
            m = re.search(r"^\S+\s+\S+\s+\S+\s+\S+\s+\S+\s+([\d.]+)s\s+([\d.]+)\s+([\d.]+)$",
                          out, re.M)
            if not m:
                raise ValueError(f"no result line in rstream's output: {out[-300:]!r}")
            if bw:
                # from the time: its Gb/sec has two decimals, 0.13 here
                nbytes = 2 * self.count * self.size
                return {key + "_gbps": 8 * nbytes / float(m.group(1)) / 1e9, "_bytes": nbytes}
            return {key + "_us_per_xfer": float(m.group(3))}
        # the server counts the same transfers: scale leaves both as they are
        argv = ["rstream", "-s", addr] + self.args(port, self.count)
        if bw:
            return [rb2_apps.Client("client", argv, parse, key + "_cpu_s_per_gb")]
        return [rb2_apps.Client("client", argv, parse, requests=2 * self.count)]


def last_json(text, who):
    """The JSON object on the last line of @text, which @who printed, or
    ValueError saying it is not there."""
    try:
        return json.loads(text.strip().splitlines()[-1])
    except (ValueError, IndexError) as e:
        raise ValueError(f"no JSON from {who} ({e}): {text[-300:]!r}")


class PingPongConns:
    """tests/rb2run_pingpong's clients against its pollserver: 64 B
    messages on 1 and on 50 connections, one out on each at a time, all in
    one thread a side waiting in poll(): redis-benchmark -c 1 and -c 50's
    load (-P 1), round trips a second, with the calls rsocket's preload
    takes (it has no epoll, which Redis and memcached wait in)."""
    name = "pingpong-conns"
    tools = ()
    can_poll = False
    waits_in_poll = True
    CONNS = (1, 50)

    def __init__(self, build):
        self.prog = os.path.join(build, "tests", "rb2run_pingpong")

    def server(self, addr, port, workdir):
        return [self.prog, "pollserver", str(port), addr]

    def clients(self, addr, port, seconds, scale=1.0):
        out = []
        for n in self.CONNS:
            def parse(text, n=n):
                res = last_json(text, "the clients")
                if res["round_trips"] == 0:
                    raise ValueError("no round trip")
                return {f"pingpong_c{n}_rps": res["per_s"], "_requests": res["round_trips"]}
            out.append(rb2_apps.Client(f"c{n}", [self.prog, "clients", str(port), "64", str(n),
                                                 str(seconds), addr], parse,
                                       f"pingpong_c{n}_cpu_us_per_req"))
        return out


class AcceptStall:
    """tests/rb2run_pingpong stall against its pollserver: one connection's
    64 B round trips while another process of the client's opens NEW more
    to the same server, one after another, which the server's one thread
    accepts in its poll loop. The round trips' p99 and longest, and the
    time the NEW connects took: how long each accept held the server's
    loop, its other client waiting."""
    name = "acceptstall"
    tools = ()
    can_poll = False
    modes = ("kernel", "rb2", "rb2-inline")
    NEW = 8

    def __init__(self, build):
        self.prog = os.path.join(build, "tests", "rb2run_pingpong")

    def server(self, addr, port, workdir):
        return [self.prog, "pollserver", str(port), addr]

    def clients(self, addr, port, seconds, scale=1.0):
        n = max(200, int(2000 * scale))

        def parse(text):
            res = last_json(text, "the client")
            return {"acceptstall_p50_ns": res["p50_ns"], "acceptstall_p99_ns": res["p99_ns"],
                    "acceptstall_max_ns": res["max_ns"],
                    "acceptstall_connect_all_s": res["connect_all_ms"] / 1000,
                    "_acceptstall_child_ms": {k[len("child_"):]: res[k] for k in res
                                              if k.startswith("child_")},
                    "_requests": res["count"]}
        return [rb2_apps.Client("client", [self.prog, "stall", str(port), "64", str(n),
                                           str(self.NEW), addr], parse)]


class Scale:
    """The scaling table: 1, 16, 256 and 1000 connections from one client
    process to one server process (tests/rb2run_peer.py scale and
    scale-sink, plain sockets), each written on whenever it takes 64 KiB,
    for the run's seconds: the aggregate Gbit/s the sink read, and the
    RDMA QPs the client's host has per connection while they are open
    (iproute2's rdma).

    Not under rsocket's preload: Python opens its sockets with SOCK_CLOEXEC
    in the type, which rsocket() refuses (ENOTSUP: it takes SOCK_STREAM
    alone), and the preload then gives the program a kernel socket. A run
    would measure kernel TCP and call it rsocket."""
    name = "scale"
    tools = ()
    can_poll = False
    modes = ("kernel", "rb2", "rb2-rearm", "rb2-readall", "rb2-ahead", "rb2-onebyone",
             "rb2-nolink", "rb2-ack17")
    COUNTS = tuple(int(c) for c in
                   os.environ.get("RB2_PRELOAD_SCALE_COUNTS", "1,16,256,1000").split(","))
    PEER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "rb2run_peer.py")

    def server(self, addr, port, workdir):
        return ["env", f"RB2_PEER_HOST={addr}", "python3", self.PEER, "scale-sink", str(port)]

    def clients(self, addr, port, seconds, scale=1.0):
        out = []
        for n in self.COUNTS:
            def parse(text, n=n):
                res = last_json(text, "the scale client")
                figs = {f"scale_c{n}_gbps": 8 * res["bytes"] / res["seconds"] / 1e9,
                        f"scale_c{n}_connect_s": res["connect_seconds"], "_bytes": res["bytes"]}
                if res["qps_added"] is not None:
                    figs[f"scale_c{n}_rdma_qps_per_conn"] = res["qps_added"] / n
                return figs
            cl = rb2_apps.Client(f"c{n}", ["env", f"RB2_PEER_HOST={addr}", "python3", self.PEER,
                                           "scale", str(port), str(n), str(seconds)], parse)
            cl.deadline = 600         # 1000 connections set up one after the other
            out.append(cl)
        return out


class PerftestLat:
    """perftest's ib_send_lat or ib_write_lat between the guests over rxe0,
    64 B, polling: the verbs round trip with nothing on top, halved, as
    perftest reports it (t_typical, µs). Its own TCP port carries the
    set-up; no preload applies, so it runs in the kernel mode alone."""
    can_poll = False
    modes = ("kernel",)

    def __init__(self, op, count=1000):
        self.tool = f"ib_{op}_lat"
        self.name, self.tools, self.count = self.tool, (self.tool,), count

    def args(self, port):
        return ["-d", "rxe0", "-x", "1", "-s", "64", "-n", str(self.count), "-p", str(port)]

    def server(self, addr, port, workdir):
        return [self.tool] + self.args(port)

    def clients(self, addr, port, seconds, scale=1.0):
        key = f"{self.tool}_typical_us"

        def parse(out):
            # #bytes #iterations t_min t_max t_typical t_avg ...
            m = re.search(r"^\s*64\s+\d+\s+[\d.]+\s+[\d.]+\s+([\d.]+)", out, re.M)
            if not m:
                raise ValueError(f"no result line in {self.tool}'s output: {out[-300:]!r}")
            return {key: float(m.group(1))}
        return [rb2_apps.Client("client", [self.tool] + self.args(port) + [addr], parse,
                                requests=self.count)]


def apps(o):
    """The programs by name: rb2_apps' table, the plain ping-pong on one
    connection and on many, and the references (rstream in its six forms,
    perftest's latency tools)."""
    # 1000 round trips at the default scale
    return dict(rb2_apps.ALL, pingpong=rb2_apps.PingPong(o.build, 64, 20000),
                rstream=Rstream(False), **{"pingpong-conns": PingPongConns(o.build),
                                           "rstream-block": Rstream(True, 200),
                                           "rstream-native": Rstream(False, native=True),
                                           "rstream-native-block": Rstream(True, 200, True),
                                           "rstream-bw": Rstream(True, 400, size=65536),
                                           "rstream-native-bw": Rstream(True, 400, True, 65536),
                                           "scale": Scale(),
                                           "acceptstall": AcceptStall(o.build),
                                           "ib_send_lat": PerftestLat("send"),
                                           "ib_write_lat": PerftestLat("write")})


def lines(sock):
    """JSON objects, one a line, from @sock until it closes."""
    buf = b""
    while True:
        while b"\n" not in buf:
            got = sock.recv(4096)
            if not got:
                return
            buf += got
        line, buf = buf.split(b"\n", 1)
        yield json.loads(line)


def send(sock, obj):
    sock.sendall(json.dumps(obj).encode() + b"\n")


# ---- guest A ---------------------------------------------------------------

def blocked_in(pid):
    """Where each thread of @pid waits: its kernel wait channel and system
    call number (/proc), for a server that does not end."""
    out = []
    for t in sorted(glob.glob(f"/proc/{pid}/task/*")):
        try:
            out.append(f"{os.path.basename(t)}: {open(t + '/wchan').read()} "
                       f"syscall {open(t + '/syscall').read().split(' ')[0]}")
        except OSError:
            pass
    return "; ".join(out)


class Server:
    """One program's server in one mode, on A."""

    def __init__(self, o, req):
        self.app = apps(o)[req["app"]]
        self.mode = req["mode"]
        self.port = req["port"]
        self.tmp = tempfile.mkdtemp(prefix=f"srv-{self.app.name}-")
        pre, env = mode_launch(self.mode, o.build, os.environ, self.app)
        self.err = open(os.path.join(self.tmp, "stderr"), "w+")
        self.proc = subprocess.Popen(pre + self.app.server(o.addr, self.port, self.tmp),
                                     stdout=subprocess.DEVNULL, stderr=self.err, env=env,
                                     cwd=self.tmp, start_new_session=True)

    def ready(self):
        """Listening, or @return why not. Under TCG a server under rsocket's
        preload takes seconds to open the device."""
        t0 = time.time()
        while time.time() - t0 < 60:
            if self.proc.poll() is not None:
                return f"the server exited ({self.proc.returncode}): {self.stderr()}"
            if rb2_apps.listening(self.port, self.mode.startswith("rsocket")):
                return None
            time.sleep(0.2)
        return f"nothing listened on port {self.port} within 60 s: {self.stderr()}"

    def stderr(self):
        """The tail of the server's stderr, after every line rb2-run said
        (its stats, and why a stream failed), which a traceback's tail
        would push out."""
        self.err.flush()
        self.err.seek(0)
        text = self.err.read()
        said = [ln for ln in text.splitlines() if ln.startswith("rb2-run")][-20:]
        return "\n".join(said + ["..."] if said else []) + text[-400:]

    def stop(self):
        """SIGTERM to its process group, SIGKILL after 10 s. @return how it
        ended."""
        how = "terminated"
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                where = blocked_in(self.proc.pid)
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
                how = f"killed: SIGTERM did not end it within 10 s ({where})"
        else:
            how = f"had exited ({self.proc.returncode})"
        return {"ended": how, "stderr": self.stderr()}


def serve(o):
    ls = socket.create_server((o.addr, o.ctl))
    conn, _ = ls.accept()
    srv = None
    for req in lines(conn):
        if req["cmd"] == "start":
            srv = Server(o, req)
            why = srv.ready()
            send(conn, {"ok": why is None, "error": why})
        elif req["cmd"] == "stop":
            send(conn, srv.stop() if srv else {"ended": "no server"})
            srv = None
        elif req["cmd"] == "bye":
            break
    if srv:
        srv.stop()
    return 0


# ---- guest B ---------------------------------------------------------------

def rxe_counters():
    """rxe0's counters ({} without rxe0): packets, RDMA sends and receives,
    retries, RNR NAKs, ..."""
    try:
        return {f: int(open(os.path.join(RXE, f)).read()) for f in sorted(os.listdir(RXE))}
    except OSError:
        return {}


def own_lines(r):
    """What a program that failed printed, its own lines kept whole: the
    stats lines of rb2-run, long, would push them out of the 300
    characters a report keeps. They are counted instead."""
    lines = (r.stdout + r.stderr).splitlines()
    stats = sum(ln.startswith("rb2-run: pid ") for ln in lines)
    own = "\n".join(ln for ln in lines if not ln.startswith("rb2-run: pid "))
    return f"{own[-300:]!r}" + (f" (and {stats} stats line(s) of rb2-run)" if stats else "")


def run_client(o, mode, app, cl):
    """@return (figures, None) or (None, why)."""
    pre, env = mode_launch(mode, o.build, os.environ, app)
    deadline = getattr(cl, "deadline", 4 * o.seconds + 120)
    c0 = rxe_counters()
    try:
        r = subprocess.run(pre + cl.argv, capture_output=True, text=True, env=env,
                           timeout=deadline, start_new_session=True)
    except subprocess.TimeoutExpired as e:
        # (bytes here even with text=True)
        out = "".join(x.decode(errors="replace") if isinstance(x, bytes) else x or ""
                      for x in (e.stdout, e.stderr))
        return None, f"hung: no result within {deadline} s ({out[-200:]!r})"
    if r.returncode != 0:
        return None, f"exit {r.returncode}: {own_lines(r)}"
    try:
        figs = cl.parse(r.stdout + r.stderr if cl.stderr else r.stdout)
    except ValueError as e:
        return None, str(e)
    n, _ = cl.counts(figs)
    c1 = rxe_counters()
    delta = {k: c1[k] - c0[k] for k in c1 if k in c0 and c1[k] != c0[k]}
    if c0 and c1 and n:
        figs[f"{app.name}_{cl.name}_rxe_pkts_per_req"] = (
            delta.get("sent_pkts", 0) + delta.get("rcvd_pkts", 0)) / n
    figs[f"_rxe_{cl.name}"] = delta   # every counter that moved, for the record
    if mode.startswith("rb2"):
        stats = [ln for ln in r.stderr.splitlines() if "connections over rb2" in ln]
        figs[f"_rb2_run_stats_{cl.name}"] = stats[-1] if stats else "no stats line"
        # rb2's own counters, the client's side: the send WRs its streams
        # posted and the doorbells that carried them.
        m = re.search(r"\((\d+) WRs in (\d+) doorbells[;)]", stats[-1]) if stats else None
        if m and n:
            figs[f"{app.name}_{cl.name}_rb2_wrs_per_req"] = int(m.group(1)) / n
            figs[f"{app.name}_{cl.name}_rb2_doorbells_per_req"] = int(m.group(2)) / n
        # Writes batched behind one in flight (the rb2-run guide: "Small writes batch").
        m = re.search(r"; (\d+) writes batched \((\d+) batches sent by a flush\)", stats[-1]) \
            if stats else None
        if m and n:
            figs[f"{app.name}_{cl.name}_rb2_batched_per_req"] = int(m.group(1)) / n
        # Sleeps, and the wake-ups (CQ arms) they asked of the device: the
        # rb2-run guide's "The data wakes the reader".
        m = re.search(r"; (\d+) sleeps asked the device for (\d+) wake-ups"
                      r"(?: and read its channels (\d+) times)?", stats[-1]) if stats else None
        if m and n:
            figs[f"{app.name}_{cl.name}_rb2_sleeps_per_req"] = int(m.group(1)) / n
            figs[f"{app.name}_{cl.name}_rb2_wake_requests_per_req"] = int(m.group(2)) / n
            if m.group(3) is not None:
                figs[f"{app.name}_{cl.name}_rb2_wake_reads_per_req"] = int(m.group(3)) / n
        # Where a stream's set-up went, the client's side (for the record).
        m = re.search(r"set-up per stream, mean ms: (.*?)\)", stats[-1]) if stats else None
        if m:
            figs[f"_rb2_setup_ms_{cl.name}"] = {
                k.strip(): float(v) for k, v in
                (part.rsplit(" ", 1) for part in m.group(1).split(", "))}
    return figs, None


PAIRS = (("rb2", "rsocket"), ("rb2", "rsocket-spin"), ("rb2-spin", "rsocket-spin"),
         ("rb2", "rb2-spin"), ("rb2", "rb2-unbatched"), ("rb2-unbatched", "kernel"),
         ("rb2", "rb2-rearm"), ("rb2-rearm", "kernel"),
         ("rb2", "rb2-readall"), ("rb2-readall", "kernel"),
         ("rb2", "rb2-ahead"), ("rb2-ahead", "kernel"),
         ("rb2", "rb2-onebyone"), ("rb2-onebyone", "kernel"),
         ("rb2", "rb2-nolink"), ("rb2-nolink", "kernel"),
         ("rb2", "rb2-ack17"), ("rb2-ack17", "kernel"),
         ("rb2", "rsocket-poll"), ("rb2", "rsocket-wake"), ("rb2", "kernel"),
         ("rsocket", "kernel"), ("rsocket-spin", "kernel"), ("rsocket-poll", "kernel"),
         ("rsocket-wake", "kernel"))


def summarize(out):
    """Fill @out's medians (per program and mode, over the rounds that gave
    the figure) and ratios: per figure and pair of modes, the median of the
    ratios within a round (both modes ran minutes apart, on the vCPUs of
    that time), with the rounds it rests on."""
    out["ratios"] = {}
    for modes in out["apps"].values():
        for r in modes.values():
            keys = sorted({key for fig in r["rounds"] for key in fig if not key.startswith("_")})
            r["median"] = {key: statistics.median([f[key] for f in r["rounds"] if key in f])
                           for key in keys}
        for key in sorted(set().union(*(r["median"].keys() for r in modes.values()))):
            ratio = {}
            for a, b in PAIRS:
                if a not in modes or b not in modes:
                    continue
                per = [x[key] / y[key] for x, y in zip(modes[a]["rounds"], modes[b]["rounds"])
                       if key in x and key in y and y[key]]
                if per:
                    ratio[f"{a}/{b}"] = statistics.median(per)
                    ratio[f"{a}/{b}_rounds"] = len(per)
            out["ratios"][key] = dict(ratio, lower_is_better=rb2_apps.cost(key))


def connect_ctl(o):
    """The control connection to A's serve (retried while A boots)."""
    for _ in range(600):
        try:
            return socket.create_connection((o.peer, o.ctl), timeout=600)
        except OSError:
            time.sleep(0.5)
    sys.exit(f"preload_two: A's control port {o.peer}:{o.ctl} never answered")


def drive(o):
    ctl = connect_ctl(o)
    replies = lines(ctl)
    table = apps(o)
    run = [table[a] for a in o.apps.split(",")]
    only = o.modes.split(",")
    bad = [m for m in only if m not in MODES]
    if bad:
        sys.exit(f"preload_two: no mode {','.join(bad)} (modes: {','.join(MODES)})")
    res = {a.name: {m: {"rounds": [], "failures": []} for m in modes_of(a, only)} for a in run}
    port = 31000
    for k in range(o.rounds):
        for app in run:
            ms = modes_of(app, only)
            if not ms:
                continue
            for mode in ms[k % len(ms):] + ms[:k % len(ms)]:
                port += 1
                send(ctl, {"cmd": "start", "app": app.name, "mode": mode, "port": port})
                rep = next(replies)
                figs, fails = {}, []
                if rep["ok"]:
                    for cl in app.clients(o.peer, port, o.seconds, o.scale):
                        f, why = run_client(o, mode, app, cl)
                        if why:
                            fails.append({"client": cl.name, "why": why})
                        else:
                            figs.update(f)
                else:
                    fails.append({"client": "(server)", "why": rep["error"]})
                send(ctl, {"cmd": "stop"})
                end = next(replies)
                if fails:
                    fails[-1]["server"] = end
                res[app.name][mode]["rounds"].append(figs)
                res[app.name][mode]["failures"] += [dict(f, round=k + 1) for f in fails]
                print(f"preload: round {k + 1} {app.name} {mode}: {figs} "
                      f"{'; '.join(f['client'] + ': ' + f['why'] for f in fails)}", flush=True)
    send(ctl, {"cmd": "bye"})
    out = {"rounds": o.rounds, "seconds": o.seconds, "scale": o.scale,
           "what": "server in guest A, clients in guest B, over Soft-RoCE (rxe) under QEMU TCG",
           "modes": {"kernel": "kernel TCP", "rsocket": f"LD_PRELOAD={rspreload()}",
                     "rsocket-spin": f"the same, with {RS_CONF}/polling_time "
                                     f"{RS_SPIN_US} us on both ends (default 10)",
                     "rsocket-poll": "the same as rsocket, the server told to wait in "
                                     "poll() (memcached: EVENT_NOEPOLL=1)",
                     "rsocket-wake": f"the same as rsocket-poll, with {RS_CONF}/"
                                     f"wake_up_interval {RS_WAKE_MS} ms on both ends "
                                     "(default 5000)",
                     "rb2": "rb2-run",
                     "rb2-spin": f"rb2-run, its waits spinning up to {RB2_SPIN_NS} ns "
                                 "before they sleep (RB2_RUN_SPIN_NS)",
                     "rb2-unbatched": "rb2-run, every write sent at once "
                                      "(RB2_RUN_BATCH_US=0)",
                     "rb2-rearm": "rb2-run, every stream's CQ armed at every sleep "
                                  "(RB2_RUN_VERBS_ARGS=rearm=1)",
                     "rb2-readall": "rb2-run, every armed stream's completion channel "
                                    "read on waking (RB2_RUN_VERBS_ARGS=readall=1)",
                     "rb2-ahead": "rb2-run, two ends of streams kept made ahead of their "
                                  "connections (RB2_RUN_AHEAD=2)",
                     "rb2-onebyone": "rb2-run, each stream's three queues connected in "
                                     "an exchange each (RB2_RUN_VERBS_ARGS=onebyone=1)",
                     "rb2-nolink": "rb2-run, the services asking each other on a new TCP "
                                   "connection for every connect "
                                   "(RB2_SOCKD_LINK_IDLE_MS=0)",
                     "rb2-ack17": "rb2-run, the queues waiting 0.54 s for an ACK "
                                  "(RB2_RUN_VERBS_ARGS=ack_timeout=17)",
                     "rb2-inline": "rb2-run, each stream's set-up made inside the "
                                   "program's connect() or accept() (RB2_RUN_SETUP=inline)"},
           "apps": {name: {mode: {"rounds": r["rounds"], "failures": r["failures"]}
                           for mode, r in modes.items()} for name, modes in res.items()}}
    summarize(out)
    with open(o.out, "w") as f:
        json.dump(out, f, indent=1)
    print(f"preload: wrote {o.out}")
    return 0


def over_verbs(stderr):
    """None if rb2-run's stats lines in @stderr show connections to the
    other host over verbs, and none kernel TCP or failed; else why not."""
    stats = [ln for ln in stderr.splitlines() if "connections over rb2" in ln]
    if not any("of them to other hosts, over verbs" in ln for ln in stats):
        return f"no connection over verbs: {stats[-3:]!r}"
    bad = [ln for ln in stats if "kernel TCP" in ln or not re.search(r", 0 failed", ln)]
    return f"kernel TCP or failed: {bad[:2]!r}" if bad else None


def run_check(o, mode, app, cl, work, limit):
    """One check @cl of @app in @mode, from B: @return None, or why it failed."""
    pre, env = mode_launch(mode, o.build, os.environ, app)
    try:
        r = subprocess.run(pre + cl.argv, capture_output=True, text=True, env=env,
                           timeout=limit, cwd=work, start_new_session=True)
        if r.returncode != 0:
            return f"exit {r.returncode}: {own_lines(r)}"
        cl.parse(r.stdout + r.stderr if cl.stderr else r.stdout)
    except subprocess.TimeoutExpired:
        return f"hung: no result within {limit} s"
    except ValueError as e:
        # rb2-run's stats lines, and the programs' own last words (why a
        # client gave up: memccat's time-out, say)
        lines = r.stderr.splitlines()
        said = ([ln for ln in lines if ln.startswith("rb2-run")][-4:] +
                [ln for ln in lines if not ln.startswith("rb2-run")][-4:])
        return f"{e}; its stderr: {said!r}" if said else str(e)
    return over_verbs(r.stderr) if mode == "rb2" else None


def check(o):
    """The checks of each program under rb2-run and rsocket's preload; @return
    1 if one failed under rb2-run."""
    ctl = connect_ctl(o)
    replies = lines(ctl)
    table = apps(o)
    work = tempfile.mkdtemp(prefix="check-")
    res, failed, port = {}, 0, 32000
    # Each check takes seconds (the twelve under rb2-run, with their
    # servers' starts, under two minutes in all); rsocket's preload hangs in
    # some (nginx's curl, iperf3 forward): what it cannot run within 15 s,
    # it cannot run. (Each hang costs the full tier that bound.)
    limit_of = {"rb2": 180, "rsocket": 15}
    for name in o.apps.split(","):
        app = table[name]
        for mode in ("rb2", "rsocket"):
            port += 1
            send(ctl, {"cmd": "start", "app": name, "mode": mode, "port": port})
            rep = next(replies)
            if rep["ok"]:
                whys = {cl.name: run_check(o, mode, app, cl, work, limit_of[mode])
                        for cl in app.checks(o.peer, port, work)}
            else:
                whys = {"(server)": rep["error"]}
            for what, why in whys.items():
                res.setdefault(name, {}).setdefault(mode, {})[what] = why or "ok"
                if mode == "rb2":
                    failed += why is not None
                    print(f"{'FAIL' if why else 'PASS'} two_guests_app_{name}_{what} (rb2-run"
                          f"{': ' + why if why else ', over verbs'})", flush=True)
                else:
                    print(f"INFO rsocket's preload: {name} {what}: {why or 'ok'}", flush=True)
            send(ctl, {"cmd": "stop"})
            end = next(replies)
            if mode == "rb2" and end["ended"] != "terminated":
                failed += 1
                print(f"FAIL two_guests_app_{name}_server (rb2-run: {end['ended']}: "
                      f"{end['stderr'][-200:]!r})", flush=True)
    send(ctl, {"cmd": "bye"})
    with open(o.out, "w") as f:
        json.dump({"checks": res, "what": "server in guest A, clients in guest B"}, f, indent=1)
    print(f"check: {failed} failed under rb2-run; wrote {o.out}")
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="role", required=True)
    m = sub.add_parser("summarize", help="recompute FILE's medians and ratios from its rounds")
    m.add_argument("file")
    s = sub.add_parser("serve")
    s.add_argument("--addr", required=True)
    d = sub.add_parser("drive")
    d.add_argument("--peer", required=True)
    d.add_argument("--out", required=True)
    d.add_argument("--rounds", type=int, default=3)
    d.add_argument("--seconds", type=int, default=3)
    d.add_argument("--scale", type=float, default=0.05,
                   help="request counts of redis-benchmark and memcslap, times this")
    d.add_argument("--apps", default=",".join(["pingpong", "pingpong-conns"] +
                                              list(rb2_apps.ALL)))
    d.add_argument("--modes", default=",".join(DEFAULT_MODES),
                   help="the modes to run, of " + ",".join(MODES))
    c = sub.add_parser("check")
    c.add_argument("--peer", required=True)
    c.add_argument("--out", required=True)
    c.add_argument("--apps", default=",".join(rb2_apps.ALL))
    for p in (s, d, c):
        p.add_argument("--ctl", type=int, default=21999)
        p.add_argument("--build", required=True)
    o = ap.parse_args()
    if o.role == "summarize":
        with open(o.file) as f:
            out = json.load(f)
        summarize(out)
        with open(o.file, "w") as f:
            json.dump(out, f, indent=1)
        return 0
    o.build = os.path.abspath(o.build)
    return serve(o) if o.role == "serve" else check(o) if o.role == "check" else drive(o)


if __name__ == "__main__":
    sys.exit(main())
