# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
"""The unmodified programs rb2-run is measured with, as recipes: how each
server starts, which clients run against it and what figures each prints.
One table for both benchmarks that run them: usertools/rb2_run_bench.py (one
host, kernel TCP against rb2-run) and tests/verbs-vm/preload_two.py (two
guests, kernel TCP against rsocket's preload and rb2-run). Adding a program
to both means adding one class here.

A recipe knows nothing of modes: the caller puts its launcher (rb2-run) or
its environment (LD_PRELOAD) around the argv it gets. A recipe with
can_poll runs its server on poll() instead of epoll in the environment
poll_env: rsocket's preload as Debian 12 ships it (rdma-core 44) wraps poll
and select but not epoll.

Figures are named by what they measure: a key ending in _ns, _us or _s, or
with _cpu_ or _per_ in it, is a cost (lower is better); any other is a rate.

A recipe's checks() are clients too, whose parse() raises ValueError unless
what came back is right, byte for byte (tests/verbs-vm/preload_two.py check).
"""
import glob
import hashlib
import json
import os
import pwd
import re
import subprocess


class Client:
    """One client run: its argv, and parse(), which finds its figures in its
    stdout (and stderr, with @stderr) or raises ValueError with the reason.
    @cpu names the figure of the CPU it costs: per request (@requests of
    them, or the "_requests" parse() found), or per GB (the "_bytes" it
    found) for a key ending in _per_gb. Keys starting with _ are not
    figures: the caller pops them."""

    def __init__(self, name, argv, parse, cpu=None, requests=None, stderr=False):
        self.name, self.argv, self.parse = name, argv, parse
        self.cpu, self.requests, self.stderr = cpu, requests, stderr

    def counts(self, figs):
        """Pop the _keys of counts from @figs; @return (requests made, bytes
        moved), None where not known."""
        return figs.pop("_requests", self.requests), figs.pop("_bytes", None)

    def cpu_figure(self, figs, cpu_s):
        """Pop the _keys from @figs; @return {cpu key: its value} or {}."""
        n, nbytes = self.counts(figs)
        if self.cpu is None:
            return {}
        if self.cpu.endswith("_per_gb"):
            return {self.cpu: cpu_s / (nbytes / 1e9)}
        return {self.cpu: 1e6 * cpu_s / n}


def cost(key):
    """Is @key a cost (lower is better), not a rate: a time, or something
    spent per request or per GB?"""
    return key.endswith(("_ns", "_us", "_s")) or "_cpu_" in key or "_per_" in key


