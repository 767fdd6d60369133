#!/usr/bin/env bash
# nvtx.sh — the NVTX ranges and marks the library emits, as a tool attached through
# NVTX_INJECTION64_PATH receives them (the recording tool tests/nvtx/inject.c writes each call it
# gets to NVTX_RECORD_FILE). tests/progs/e-cut.cu with AUTOGRAPH_MIN_SEQ=40 (report-cuts.sh):
# two sequences, phase A replayed every step, phase B cut by cudaMemcpyAsync in every step after
# the warm-up ones. Each run with the tool must print exactly what the program prints without
# the library, and what the tool received must agree with the statistics of the same run:
#   - the domain "autograph" created once, its three fixed names registered once each, and no
#     event in any other domain (nor in the default one);
#   - ranges only pushed and popped (no start/end), balanced and properly nested per thread;
#   - one range per graph launch (graph_launches), each named "replay seq S: L launches, O ops,
#     U updates" with payload L, S a sequence the tool saw learned and built; the L add up to
#     replayed, the O to ops_replayed, the U to updates;
#   - "sequence learned" marks = sequences (payloads 1 … sequences), "graph built" = graphs,
#     "demoted seq S: …" = demotions, "graph evicted" = evictions, and the launches of the flush
#     marks add up, per fallback, to fallbacks.mismatch, .flushed and .graph_error (and every
#     flush names a fallback the statistics count).
# Runs: whole sequences (AUTOGRAPH_CHUNK_US=0: 21 ranges of 40 launches, 17 flushes of 15), the
# default chunking (several ranges per sequence), a failing node update and a failing graph
# launch (a demotion naming the CUDA error, a flush for graph_error; the failed graph launch is
# a range of its own, so ranges = graph_launches + 1). With AUTOGRAPH_NVTX=0, with
# AUTOGRAPH_DISABLE=1 and with a malformed AUTOGRAPH_NVTX the tool is never even loaded by the
# library: no NVTX call at all (the malformed value warns and keeps the default, on).
. "$(dirname "$0")/lib.sh"
ag_need e-cut
command -v python3 >/dev/null || ag_skip "skipped: python3 is not installed"
tool=$BUILD/tests/nvtx/libnvtx-record.so
[ -f "$tool" ] || ag_skip "skipped: $tool is not built"
# The hold bound raised to 1 s: on a loaded machine or under a sanitizer a held launch may wait
# past the default (1 ms), which would split a replay into two ranges.
export AUTOGRAPH_MIN_SEQ=40 AUTOGRAPH_HOLD_US=1000000

