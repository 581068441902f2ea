#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The rb2 authors
#
# End-to-end smoke test of rb2-perf on the shm transport, in the manner of
# DPDK's devtools/test-null.sh: run each mode for real, check the JSON
# figures and counters, and check that bad arguments give clear errors.
set -euo pipefail
perf=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
eal=(-l 0-1 --no-pci --no-huge -m 512 --log-level lib.eal:error)
fail() { echo "FAIL: $*" >&2; exit 1; }
# Message counts, a fifth of them under ThreadSanitizer (RB2_TEST_TSAN=1),
# where a message costs ten times more and a race shows in far fewer: the
# checks below take what was sent from each run's JSON ("count", "rounds";
# a bw run adds a tenth of a round's count as its warm-up).
k=1
[ "${RB2_TEST_TSAN:-0}" = 1 ] && k=5
n() { echo $(($1 / k)); }

# Not piped straight into grep -q: the text is longer than stdio's buffer,
# and grep leaving early would SIGPIPE the second write.
"$perf" --help > "$tmp/help.txt" || fail "--help exit status"
grep -q -- '--mode MODE' "$tmp/help.txt" && grep -q -- '--designs LIST' "$tmp/help.txt" || fail "--help"

# A refused command line runs no lcore: nothing for ThreadSanitizer to see,
# and an EAL start costs it two seconds. Checked in the other builds.
expect_error() { # expected-text args...
	local want=$1; shift
	local out rc=0
	[ "${RB2_TEST_TSAN:-0}" = 0 ] || return 0
	out=$("$perf" "${eal[@]}" --file-prefix "smk$$e" -- "$@" 2>&1) || rc=$?
	[ "$rc" -ne 0 ] || fail "'$*' should fail"
	grep -q -- "$want" <<<"$out" || fail "'$*' should name '$want', said: $out"
}
expect_error "invalid alpha=0" --alpha 0
expect_error "invalid beta=40" --alpha 32 --beta 40
expect_error "invalid gamma=1024" --gamma 1024
expect_error "--mode fast: bw, lat, ops" --mode fast
expect_error "--size 4: a whole number from 8" --size 4
expect_error "largest message" --size 1000 --slot-size 64 --slots 16 --alpha 8 --beta 4 --gamma 8
expect_error "no transport named" --transport nosuch
expect_error "bad mode" --transport shm,mode=dma
expect_error "unexpected argument" stray
expect_error "invalid msg_size" --fixed --size 100 --slot-size 64
# Two processes over shm without hugepages: refused at once, with the fix.
expect_error "needs hugepages: drop --no-huge" --server
expect_error "needs hugepages: drop --no-huge" --client localhost
# The one-lcore mode: every design's code runs, nothing lost.
"$perf" -l 0 --no-pci --no-huge -m 512 --log-level lib.eal:error --file-prefix "smk$$o" -- \
	--mode ops --count $(n 100000) --designs rb2,l5,farm,socksdirect --json "$tmp/ops.json" >/dev/null ||
	fail "--mode ops"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert [v['errors'] for v in d['variants']]==[0]*4 and d['mode']=='ops', d" "$tmp/ops.json" ||
	fail "--mode ops: errors"

"$perf" "${eal[@]}" --file-prefix "smk$$a" -- --mode bw --size 64 --compare \
	--count $(n 200000) --rounds 3 --json "$tmp/bw.json" > "$tmp/bw.txt"
python3 - "$tmp/bw.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
names = [v["name"] for v in d["variants"]]
assert names == ["rb2-shm-loadstore", "rb2-shm-ls-fixed", "rb2-shm-copy",
                 "rb2-shm-copy-fixed", "ring-elem", "ring-zc"], names
for v in d["variants"]:
    assert v["errors"] == 0, v
    assert len(v["rounds_mmsg_s"]) == 3 and v["median_mmsg_s"] > 0, v
