#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
"""rb2-eval's partial runs: a run of some figures into a directory that holds
an earlier run's results.json replaces those figures and keeps the others,
each with the command that made it, and the case studies' report shows both.

  tests/eval_merge.py BUILD
"""
import json
import os
import subprocess
import sys
import tempfile

build = os.path.abspath(sys.argv[1])
top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ev = os.path.join(top, "usertools", "rb2-eval.py")


def run(*args):
    p = subprocess.run([sys.executable, ev, "--quick", "--build", build, "--no-plot", *args],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        sys.exit(f"FAIL: rb2-eval {' '.join(args)}: exit {p.returncode}\n{p.stdout[-3000:]}")


with tempfile.TemporaryDirectory() as out:
    run("--only", "fig8", "--nf-packets", "20000", "--out", out)
    first = json.load(open(os.path.join(out, "results.json")))
    run("--only", "fig10", "--http-requests", "2000", "--case-rounds", "1", "--out", out)
    res = json.load(open(os.path.join(out, "results.json")))
    cases = open(os.path.join(out, "cases.md")).read()
    checks = [
        ("fig8 kept", res.get("fig8", {}).get("rows") == first["fig8"]["rows"]),
        ("fig10 added", len(res.get("fig10", {}).get("rows", [])) >= 2),
        ("fig8 names its command", "--only fig8" in res["fig8"].get("command", "")),
        ("fig10 names its command", "--only fig10" in res["fig10"].get("command", "")),
        ("the commands of both runs kept", len(res["commands"]) > len(first["commands"])),
        ("cases.md has both figures", "## Fig. 8" in cases and "## Fig. 10" in cases),
        ("cases.md names both commands", "--only fig8" in cases and "--only fig10" in cases),
        ("fig10's reference is RB² unbatched", res["fig10"]["rows"][0]["design"] ==
         "rb2-unbatched"),
    ]
    bad = [name for name, ok in checks if not ok]
    if bad:
        sys.exit("FAIL: " + "; ".join(bad))
    print(f"ok: {len(checks)} checks")