# nvtx_check RECORD STATS [EXTRA_RANGES] [EXPR…] — the record agrees with the statistics (above);
# EXTRA_RANGES: ranges beyond graph_launches (failed graph launches); each EXPR (Python, over
# ranges, marks, st) must hold too.
nvtx_check() {
  local rec=$1 stats=$2 extra=${3:-0}
  shift 3
  [ -s "$rec" ] || ag_fail "the tool recorded nothing in $rec"
  python3 - "$rec" "$stats" "$extra" "$@" <<'PY' || { head -n 40 "$rec" >&2; ag_fail "the NVTX record does not match the statistics (see above)"; }
import collections, json, re, sys

rec, stats, extra, exprs = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
st = json.load(open(stats))
fb = collections.defaultdict(int, st.get("fallbacks") or {})
errors = []
def expect(cond, text):
    if not cond:
        errors.append(text)

lines = [l.rstrip("\n").split("\t") for l in open(rec)]
domains = [l[1] for l in lines if l[0] == "domain"]
expect(domains == ["autograph"], f"domains created: {domains}, expected ['autograph'] once")
strings = sorted(l[2] for l in lines if l[0] == "string")
expect(strings == ["graph built", "graph evicted", "sequence learned"],
       f"registered strings: {strings}")
expect(all(l[1] == "autograph" for l in lines if l[0] in ("string", "mark", "push", "pop")),
       "an event outside the domain autograph")
kinds = collections.Counter(l[0] for l in lines)
expect(not kinds["start"] and not kinds["end"], "start/end ranges, expected push/pop only")
expect(set(kinds) <= {"init", "domain", "string", "mark", "push", "pop"}, f"unexpected: {kinds}")

# Balanced and properly nested, per thread.
stacks, ranges, marks = collections.defaultdict(list), [], []
for l in lines:
    if l[0] == "push":
        stacks[l[2]].append(l)
        ranges.append((l[3], int(l[4])))
    elif l[0] == "pop":
        expect(stacks[l[2]], f"a pop without a push on thread {l[2]}")
        if stacks[l[2]]:
            stacks[l[2]].pop()
    elif l[0] == "mark":
        # No mark inside a replay range: the range holds the graph launch alone.
        expect(not stacks[l[2]], f"a mark inside a range: {l}")
        marks.append((l[3], l[4]))
expect(not any(stacks.values()), f"ranges never popped: {dict(stacks)}")

learned = [int(p) for m, p in marks if m == "sequence learned"]
built = [int(p) for m, p in marks if m == "graph built"]
evicted = [m for m, p in marks if m == "graph evicted"]
demoted = [(m, int(p)) for m, p in marks if m.startswith("demoted seq ")]
flushes = [m for m, p in marks if m.startswith("flush ")]
expect(sorted(learned) == list(range(1, st["sequences"] + 1)),
       f"learned marks {sorted(learned)}, statistics: {st['sequences']} sequences")
expect(len(built) == st["graphs"], f"{len(built)} built marks, statistics: {st['graphs']} graphs")
expect(len(demoted) == st.get("demotions", 0),
       f"{len(demoted)} demoted marks, statistics: {st.get('demotions', 0)} demotions")
for m, p in demoted:
    g = re.fullmatch(r"demoted seq (\d+): (.+)", m)
    expect(g and int(g[1]) == p and p in learned, f"demoted mark {m!r} payload {p}")
expect(len(evicted) == st.get("evictions", 0), f"{len(evicted)} evicted marks")

# One range per graph launch, its numbers adding up to the statistics'.
expect(len(ranges) == st["graph_launches"] + extra,
       f"{len(ranges)} replay ranges, statistics: {st['graph_launches']} graph launches + {extra}")
tot = collections.Counter()
for m, p in ranges:
    g = re.fullmatch(r"replay seq (\d+): (\d+) launches, (\d+) ops, (\d+) updates", m)
    if not g:
        errors.append(f"replay range message {m!r}")
        continue
    seq, n, ops, upd = map(int, g.groups())
    expect(p == n, f"range {m!r}: payload {p}, expected its launches")
    expect(seq in built, f"range {m!r}: sequence {seq} never built")
    tot["launches"] += n; tot["ops"] += ops; tot["updates"] += upd
# A failed graph launch is a range the statistics do not count as replayed, and the updates a
# failed replay made before it failed are counted with no range: exact sums only without
# failures.
exact = not extra and not st.get("demotions", 0)
for k, key in (("launches", "replayed"), ("ops", "ops_replayed"), ("updates", "updates")):
    if exact:
        expect(tot[k] == st.get(key, 0), f"ranges: {tot[k]} {k} in all, statistics: {key}={st.get(key, 0)}")
    elif not extra:
        expect(tot[k] <= st.get(key, 0), f"ranges: {tot[k]} {k} in all, above {key}={st.get(key, 0)}")

# The flush marks, per fallback, against the statistics.
per = collections.Counter()
for m in flushes:
    g = re.fullmatch(r"flush (\d+) launches(?: of seq (\d+))? \((\w+)\): (.+)", m)
    if not g:
        errors.append(f"flush mark {m!r}")
        continue
    per[g[3]] += int(g[1])
for k in per:
    expect(fb[k] > 0, f"flush marks for {k}, which the statistics do not count")
for k in ("mismatch", "flushed", "graph_error"):
    expect(per[k] == fb[k], f"flush marks: {per[k]} launches for {k}, statistics: {fb[k]}")

env = dict(ranges=ranges, marks=marks, flushes=flushes, demoted=demoted, st=st, fb=fb)
for e in exprs:
    try:
        ok = bool(eval(e, {"__builtins__": {"len": len, "all": all, "any": any, "sum": sum}}, env))
    except Exception as ex:
        ok = False
        print(f"expect: {e}: cannot evaluate: {ex}", file=sys.stderr)
    expect(ok, f"{e}: does not hold")
for e in errors:
    print("nvtx:", e, file=sys.stderr)
if errors:
    sys.exit(1)
print(f"nvtx ok: {len(ranges)} replay ranges, {len(learned)} learned, {len(built)} built, "
      f"{len(demoted)} demoted, {len(flushes)} flush marks {dict(per)}")
PY
}