for v in d["variants"][:4]:
    tx, rx = v["stats"]["tx"], v["stats"]["rx"]
    # the rounds, and a warm-up of a tenth of a round
    sent = d["rounds"] * d["count"] + d["count"] // 10
    assert tx["messages"] == sent and rx["messages"] == sent, (tx, rx)
    assert tx["tail_writes"] > 0 and rx["head_pushes"] > 0, (tx, rx)
assert d["variants"][2]["stats"]["tx"]["slot_writes"] > 0  # copy
assert d["variants"][0]["stats"]["tx"]["slot_writes"] == 0  # load/store
for k in ("rb2-shm-loadstore/ring-zc", "rb2-shm-ls-fixed/ring-zc", "rb2-shm-loadstore/ring-elem"):
    assert d["ratios"][k] > 0, d["ratios"]
PY
grep -q "ratios of medians" "$tmp/bw.txt" || fail "bw table"

"$perf" "${eal[@]}" --file-prefix "smk$$b" -- --mode bw --size 1000 \
	--transport shm,mode=copy --seconds 0.2 --rounds 2 --json "$tmp/bwd.json" >/dev/null
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); v=d['variants'][0]; assert v['errors']==0 and v['median_mmsg_s']>0, v" "$tmp/bwd.json"

"$perf" "${eal[@]}" --file-prefix "smk$$c" -- --mode lat --size 64 \
	--count $(n 20000) --json "$tmp/lat.json" > "$tmp/lat.txt"
python3 - "$tmp/lat.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["errors"] == 0 and d["alpha"] == 1 and d["beta"] == 1 and d["gamma"] == 1, d
for k in ("rb2", "raw_cacheline"):
    l = d[k]
    assert 0 < l["min_ns"] <= l["p50_ns"] <= l["p99_ns"] <= l["p99_9_ns"] <= l["max_ns"], l
PY
# Adaptive polling against polling: the sleeper slept and was woken, its idle
# CPU is a small fraction of the poller's, and nothing was lost. The idle
# CPU is a measurement on a loaded machine (a full-tier rehearsal under ASan
# once saw the sleeper at 21% against the poller's 99%): that one ratio gets
# a second run, and fails only if both miss it.
for try in 1 2; do
	"$perf" "${eal[@]}" --file-prefix "smk$$w" -- --mode wake --rounds 1 --paced 200 \
		--count $(n 100000) --json "$tmp/wake.json" > "$tmp/wake.txt" || fail "--mode wake"
	rc=0
	python3 - "$tmp/wake.json" "$try" <<'PY' || rc=$?
import json, sys
d = json.load(open(sys.argv[1]))
assert d["mode"] == "wake" and d["errors"] == 0 and d["samples"] == 200, d
assert d["sleeps"] > 100, d
assert d["busy_mps_adaptive"] > 0 and d["busy_mps_poll"] > 0, d
if not d["idle_cpu_pct_adaptive"] * 5 < d["idle_cpu_pct_poll"]:
    print("idle CPU, run %s: adaptive %.1f%%, polling %.1f%%: not under a fifth"
          % (sys.argv[2], d["idle_cpu_pct_adaptive"], d["idle_cpu_pct_poll"]), file=sys.stderr)
    sys.exit(3)
PY
	[ $rc = 0 ] && break
	[ $rc = 3 ] && [ $try = 1 ] && continue
	fail "--mode wake: see above"
done
expect_error "mode wake runs one design" --mode wake --designs l5
expect_error "bw --channels takes one count" --channels 1,8
# Doorbells across channels: on a lane, one doorbell per sender pass for all
# its channels; each on its own QP, one per channel flush. Nothing lost.
"$perf" "${eal[@]}" --file-prefix "smk$$l" -- --mode lanes --transport shm,mode=copy \
	--channels 1,8 --rounds 1 --count $(n 20000) --json "$tmp/lanes.json" > "$tmp/lanes.txt" ||
	fail "--mode lanes"