def listening(port, rdma=False):
    """Does something listen on @port on this host, found without connecting
    (a probe would be a connection of its own; iperf3 takes it for a test)?
    A kernel socket, or with @rdma an RDMA CM id, which is what rsocket's
    listen() makes (iproute2's rdma tool)."""
    if rdma:
        r = subprocess.run(["rdma", "resource", "show", "cm_id"], capture_output=True,
                           text=True)
        return any("LISTEN" in ln and f":{port} " in ln + " " for ln in r.stdout.splitlines())
    r = subprocess.run(["ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True)
    return bool(r.stdout.strip())


def content(name, size):
    """@size bytes that both hosts can make alone: SHA-256 of @name and a
    counter, end to end."""
    out = bytearray()
    for i in range((size + 31) // 32):
        out += hashlib.sha256(b"%s-%d" % (name.encode(), i)).digest()
    return bytes(out[:size])


def _shell(cmd):
    """A check's argv: one shell line (the launcher wraps the shell, and
    every program it starts inherits it)."""
    return ["sh", "-c", cmd]


def _expect(what, want):
    """parse() for a check: its output must be @want (stripped)."""
    def parse(out):
        if out.strip() != want:
            raise ValueError(f"{what}: got {out.strip()[-300:]!r}, want {want[-300:]!r}")
        return {}
    return parse


def _need(m, what, out):
    if not m:
        raise ValueError(f"no {what} in the output: {out[-300:]!r}")
    return m


class Sockperf:
    """sockperf over TCP, 64 B: ping-pong's p50 round trip, and one-way
    message throughput (SocksDirect's "message throughput")."""
    name = "sockperf"
    tools = ("sockperf",)
    can_poll = False

    def server(self, addr, port, workdir):
        return ["sockperf", "server", "--tcp", "-i", addr, "-p", str(port)]

    def clients(self, addr, port, seconds, scale=1.0):
        base = ["--tcp", "-i", addr, "-p", str(port), "-m", "64", "-t", str(seconds)]

        def p50(out):
            return {"sockperf_p50_us": float(_need(
                re.search(r"percentile 50\.000 =\s+([\d.]+)", out), "p50", out).group(1))}

        def rate(out):
            return {"sockperf_tp_msg_rate": float(_need(
                re.search(r"Message Rate is ([\d.]+) \[msg/sec\]", out), "message rate",
                out).group(1))}
        # sockperf sizes its sequence table for ~1 M round trips a second
        # and fails past it; the kernel's ~60 k stay far below
        # Not the CPU: sockperf paces its round trips (--mps) and spins
        # between them whatever carries them.
        return [Client("ping-pong", ["sockperf", "ping-pong"] + base + ["--mps", "500000"], p50,
                       stderr=True),
                Client("throughput", ["sockperf", "throughput"] + base, rate, stderr=True)]

    def checks(self, addr, port, workdir):
        return self.clients(addr, port, 2)[:1]


class Redis:
    """redis-server; redis-benchmark GET and SET with 1 and 50 clients."""
    name = "redis"
    tools = ("redis-server", "redis-benchmark")
    can_poll = False    # its event loop is chosen when it is built: epoll

    def server(self, addr, port, workdir):
        return ["redis-server", "--port", str(port), "--bind", addr, "--save", "",
                "--appendonly", "no", "--protected-mode", "no", "--dir", workdir]

    def clients(self, addr, port, seconds, scale=1.0):
        out = []
        for c, n in ((1, 20000), (50, 100000)):
            n = max(100, int(n * scale))

            def parse(text, c=c):
                text = text.replace("\r", "\n")
                if "rror" in text:
                    raise ValueError(f"errors reported: {text[-300:]!r}")
                return {f"redis_c{c}_{op.lower()}_rps": float(_need(
                    re.search(rf"^{op}: ([\d.]+) requests per second", text, re.M),
                    f"{op} rate", text).group(1)) for op in ("SET", "GET")}
            # SET, then GET, n requests each
            out.append(Client(f"c{c}", ["redis-benchmark", "-h", addr, "-p", str(port),
                                        "-t", "get,set", "-n", str(n), "-c", str(c), "-q"],
                              parse, f"redis_c{c}_cpu_us_per_req", 2 * n))
        return out

    def checks(self, addr, port, workdir):
        cli = f"redis-cli -h {addr} -p {port}"
        value = content("redis", 3000).hex()

        def bench_ok(text):
            text = text.replace("\r", "\n")
            if "rror" in text or "requests per second" not in text:
                raise ValueError(f"redis-benchmark: {text[-300:]!r}")
            return {}

        def saved(text):
            if "rdb_last_bgsave_status:ok" not in text or "rror" in text:
                raise ValueError(f"BGSAVE: {text[-300:]!r}")
            return {}
        # BGSAVE forks the server while 10 clients keep it busy
        bgsave = (f"redis-benchmark -h {addr} -p {port} -c 10 -n 20000 -t set -q > bg.out 2>&1 &"
                  f" sleep 0.5; {cli} bgsave; sleep 0.5;"
                  f" until {cli} info persistence | grep -q rdb_bgsave_in_progress:0;"
                  f" do sleep 0.2; done; wait; cat bg.out;"
                  f" {cli} info persistence | grep rdb_last_bgsave_status")
        return [Client("set-get", _shell(f"{cli} set rb2check {value} && {cli} get rb2check"),
                       _expect("SET then GET of 3000 B", "OK\n" + value)),
                Client("benchmark-P16", ["redis-benchmark", "-h", addr, "-p", str(port), "-t",
                                         "get,set", "-n", "20000", "-c", "50", "-P", "16", "-q"],
                       bench_ok),
                Client("bgsave", _shell(bgsave), saved)]


class Memcached:
    """memcached with 4 threads under memcslap's 4 simulated users: the
    time the run takes."""
    name = "memcached"
    tools = ("memcached", "memcslap")
    can_poll = True
    poll_env = {"EVENT_NOEPOLL": "1"}   # libevent's switch

    def server(self, addr, port, workdir):
        user = ["-u", "root"] if os.geteuid() == 0 else []
        return ["memcached", "-t", "4", "-l", addr, "-p", str(port), "-U", "0", "-I",
                "2m"] + user

    def clients(self, addr, port, seconds, scale=1.0):
        n = max(100, int(20000 * scale))

        def parse(out):
            # It exits 0 whatever failed, and says so on stderr
            if "Fatal error" in out or "FAILURE" in out:
                raise ValueError(f"errors reported: {out[-300:]!r}")
            return {"memcslap_s": float(_need(
                re.search(r"Time total:\s+([\d.]+) seconds", out), "total time",
                out).group(1))}
        return [Client("memcslap", ["memcslap", f"--servers={addr}:{port}", "--concurrency=4",
                                    f"--execute-number={n}"], parse,
                       "memcslap_cpu_us_per_req", 4 * n, stderr=True)]

    def checks(self, addr, port, workdir):
        """memccp stores files of 1 B, 3000 B and 1 MB (made in @workdir),
        memccat reads each back: the SHA-256 of what came (memccat ends a
        value with a newline of its own, dropped here)."""
        sums = []
        for name, size in (("one", 1), ("small", 3000), ("big", 1 << 20)):
            with open(os.path.join(workdir, name), "wb") as f:
                f.write(content(name, size))
            sums.append(hashlib.sha256(content(name, size)).hexdigest())
        srv = f"--servers={addr}:{port}"
        cmd = (f"cd {workdir} && memccp {srv} one small big && for f in one small big;"
               f" do memccat {srv} $f | head -c -1 | sha256sum | cut -d' ' -f1; done")
        return [self.clients(addr, port, 2, 0.05)[0],
                Client("memccp-memccat", _shell(cmd),
                       _expect("memccat's values", "\n".join(sums)))]


def _wrk_1k(server, addr, port, seconds):
    """wrk -t1 -c8 for @seconds on the 1 KB file /1k of an HTTP @server:
    requests a second, and wrk's p50 and p99 latency, named by the server."""
    def parse(out):
        if "Socket errors" in out or "Non-2xx" in out:
            raise ValueError(f"errors reported: {out[-300:]!r}")
        m = _need(re.search(r"Requests/sec:\s+([\d.]+)", out), "request rate", out)
        n = _need(re.search(r"(\d+) requests in", out), "request count", out)
        res = {f"{server}_1k_wrk_c8_rps": float(m.group(1)), "_requests": int(n.group(1))}
        for q in ("50", "99"):
            g = _need(re.search(rf"^\s+{q}%\s+([\d.]+)(us|ms|s)$", out, re.M), f"p{q}", out)
            res[f"{server}_wrk_p{q}_latency_us"] = (float(g.group(1)) *
                                                    {"us": 1, "ms": 1e3, "s": 1e6}[g.group(2)])
        return res
    return Client("wrk", ["wrk", "-t1", "-c8", f"-d{seconds}s", "--latency",
                          f"http://{addr}:{port}/1k"], parse, f"{server}_cpu_us_per_req")


class Nginx:
    """nginx, a master and 2 workers, sendfile on, serving a 1 KB file to
    wrk -t1 -c8: requests a second, and wrk's p50 and p99 latency."""
    name = "nginx"
    tools = ("nginx", "wrk")
    # Debian's nginx is built with epoll alone ("invalid event type poll")
    can_poll = False
    FILES = (("700b", 700), ("5m", 5 << 20))   # checks(): fetched byte for byte

    def server(self, addr, port, workdir):
        d = os.path.join(workdir, "nginx")
        os.makedirs(os.path.join(d, "www"), exist_ok=True)
        with open(os.path.join(d, "www", "1k"), "wb") as f:
            f.write(os.urandom(1024))
        for name, size in self.FILES:
            with open(os.path.join(d, "www", name), "wb") as f:
                f.write(content(name, size))
        user = "user root;\n" if os.geteuid() == 0 else ""
        with open(os.path.join(d, "nginx.conf"), "w") as f:
            f.write(f"""{user}worker_processes 2;
daemon off;
pid {d}/nginx.pid;
error_log {d}/error.log;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  sendfile on;
  client_body_temp_path {d}/tmp;
  proxy_temp_path {d}/tmp;
  fastcgi_temp_path {d}/tmp;
  uwsgi_temp_path {d}/tmp;
  scgi_temp_path {d}/tmp;
  server {{ listen {addr}:{port}; root {d}/www; }}
}}
""")
        return ["nginx", "-p", d, "-c", os.path.join(d, "nginx.conf"), "-e",
                os.path.join(d, "error.log")]

    def clients(self, addr, port, seconds, scale=1.0):
        return [_wrk_1k("nginx", addr, port, seconds)]

    def checks(self, addr, port, workdir):
        cmd = "; ".join(f"curl -sf http://{addr}:{port}/{name} | sha256sum | cut -d' ' -f1"
                        for name, _ in self.FILES)
        want = "\n".join(hashlib.sha256(content(n, size)).hexdigest() for n, size in self.FILES)
        return [Client("curl", _shell(cmd), _expect("the files curl fetched", want)),
                self.clients(addr, port, 2)[0]]


class Iperf3:
    """iperf3, one stream, client to server and server to client (-R):
    Gbit/s received, and the CPU a GB costs."""
    name = "iperf3"
    tools = ("iperf3",)
    can_poll = False    # it waits in select() already

    def server(self, addr, port, workdir):
        return ["iperf3", "-s", "-B", addr, "-p", str(port)]

    def clients(self, addr, port, seconds, scale=1.0):
        out = []
        for way, extra in (("", []), ("_reverse", ["-R"])):
            def parse(text, way=way):
                try:
                    res = json.loads(text)
                    got = res["end"]["sum_received"]
                except (ValueError, KeyError) as e:
                    raise ValueError(f"no result in iperf3's JSON ({e}): {text[-300:]!r}")
                # It can exit 0 having moved nothing, its error in the JSON.
                if "error" in res or got["bytes"] == 0:
                    raise ValueError(f"nothing moved: {res.get('error', 'no error given')}")
                return {f"iperf3{way}_gbps": got["bits_per_second"] / 1e9,
                        "_bytes": got["bytes"]}
            out.append(Client("reverse" if way else "forward",
                              ["iperf3", "-c", addr, "-p", str(port), "-t", str(seconds),
                               "-J"] + extra, parse, f"iperf3{way}_cpu_s_per_gb"))
        return out

    def checks(self, addr, port, workdir):
        return self.clients(addr, port, 2)


class PingPong:
    """tests/rb2run_pingpong: SIZE-byte round trips through plain blocking
    send() and recv(), nothing else: the p50 in ns. What sockperf's
    ping-pong measures, where sockperf cannot run (rsocket's preload
    refuses its sendto() with an address on a connected socket)."""
    name = "pingpong"
    tools = ()
    can_poll = False

    def __init__(self, build, size=64, count=100000):
        self.prog = os.path.join(build, "tests", "rb2run_pingpong")
        self.size, self.count = size, count

    def server(self, addr, port, workdir):
        return [self.prog, "server", str(port), addr]

    def clients(self, addr, port, seconds, scale=1.0):
        def parse(out):
            try:
                return {"pingpong_p50_ns": json.loads(out)["p50_ns"]}
            except (ValueError, KeyError) as e:
                raise ValueError(f"no p50 in its JSON ({e}): {out[-300:]!r}")
        n = max(100, int(self.count * scale))
        return [Client("client", [self.prog, "client", str(port), str(self.size), str(n),
                                  addr], parse, requests=n + n // 10)]     # and its warm-up


class Postgres:
    """PostgreSQL, whose server forks a backend for each connection it
    accepts: pgbench's read-only transactions (-S, a primary-key SELECT
    each) from 1 and 8 clients on a scale-4 table, transactions a second.
    Not in ALL: postgres refuses to run as root, so the server runs as the
    user postgres, which needs root here, and the build tree and the
    runner's service readable by that user (missing() says what is not)."""
    name = "postgres"
    tools = ()
    can_poll = False

    @staticmethod
    def bindir():
        """The newest installed server's bin directory, or None."""
        dirs = [d for d in glob.glob("/usr/lib/postgresql/*/bin")
                if d.split("/")[-2].isdigit()]
        return max(dirs, key=lambda d: int(d.split("/")[-2])) if dirs else None

    @classmethod
    def missing(cls, lib):
        """Why this recipe cannot run here, with the preloaded library @lib
        (which the user postgres must read), or None."""
        if os.geteuid() != 0:
            return "it needs root (the server runs as the user postgres)"
        if cls.bindir() is None:
            return "PostgreSQL is not installed (apt-get install postgresql)"
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "there is no user postgres (apt-get install postgresql)"
        if subprocess.run(cls.as_postgres(["test", "-r", lib])).returncode != 0:
            return f"the user postgres cannot read {lib}: make the build tree readable"
        return None

    @staticmethod
    def as_postgres(argv):
        pw = pwd.getpwnam("postgres")
        return ["setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}",
                "--clear-groups"] + argv

    def server(self, addr, port, workdir):
        pw = pwd.getpwnam("postgres")
        data = os.path.join(workdir, "pgdata")
        subprocess.run(["rm", "-rf", data], check=True)
        os.mkdir(data, 0o700)
        os.chown(data, pw.pw_uid, pw.pw_gid)
        os.chmod(workdir, 0o755)     # the service's socket, for the user postgres
        b = self.bindir()
        return self.as_postgres([
            "sh", "-c", f"{b}/initdb -D {data} -A trust -U postgres --no-sync >/dev/null && "
            f"exec {b}/postgres -D {data} -k {data} -p {port} -c listen_addresses={addr} "
            "-c fsync=off"])

    def clients(self, addr, port, seconds, scale=1.0):
        pgbench = os.path.join(self.bindir(), "pgbench")
        base = ["-h", addr, "-p", str(port), "-U", "postgres"]
        out = [Client("init", [pgbench, "-i", "-q", "-s", "4"] + base + ["postgres"],
                      lambda text: {})]
        for c in (1, 8):
            def parse(text, c=c):
                if not re.search(r"^number of failed transactions: 0 ", text, re.M):
                    raise ValueError(f"failed transactions: {text[-300:]!r}")
                n = _need(re.search(r"^number of transactions actually processed: (\d+)",
                                    text, re.M), "transaction count", text)
                return {f"pgbench_c{c}_tps": float(_need(
                    re.search(r"^tps = ([\d.]+)", text, re.M), "tps", text).group(1)),
                        "_requests": int(n.group(1))}
            out.append(Client(f"c{c}", [pgbench, "-S", "-c", str(c), "-j", str(min(c, 2)),
                                        "-T", str(seconds)] + base + ["postgres"], parse,
                              f"pgbench_c{c}_cpu_us_per_tx"))
        return out


class Apache:
    """Apache 2.4's event MPM in one process (-X): its listener thread and
    16 workers, sendfile on, serving a 1 KB file to wrk -t1 -c8, as nginx.
    Not in ALL: Apache is not among the issue's programs, and the two
    faults it found in rb2-run (TCP_DEFER_ACCEPT, adds to the epoll set its
    listener sleeps in) are what it adds. As root it serves as www-data,
    which reads the work directory and the runner's service."""
    name = "apache"
    tools = ()
    can_poll = False

    @staticmethod
    def missing():
        """Why this recipe cannot run here, or None."""
        if not os.path.exists("/usr/lib/apache2/modules/mod_mpm_event.so"):
            return "Apache is not installed (apt-get install apache2)"
        return None

    def server(self, addr, port, workdir):
        d = os.path.join(workdir, "apache")
        os.makedirs(os.path.join(d, "www"), exist_ok=True)
        with open(os.path.join(d, "www", "1k"), "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(workdir, 0o755)     # the files and the service's socket, for www-data
        mods = "/usr/lib/apache2/modules"
        with open(os.path.join(d, "apache2.conf"), "w") as f:
            f.write(f"""ServerRoot "{d}"
ServerName localhost
User www-data
Group www-data
Listen {addr}:{port}
LoadModule mpm_event_module {mods}/mod_mpm_event.so
LoadModule authz_core_module {mods}/mod_authz_core.so
PidFile {d}/apache2.pid
ErrorLog {d}/error.log
Mutex file:{d}
DocumentRoot "{d}/www"
EnableSendfile On
ThreadsPerChild 16
MaxRequestWorkers 16
MaxKeepAliveRequests 0
""")
        return ["apache2", "-X", "-f", os.path.join(d, "apache2.conf")]

    def clients(self, addr, port, seconds, scale=1.0):
        return [_wrk_1k("apache", addr, port, seconds)]


ALL = {"sockperf": Sockperf(), "redis": Redis(), "memcached": Memcached(), "nginx": Nginx(),
       "iperf3": Iperf3()}
# Recipes the benchmarks run only when asked (rb2_run_bench.py --postgres).
MORE = {"postgres": Postgres(), "apache": Apache()}
PACKAGES = ("sockperf redis-server redis-tools memcached libmemcached-tools nginx-light wrk "
            "iperf3")