# nvtx_run TAG — one run with the tool (ag_rerun: output compared with the plain run).
nvtx_run() {
  rm -f "$AG_TMP/$1.rec"
  NVTX_INJECTION64_PATH=$tool NVTX_RECORD_FILE=$AG_TMP/$1.rec ag_rerun e-cut "$1" 15 20 3
}

AUTOGRAPH_CHUNK_US=0 AG_EXPECT_REPLAY=1 ag_compare_prog e-cut 15 20 3

AUTOGRAPH_CHUNK_US=0 AG_EXPECT_REPLAY=1 nvtx_run whole
nvtx_check "$AG_TMP/whole.rec" "$AG_STATS" 0 "len(ranges) == 21" \
  "all(m.endswith(': cudaMemcpyAsync') and ' of seq 2 ' in m for m in flushes)" \
  "len(flushes) == 17" "all(p == 40 for m, p in ranges)"

AG_EXPECT_REPLAY=1 nvtx_run chunks
nvtx_check "$AG_TMP/chunks.rec" "$AG_STATS" 0

SIM_FAIL=cuGraphExecKernelNodeSetParams:3 nvtx_run fail-update
nvtx_check "$AG_TMP/fail-update.rec" "$AG_STATS" 0 "len(demoted) == 1" \
  "demoted[0][0].startswith('demoted seq 1: graph path failed (CUDA error ')" \
  "any('(graph_error): graph error' in m for m in flushes)"

SIM_FAIL=cuGraphLaunch:2 AUTOGRAPH_CHUNK_US=0 nvtx_run fail-launch
nvtx_check "$AG_TMP/fail-launch.rec" "$AG_STATS" 1 "len(demoted) == 1" \
  "'graph path failed' in demoted[0][0]"

# Off: the library makes no NVTX call, so NVTX never loads the tool (which writes its "init"
# line, and creates the file, as soon as it is loaded).
rm -f "$AG_TMP/off.rec"
AUTOGRAPH_NVTX=0 NVTX_INJECTION64_PATH=$tool NVTX_RECORD_FILE=$AG_TMP/off.rec AG_EXPECT_REPLAY=1 \
  ag_rerun e-cut off 15 20 3
[ -e "$AG_TMP/off.rec" ] && { cat "$AG_TMP/off.rec" >&2; ag_fail "AUTOGRAPH_NVTX=0: the tool was loaded"; }
echo "ok: AUTOGRAPH_NVTX=0: no NVTX call"
ag_run "$AG_TMP/disabled" env LD_PRELOAD="$(ag_preload "$AG_LIB")" AUTOGRAPH_DISABLE=1 \
  NVTX_INJECTION64_PATH="$tool" NVTX_RECORD_FILE="$AG_TMP/off.rec" "$BUILD/tests/progs/e-cut" 15 20 3
ag_same "$AG_TMP/e-cut/plain1" "$AG_TMP/disabled"
[ -e "$AG_TMP/off.rec" ] && { cat "$AG_TMP/off.rec" >&2; ag_fail "AUTOGRAPH_DISABLE=1: the tool was loaded"; }
echo "ok: AUTOGRAPH_DISABLE=1: no NVTX call, identical output"

# A malformed value warns and keeps the default (on).
AUTOGRAPH_NVTX=yes AUTOGRAPH_CHUNK_US=0 AG_EXPECT_REPLAY=1 nvtx_run malformed
grep -q 'AUTOGRAPH_NVTX="yes" is not valid' "$AG_TMP/e-cut/malformed.err" ||
  ag_fail "no warning for AUTOGRAPH_NVTX=yes: $(cat "$AG_TMP/e-cut/malformed.err")"
nvtx_check "$AG_TMP/malformed.rec" "$AG_STATS" 0 "len(ranges) == 21"
echo "nvtx: ok"