python3 - "$tmp/lanes.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["mode"] == "lanes" and d["errors"] == 0, d
r = {(x["channels"], x["variant"]): x for x in d["runs"]}
assert r[(8, "qp-per-channel")]["tx_doorbells_per_msg"] > 0.9, r
assert r[(8, "lane")]["tx_doorbells_per_msg"] < 0.2, r
assert r[(8, "lane")]["posted_wrs_per_msg"] <= r[(8, "lane")]["wrs_per_msg"], r
PY
# Large messages lent from application memory (loop: in one process), each
# checked on arrival; shm cannot lend, and says so.
"$perf" "${eal[@]}" --file-prefix "smk$$b" -- --mode bulk --transport loop --rounds 1 \
	--json "$tmp/bulk.json" > "$tmp/bulk.txt" || fail "--mode bulk"
python3 - "$tmp/bulk.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["mode"] == "bulk" and d["errors"] == 0 and len(d["sizes"]) == 6, d
assert d["sender_cache_hit_pct"] > 90, d
PY
expect_error "cannot (use verbs, or loop" --mode bulk --transport shm
# The paper's designs side by side, and each sync policy, delivering
# everything; an unknown design is refused. L5's own ring where the build has
# the baselines (meson -Dbaselines, RB2_BASELINES from meson); where it has
# not, asking for it stops at set-up and says how to get it.
if [ "${RB2_BASELINES:-1}" = 0 ]; then
	"$perf" "${eal[@]}" --file-prefix "smk$$d" -- --mode bw --designs l5 --count 1000 \
		--rounds 1 >"$tmp/nol5.txt" 2>&1 && fail "l5 ran in a build without the baselines"
	grep -q "not in this build; configure with meson configure -Dbaselines=true" \
		"$tmp/nol5.txt" || fail "l5 without the baselines: unclear error: $(cat "$tmp/nol5.txt")"
else
"$perf" "${eal[@]}" --file-prefix "smk$$d" -- --mode bw --size 64 --slots 128 \
	--designs rb2,farm,l5 --count $(n 100000) --rounds 2 --json "$tmp/pre.json" > "$tmp/pre.txt"
python3 - "$tmp/pre.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
names = [v["name"] for v in d["variants"]]
assert names == ["rb2", "farm", "l5"], names
sent = d["rounds"] * d["count"] + d["count"] // 10
for v in d["variants"]:
    tx, rx = v["stats"]["tx"], v["stats"]["rx"]
    assert v["errors"] == 0 and tx["messages"] == rx["messages"] == sent, v
fa, l5 = d["variants"][1]["stats"]["tx"], d["variants"][2]
assert fa["tail_writes"] == 0, fa                 # poll message: no tail pointer
# L5's own ring on load/store: its stores are the WRITEs; copied in and out,
# and every message with its length and validity word cleared.
assert l5["copies"] == "in+out+zero" and l5["copied_bytes"] == 2 * 64 * sent, l5
assert l5["stats"]["rx"]["cleared_bytes"] == (64 + 16) * sent, l5
assert d["ratios"]["rb2/farm"] > 0 and d["ratios"]["rb2/l5"] > 0, d["ratios"]
PY
grep -q "rb2 / farm" "$tmp/pre.txt" || fail "preset ratios"
# L5 through WRITEs (shm's NIC-copy mode): payload and length in two WRITEs
# of two posts per message (three where it wraps), every 4096th signaled
# and waited for, the reader's position READ when the ring is full.
"$perf" "${eal[@]}" --file-prefix "smk$$d" -- --mode bw --transport shm,mode=copy --size 200 \
	--slots 64 --designs l5 --count $(n 50000) --rounds 1 --json "$tmp/l5.json" >/dev/null ||
	fail "l5 over WRITEs"
