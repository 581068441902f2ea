#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
"""Run the runnable shell blocks of the README and the guides (doc/guides),
so that a command that changes breaks this test, not the reader.

  test_readme.py SOURCE_DIR BUILD_DIR

A block is runnable when the line before its ```sh fence is the comment
"<!-- runnable: ... -->". It runs as written, with bash -e, from a scratch
directory in which build, config, doc, examples and usertools lead to the
tree (so its files, t.pcap and the rest, land there; the blocks share it,
in order, as a reader's terminal would), with every app of
BUILD_DIR on the PATH (the guides call rb2-kv by name), and with these
changes only:
  - counts shrink to test size (SMALL below: --packets 5000000 becomes
    --packets 20000, and so on), the rest of each line untouched;
  - a command that ends in '&' (a server) is given time to say it is up
    before the next line runs, and every process the block started is
    stopped (SIGINT, then SIGKILL) when it ends;
  - a --file-prefix gets this run's suffix, so a test never meets a
    user's DPDK processes.
Blocks that need the service (rb2-raasd) skip where there are no
hugepages, and say so. Prints a PASS/FAIL line per block and a closing
count; exits 1 on any failure.
"""
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

# Option -> the value a test run uses: small enough for seconds, large
# enough to run every path.
SMALL = {
    "--packets": "20000", "--flows": "2000", "--count": "100k", "--operations": "20000",
    "--requests": "3000", "--rounds": "1", "--seconds": "0.1", "--lat": "2000",
    "--wake": "20", "--records": None, "--conns": None,
}
# A client's --records must not outgrow its server's: a client's shrinks.
CLIENT_RECORDS = "2000"
START_WAIT_S = 3.0
BLOCK_TIMEOUT_S = 240


def blocks(readme):
    lines = open(readme).read().split("\n")
    out, i = [], 0
    while i < len(lines):
        if lines[i].startswith("<!-- runnable") and i + 1 < len(lines) and \
                lines[i + 1].startswith("```sh"):
            j = i + 2
            body = []
            while not lines[j].startswith("```"):
                body.append(lines[j])
                j += 1
            out.append((i + 2, body))
            i = j
        i += 1
    return out


def commands(body):
    """The block's commands: continuation lines joined, comments dropped."""
    cmds, cur = [], ""
    for line in body:
        line = re.sub(r"(^|\s)#.*$", "", line).rstrip()
        if line.endswith("\\"):
            cur += line[:-1] + " "
            continue
        cur += line
        if cur.strip():
            cmds.append(cur.strip())
        cur = ""
    return cmds


def shrink(cmd, suffix):
    def small(m):
        opt, val = m.group(1), m.group(2)
        if opt == "--records":
            return f"{opt} {CLIENT_RECORDS}" if " client " in cmd else m.group(0)
        new = SMALL.get(opt)
        return f"{opt} {new}" if new else m.group(0)
    cmd = re.sub(r"(--[a-z-]+) (\S+)", small, cmd)
    cmd = re.sub(r"(dpdk-telemetry.py -f) (\S+)", lambda m: f"{m.group(1)} {m.group(2)}{suffix}",
                 cmd)
    return re.sub(r"--file-prefix (\S+)", lambda m: f"--file-prefix {m.group(1)}{suffix}", cmd)


def have_hugepages():
    free = 0
    for line in open("/proc/meminfo"):
        if line.startswith("HugePages_Free"):
            free = int(line.split()[1])
    return free >= 128 and os.path.ismount("/dev/hugepages")


def run_block(cmds, env, cwd, log):
    """Each command in one bash -e session; servers in the background."""
    script = ["set -e"]
    for c in cmds:
        if c.endswith("&"):
            # Up when it prints its first line (ready, serving): or after
            # START_WAIT_S.
            n = len(script)
            script.append(f"{c[:-1].strip()} > bg{n}.log 2>&1 &")
            script.append(f"for _ in $(seq {int(START_WAIT_S * 20)}); do "
                          f"grep -qE 'ready|serving' bg{n}.log && break; sleep 0.05; done")
        else:
            script.append(f"echo '+ {c}'")
            script.append(c)
    with open(os.path.join(cwd, "block.sh"), "w") as f:
        f.write("\n".join(script) + "\n")
    p = subprocess.Popen(["bash", "block.sh"], cwd=cwd, env=env, stdout=log,
                         stderr=subprocess.STDOUT, start_new_session=True)
    try:
        rc = p.wait(timeout=BLOCK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        rc = "timeout"
    for sig, wait in ((signal.SIGINT, 2.0), (signal.SIGKILL, 0)):
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            break
        time.sleep(wait)
    p.wait()
    return rc


def main():
    src, build = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    suffix = f"-rt{os.getpid()}"
    env = dict(os.environ)
    apps = os.path.join(build, "apps")
    env["PATH"] = ":".join([os.path.join(apps, a) for a in sorted(os.listdir(apps))
                            if os.path.isdir(os.path.join(apps, a))] + [env["PATH"]])
    passed = failed = skipped = 0
    # One scratch directory for every block, in order, as a reader's: a
    # later block uses what an earlier one made (t.pcap).
    scratch = tempfile.TemporaryDirectory()
    d = scratch.name
    os.symlink(build, os.path.join(d, "build"))
    for x in ("config", "doc", "examples", "usertools"):
        os.symlink(os.path.join(src, x), os.path.join(d, x))
    # The README, then the guides in path order (apps/rb2-nf.md makes the
    # t.pcap that prog_guide/port.md reads).
    docs = ["README.md"] + sorted(
        os.path.relpath(os.path.join(dp, f), src)
        for dp, _, fs in os.walk(os.path.join(src, "doc", "guides"))
        for f in fs if f.endswith(".md"))
    every = [(doc, line, body) for doc in docs
             for line, body in blocks(os.path.join(src, doc))]
    for doc, line, body in every:
        cmds = [shrink(c, suffix) for c in commands(body)]
        name = f"{doc}:{line} ({cmds[0][:60]})"
        if any(c.startswith("rb2-raasd") for c in cmds) and not have_hugepages():
            print(f"SKIP {name}: the service needs hugepages")
            skipped += 1
            continue
        if True:
            t0 = time.time()
            with open(os.path.join(d, "out.log"), "w") as log:
                rc = run_block(cmds, env, d, log)
            out = open(os.path.join(d, "out.log")).read()
            if rc == 0:
                passed += 1
                print(f"PASS {name}: {len(cmds)} commands, {time.time() - t0:.1f} s")
            else:
                failed += 1
                print(f"FAIL {name}: exit {rc}\n" + out[-3000:])
                for f in sorted(os.listdir(d)):
                    if f.startswith("bg"):
                        print(f"--- {f}\n" + open(os.path.join(d, f)).read()[-1500:])
            for f in os.listdir(d):
                if f.startswith("bg"):
                    os.unlink(os.path.join(d, f))
        for pfx in os.listdir("/var/run/dpdk") if os.path.isdir("/var/run/dpdk") else []:
            if pfx.endswith(suffix):
                subprocess.run(["rm", "-rf", os.path.join("/var/run/dpdk", pfx)])
    scratch.cleanup()
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