python3 - "$tmp/l5.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
v = d["variants"][0]
tx, rx = v["stats"]["tx"], v["stats"]["rx"]
n = d["count"] + d["count"] // 10
assert v["errors"] == 0 and tx["messages"] == rx["messages"] == n, v
# (a message whose length word ends the ring wraps without a third WRITE)
assert 2 * n < tx["writes"] <= 2 * n + tx["wrapped"], tx
assert tx["signaled"] == (n + 4095) // 4096 and tx["head_reads"] > 0, tx
assert tx["posts"] == 2 * n + tx["head_reads"], tx
PY
"$perf" "${eal[@]}" --file-prefix "smk$$d" -- --mode lat --size 64 --designs l5 --count 2000 \
	--warmup 100 --json "$tmp/l5lat.json" >/dev/null || fail "lat on L5's ring"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['errors']==0 and d['design']=='l5' and d['copies']=='in+out+zero', d" "$tmp/l5lat.json" ||
	fail "lat on L5's ring: errors"
fi
expect_error "connects its halves within one process" --mode bw --designs l5 --pairs 1
for pol in "--head-sync pull" "--tail-sync poll" "--tail-sync imm" "--head-sync pull --tail-sync poll"; do
	# shellcheck disable=SC2086
	"$perf" "${eal[@]}" --file-prefix "smk$$e" -- --mode bw --size 100 --count $(n 100000) \
		--rounds 1 $pol --json "$tmp/pol.json" >/dev/null || fail "bw $pol"
	python3 -c "import json,sys; v=json.load(open(sys.argv[1]))['variants'][0]; assert v['errors']==0, v" "$tmp/pol.json" ||
		fail "bw $pol: errors"
done
"$perf" "${eal[@]}" --file-prefix "smk$$f" -- --mode bw --size 64 --slots 128 \
	--designs socksdirect,push+cq,pull+cq --count $(n 100000) --rounds 1 --json "$tmp/imm.json" >/dev/null ||
	fail "WRITE_WITH_IMM presets"
python3 - "$tmp/imm.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for v in d["variants"]:
    tx, rx = v["stats"]["tx"], v["stats"]["rx"]
    assert v["errors"] == 0 and tx["messages"] == rx["messages"] == d["count"] * 11 // 10, v
    assert tx["cqes"] > 0 and tx["cqes"] == rx["cqes"], (tx, rx)   # every CQE polled
PY
"$perf" "${eal[@]}" --file-prefix "smk$$g" -- --mode bw --size 300 --count $(n 50000) --rounds 1 \
	--bounce --json "$tmp/bounce.json" >/dev/null || fail "--bounce"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); v=d['variants'][0]; assert v['errors']==0 and v['stats']['rx']['messages']==d['count']*11//10, v" "$tmp/bounce.json" ||
	fail "--bounce: errors"
# Per-preset :fixed / :var (the eval's RB2 next to FaRM with its lengths),
# and the M4 / M7 ablation switches, delivering everything.
fix=rb2:fixed,farm,l5:fixed,rb2:var
[ "${RB2_BASELINES:-1}" = 1 ] || fix=rb2:fixed,farm,socksdirect:fixed,rb2:var
"$perf" "${eal[@]}" --file-prefix "smk$$h" -- --mode bw --size 64 --slots 128 \
	--designs $fix --count $(n 100000) --rounds 1 \
	--json "$tmp/fix.json" >/dev/null || fail "presets with :fixed / :var"
python3 - "$tmp/fix.json" "$fix" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert [v["name"] for v in d["variants"]] == sys.argv[2].split(","), d
assert all(v["errors"] == 0 and v["stats"]["rx"]["messages"] == d["count"] * 11 // 10
           for v in d["variants"]), d
assert d["ratios"]["rb2:fixed/farm"] > 0 and d["ratios"]["rb2:fixed/rb2:var"] > 0, d["ratios"]
PY
for abl in --unaligned --no-elastic "--unaligned --size 100 --tail-sync poll"; do
	# shellcheck disable=SC2086
	"$perf" "${eal[@]}" --file-prefix "smk$$i" -- --mode bw --size 72 --count $(n 50000) \
		--rounds 1 $abl --json "$tmp/abl.json" >/dev/null || fail "bw $abl"
	python3 -c "import json,sys; d=json.load(open(sys.argv[1])); v=d['variants'][0]; assert v['errors']==0 and v['stats']['rx']['messages']==d['count']*11//10, v" "$tmp/abl.json" ||
		fail "bw $abl: errors"
done
# Fig. 7: k channel pairs at once, here two pairs on lcores mapped to two
# CPUs (the sum of the rates means nothing here; delivery does).
"$perf" --lcores '(0-3)@(0-1)' "${eal[@]:2}" --file-prefix "smk$$k" -- --mode bw --size 64 \
	--pairs 2 --count $(n 50000) --rounds 1 --json "$tmp/pairs.json" >/dev/null || fail "--pairs 2"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['pairs']==2 and d['errors']==0 and len(d['per_pair_median_mmsg_s'])==2, d" "$tmp/pairs.json" ||
	fail "--pairs 2: errors"
"$perf" "${eal[@]}" --file-prefix "smk$$k" -- --mode bw --pairs 2 \
	>/dev/null 2>"$tmp/err.txt" && fail "--pairs 2 on two lcores accepted"
grep -q "needs 4 lcores" "$tmp/err.txt" || fail "--pairs: unclear error"
# The ablation switches apply over a preset; --policy sets both syncs.
"$perf" "${eal[@]}" --file-prefix "smk$$l" -- --mode bw --size 64 --designs rb2 \
	--no-batching --count $(n 50000) --rounds 1 --json "$tmp/m2.json" >/dev/null || fail "--no-batching"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); t=d['variants'][0]['stats']['tx']; assert d['variants'][0]['errors']==0 and t['tail_writes']==t['messages'], t" "$tmp/m2.json" ||
	fail "--no-batching over the rb2 preset still batches"
"$perf" "${eal[@]}" --file-prefix "smk$$l" -- --mode bw --size 64 --policy pull+cq \
	--no-sync-ahead --count $(n 50000) --rounds 1 --json "$tmp/pol2.json" >/dev/null || fail "--policy pull+cq"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); t=d['variants'][0]['stats']['tx']; assert d['beta']==d['alpha'] and t['cqes']>0 and d['variants'][0]['errors']==0, d" "$tmp/pol2.json" ||
	fail "--policy pull+cq --no-sync-ahead"
if [ "$(ls -d /sys/devices/system/node/node* 2>/dev/null | wc -l)" -lt 2 ]; then
	"$perf" "${eal[@]}" --file-prefix "smk$$l" -- --wrong-numa >/dev/null 2>"$tmp/err.txt" &&
		fail "--wrong-numa accepted on one NUMA node"
	grep -q "needs two NUMA nodes" "$tmp/err.txt" || fail "--wrong-numa: unclear error"
fi
"$perf" "${eal[@]}" --file-prefix "smk$$j" -- --mode bw --designs rb2:fast \
	>/dev/null 2>"$tmp/err.txt" && fail "unknown preset suffix accepted"
grep -q "unknown suffix 'fast'" "$tmp/err.txt" || fail "unknown preset suffix: unclear error"
"$perf" "${eal[@]}" --file-prefix "smk$$f" -- --mode bw --designs nosuch \
	>/dev/null 2>"$tmp/err.txt" && fail "unknown preset accepted"
grep -q "unknown preset 'nosuch'" "$tmp/err.txt" || fail "unknown preset: unclear error"
# The older spellings still work, and say the one every benchmark uses now.
"$perf" "${eal[@]}" --file-prefix "smk$$o" -- --mode bw --preset rb2 --duration 0.05 \
	--rounds 1 >/dev/null 2>"$tmp/err.txt" || fail "--preset/--duration (older spellings) refused"
grep -q -- "--preset is now spelled --designs" "$tmp/err.txt" &&
	grep -q -- "--duration is now spelled --seconds" "$tmp/err.txt" ||
	fail "the older spellings are not named: $(cat "$tmp/err.txt")"
echo "smoke_perf: ok"
