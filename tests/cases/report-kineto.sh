#!/usr/bin/env bash
# report-kineto.sh — `autograph-report --kineto`: a torch.profiler trace of a run under the
# library, rewritten so that each kernel a graph replayed is linked to the launch and the op it
# came from. The simulator has no CUPTI, so the trace is built from the run's own dump by
# make-kineto.py (tests/progs/e-cut.cu: two phases of 40 launches, the second cut by a copy
# after K launches in the later steps), in the event shapes of make-trace.py, which this case
# checks against real traces at the end. Two runs: one graph launch per
# replay (AUTOGRAPH_CHUNK_US=0), and graphs in chunks (the default; e-cut then does 4 µs of host
# work before each launch, so that the held launches come at a pace that cuts several chunks
# however fast the machine). Each replayed kernel must
# name the sequence, node and op make-kineto.py expects and carry the External id of that op in
# its own step, with a flow from it; its correlation id must be a cudaLaunchKernel row of the
# same kernel; graph launches of kernels no sequence has are left as they are and counted. A
# trace without the learned launches links to the dump's nodes only. Three broken copies of the
# tool (node order off by one, kernel names not checked, the step's ops one too early) must
# fail the same checks. Errors: exit 2 and one line.
. "$(dirname "$0")/lib.sh"
ag_need e-cut
command -v python3 >/dev/null || ag_skip "skipped: python3 is not installed"
rep=$AG_ROOT/tools/autograph-report gen=$AG_ROOT/tests/cases/make-kineto.py
. "$(dirname "$0")/dump-schema.sh"
export AUTOGRAPH_MIN_SEQ=40

# check REPORT TRACE EXPECTED OUT FOREIGN: the rewritten trace against what the generator expects.
check() {
  python3 - "$@" <<'PY'
import json, sys
rep, trace, exp, out, foreign = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
t = json.load(open(out))
exp = json.load(open(exp))
ev = t["traceEvents"]
runtime = {e["args"]["correlation"]: e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")}
kernels = {}
for e in ev:
    if e.get("cat") == "kernel" and "autograph" not in e["args"]:
        kernels.setdefault(e["args"]["correlation"], e)
linked = [e for e in ev if e.get("cat") == "kernel" and "autograph" in e["args"]]
errors = []
got = [[e["args"]["autograph"]["sequence"], e["args"]["autograph"]["node"],
        e["args"]["autograph"]["op"], e["args"]["External id"]] for e in linked]
if got != exp:
    bad = [(i, g, x) for i, (g, x) in enumerate(zip(got, exp)) if g != x][:3]
    errors.append("links (sequence, node, op, External id): %d linked, %d expected; first differences %s"
                  % (len(got), len(exp), bad))
flows = {}
ext_at = {(e["pid"], e["tid"], e["ts"]): e["args"].get("External id")
          for e in ev if e.get("cat") == "cpu_op"}
starts = {f["id"]: ext_at.get((f["pid"], f["tid"], f["ts"])) for f in ev if f.get("ph") == "s"}
for f in ev:
    if f.get("ph") == "f":
        flows.setdefault((f["pid"], f["tid"], f["ts"]), set()).add(f["id"])
for e in linked:
    c = e["args"]["correlation"]
    r, k = runtime.get(c), kernels.get(c)
    if not r or r["name"] != "cudaLaunchKernel" or not k or k["name"] != e["name"]:
        errors.append("kernel %s at %s: correlation %s is not a launch of it" % (e["name"], e["ts"], c))
        break
    ids = flows.get((e["pid"], e["tid"], e["ts"]), set())
    if not any(starts.get(i) == e["args"]["External id"] for i in ids):
        errors.append("kernel %s at %s: no flow comes from its op" % (e["name"], e["ts"]))
        break
st = t["autograph"]
ranges = [e for e in ev if e.get("name", "").startswith("autograph replay: ")]
own = [e for e in ev if e.get("name") == "cudaGraphLaunch"]
if st["unmatched"] != foreign or st["ambiguous"] or len(ranges) != st["matched"] or \
        st["rowless"] != st["matched"] or st["graph_launches"] != st["matched"] + foreign or \
        len(own) != foreign or st["linked_trace"] != len(exp) or st["ops_this_step"] != st["matched"]:
    errors.append("counts %s: %d ranges, %d foreign" % (st, len(ranges), foreign))
for e in ev:
    if e.get("cat") == "kernel" and runtime.get(e["args"]["correlation"], {}).get("name") == \
            "cudaGraphLaunch" and "autograph" in e["args"]:
        errors.append("a foreign graph's kernel was rewritten")
        break
    if e.get("cat") == "kernel" and e["name"].startswith("foreign_") and \
            ("autograph" in e["args"] or runtime[e["args"]["correlation"]]["name"] != "cudaGraphLaunch"):
        errors.append("a foreign graph's kernel was rewritten")
        break
for x in errors:
    print("kineto:", x, file=sys.stderr)
if errors:
    sys.exit(1)
print("ok: %d graph launches: %d matched %s (without an API row), %d left as is; %d replayed "
      "kernels linked to their launch and op, %d replay ranges"
      % (st["graph_launches"], st["matched"], st["by_sequence"], st["unmatched"], len(linked),
         len(ranges)))
PY
}

# run NAME HOST_NS [AUTOGRAPH_…=…]: e-cut under the library with a dump, the trace made from it
# (two graph launches of foreign kernels added), rewritten and checked.
run() {
  local name=$1 host_ns=$2 d=$AG_TMP/$1
  shift 2
  mkdir -p "$d"
  (export "$@" AUTOGRAPH_DUMP="$d/dump.json" AG_EXPECT_REPLAY=1
   ag_compare_prog e-cut 15 20 3 "$host_ns" >/dev/null) || exit 1
  dump_check "$d/dump.json" "all(s['stream'] for s in seqs if s['replays'])" \
    "all(s['chunks'] for s in seqs if s['state'] == 'graphed')" >/dev/null
  python3 "$gen" "$d/dump.json" "$d/trace.json" "$d/expected.json" --foreign 2 ||
    ag_fail "make-kineto.py failed"
  "$rep" --kineto "$d/trace.json" --out "$d/out.json" "$d/dump.json" >"$d/text" ||
    { cat "$d/text"; ag_fail "--kineto failed"; }
  cat "$d/text"
  grep -qE '^    left as is        2 \(no sequence fits: 2, several fit: 0, no GPU rows: 0\)$' "$d/text" ||
    ag_fail "the summary does not count the two foreign graph launches"
  check "$rep" "$d/trace.json" "$d/expected.json" "$d/out.json" 2 || ag_fail "$name: wrong links"
  echo "ok: $name"
}
run whole 0 AUTOGRAPH_CHUNK_US=0
# Chunks follow the host's real pace: without host work between its launches, e-cut holds a
# whole sequence within the first chunk's budget on a fast machine. With 4 µs before each, every
# graphed sequence is cut in several chunks (a slower machine only cuts more).
several() {
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit(0 if all(len(s["chunks"] or []) > 1 for s in d["sequences"] if s["state"] == "graphed") else 1)' \
    "$AG_TMP/chunks/dump.json"
}
# Under a sanitizer the host is several times slower, the chunks hold a kernel or two, and
# --kineto's matching cannot tell such short runs of one sequence apart (it links some kernels
# to the wrong node): the chunked case runs without sanitizers only (what it checks is the
# Python tool's, which no sanitizer instruments).
if [ -z "${AG_SAN_PRELOAD:-}" ]; then
  # The hold bound raised: a held launch the machine delays past the default bound (1 ms) ends
  # its chunk there, and a run of a kernel or two cannot be told apart by its kernels.
  run chunks 4000 AUTOGRAPH_HOLD_US=100000
  several || ag_fail "a graphed sequence is one chunk: $(grep -o '"chunks": [^]]*]' "$AG_TMP/chunks/dump.json" | tr '\n' ' ')"
else
  echo "chunked case skipped under a sanitizer"
fi

# A trace without the launches the sequences were learned from: each replayed kernel linked to
# the dump's node only (no launch, no op), its correlation id still the graph launch's.
d=$AG_TMP/whole
python3 "$gen" "$d/dump.json" "$d/late.json" "$d/late-expected.json" --replays-only ||
  ag_fail "make-kineto.py failed"
"$rep" --kineto "$d/late.json" --out "$d/late-out.json" "$d/dump.json" >"$d/text" ||
  { cat "$d/text"; ag_fail "--kineto failed"; }
python3 - "$d/late-out.json" "$d/late-expected.json" <<'PY' || ag_fail "links to the dump's nodes are wrong"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
exp = json.load(open(sys.argv[2]))
ks = [e for e in ev if e.get("cat") == "kernel" and "autograph" in e["args"]]
got = [(e["args"]["autograph"]["sequence"], e["args"]["autograph"]["node"],
        e["args"]["autograph"]["from"], e["args"]["autograph"]["op"],
        e["args"]["correlation"] == e["args"]["autograph"]["graph_launch"]) for e in ks]
want = [(x[0], x[1], "dump", None, True) for x in exp]
assert got == want, [(g, w) for g, w in zip(got, want) if g != w][:3]
print("ok: %d replayed kernels of a trace without learned launches linked to the dump's nodes" % len(got))
PY

# A real trace (tests/fixtures/kineto: torch 2.11, CUDA 13, an H200): three steps of a small
# network run eagerly (6 kernels: cuLaunchKernel, cudaLaunchKernelExC and cudaLaunchKernel rows),
# then the same 6 kernels from a torch.cuda.graph, launched with cudaGraphLaunch and with the
# driver's cuGraphLaunch (which Kineto does not record: its kernels come without an API row),
# and a dump naming that sequence. All 6 graph launches match; each kernel is linked to the
# eager launch of its node in the same step, with its API and op.
f=$AG_ROOT/tests/fixtures/kineto
"$rep" --kineto "$f/h200-graphs.json.gz" --out "$AG_TMP/h200.json" "$f/h200-graphs-dump.json" >"$AG_TMP/text" ||
  { cat "$AG_TMP/text"; ag_fail "--kineto failed on the real trace"; }
cat "$AG_TMP/text"
python3 - "$AG_TMP/h200.json" <<'PY' || ag_fail "the real trace's replayed kernels are not linked as expected"
import json, sys
t = json.load(open(sys.argv[1]))
ev = t["traceEvents"]
rt = {e["args"]["correlation"]: e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")}
eager = sorted((e for e in ev if e.get("cat") == "kernel" and "autograph" not in e["args"]),
               key=lambda e: e["ts"])
linked = sorted((e for e in ev if e.get("cat") == "kernel" and "autograph" in e["args"]),
                key=lambda e: e["ts"])
assert len(eager) == 18 and len(linked) == 36, (len(eager), len(linked))
api = ["cuLaunchKernel", "cudaLaunchKernelExC", "cudaLaunchKernel"] * 2
ops = ["aten::addmm", "aten::addmm", "aten::clamp_min"] * 2
for i, k in enumerate(linked):
    a, step, q = k["args"]["autograph"], i // 12, i % 6
    want = eager[6 * step + q]  # the eager launch of node q in the same step
    got = (a["sequence"], a["node"], a["launch"], a["op"], k["args"]["correlation"], k["name"])
    exp = (1, q, api[q], ops[q], want["args"]["correlation"], want["name"])
    assert got == exp, (i, got, exp)
    assert k["args"]["External id"] == want["args"]["External id"], i
assert t["autograph"]["matched"] == 6 and t["autograph"]["rowless"] == 3, t["autograph"]
print("ok: real trace: 6 graph launches (3 without an API row), 36 kernels linked to the eager "
      "launch of their node in their step (API, op, correlation, External id)")
PY

# Broken matching must fail the checks: node order off by one, kernel names not compared, the
# ops of the replayed step taken one too early.
d=$AG_TMP/chunks
[ -d "$d" ] || d=$AG_TMP/whole # the chunked case is not run under a sanitizer
for broken in 'out.append(q)/out.append(q + 1 if q + 1 < end else q)' \
              'return name == node\["name"\] or/return True or' \
              'out\[q\] = cands\[j\]\[2\]/out[q] = cands[max(j - 1, 0)][2]'; do
  sed "s/$broken/" "$rep" >"$AG_TMP/broken"
  cmp -s "$rep" "$AG_TMP/broken" && ag_fail "the break '$broken' changed nothing"
  python3 "$AG_TMP/broken" --kineto "$d/trace.json" --out "$d/broken.json" "$d/dump.json" >/dev/null
  check "$rep" "$d/trace.json" "$d/expected.json" "$d/broken.json" 2 2>/dev/null &&
    ag_fail "a tool broken by '$broken' passed the checks"
  echo "ok: a tool broken by '$broken' fails the checks"
done

# Bad input: exit 2 and one line naming the file.
printf '{"traceEvents": [' >"$AG_TMP/cut.json"
echo '{"schemaVersion": 1}' >"$AG_TMP/noevents.json"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); d["version"] = 2; json.dump(d, open(sys.argv[2], "w"))' \
  "$d/dump.json" "$AG_TMP/v2.json"
bad() { # WANT ARGS…
  local want=$1 rc=0
  shift
  "$rep" "$@" >"$AG_TMP/out" 2>"$AG_TMP/err" || rc=$?
  [ "$rc" = 2 ] && [ "$(wc -l <"$AG_TMP/err")" = 1 ] && grep -qE "$want" "$AG_TMP/err" ||
    { cat "$AG_TMP/err"; ag_fail "'$*': exit $rc, not 2 with one line matching '$want'"; }
  echo "ok: exit 2: $(cat "$AG_TMP/err")"
}
bad 'missing\.json: cannot read' --kineto "$AG_TMP/missing.json" "$d/dump.json"
bad 'cut\.json: not valid JSON' --kineto "$AG_TMP/cut.json" "$d/dump.json"
bad 'noevents\.json: not a profiler trace: no traceEvents list' --kineto "$AG_TMP/noevents.json" "$d/dump.json"
bad 'dump\.json: this is a dump' --kineto "$d/dump.json" "$d/dump.json"
bad 'v2\.json: a version 2 dump has no graph chunks' --kineto "$d/trace.json" "$AG_TMP/v2.json"
bad 'trace\.json: not a dump: schema is null' --kineto "$d/dump.json" "$d/trace.json"
# A bad command line: exit 2, the usage, then one line saying what is wrong.
for args in "--kineto $d/trace.json $d/dump.json $d/dump.json" "--out x.json $d/dump.json"; do
  rc=0
  # shellcheck disable=SC2086
  "$rep" $args >/dev/null 2>"$AG_TMP/err" || rc=$?
  [ "$rc" = 2 ] && tail -1 "$AG_TMP/err" | grep -qE '^autograph-report: --(kineto takes one dump|out goes with --kineto)' ||
    { cat "$AG_TMP/err"; ag_fail "'$args': exit $rc"; }
  echo "ok: exit 2: $(tail -1 "$AG_TMP/err")"
done

# The generator's events against the real traces (beside the repository, as for tools/bench):
# every field of a generated event, and of its args, occurs in real events of the same phase
# and category. The tool on a real trace with graph launches of the program's own: all left as
# they are, nothing added.
traces=${AG_TRACES:-$AG_ROOT/../shared/traces}
[ -f "$traces/hta_trace_diff_test.json.gz" ] ||
  { echo "skipped the comparison with real traces: none in $traces (AG_TRACES)"; exit 0; }
python3 - "$traces" "$d/trace.json" <<'PY' || ag_fail "generated events differ from real ones"
import glob, gzip, json, os, sys
real = {}
# Kineto's older flow category (async_cpu_to_gpu) and its newer one (ac2g) among them.
for p in [os.path.join(sys.argv[1], t) for t in ("hta_trace_diff_test.json.gz",
                                                  "param_linear_kineto.json.gz")]:
    for e in json.load(gzip.open(p))["traceEvents"]:
        k = real.setdefault((e.get("ph"), e.get("cat")), [set(), set()])
        k[0].update(e), k[1].update(e.get("args") or {})
real[("X", "cuda_driver")] = real[("X", "cuda_runtime")]  # recorded alike by newer Kineto
errors, kinds = [], set()
for e in json.load(open(sys.argv[2]))["traceEvents"]:
    key = (e.get("ph"), e.get("cat"))
    kinds.add(key)
    if key not in real:
        errors.append("no real event of phase and category %s" % (key,))
        continue
    extra = (set(e) - real[key][0]) | {"args." + a for a in set(e.get("args") or {}) - real[key][1]}
    if extra:
        errors.append("%s event with fields no real one has: %s" % (key, sorted(extra)))
for x in sorted(set(errors)):
    print("format:", x, file=sys.stderr)
sys.exit(1 if errors else print("ok: the generated trace's %d kinds of event have the fields of "
                                 "real ones: %s" % (len(kinds), sorted(map(str, kinds)))))
PY
"$rep" --kineto "$traces/hta_trace_diff_test.json.gz" --out "$AG_TMP/real.json" "$d/dump.json" >"$AG_TMP/text" ||
  ag_fail "--kineto failed on a real trace"
cat "$AG_TMP/text"
grep -qE '^  graph launches      12 \(0 without an API row' "$AG_TMP/text" && grep -qE '^    matched           0$' "$AG_TMP/text" ||
  ag_fail "the real trace's 12 graph launches are not all left as they are"
python3 - "$traces/hta_trace_diff_test.json.gz" "$AG_TMP/real.json" <<'PY' || ag_fail "the real trace was changed"
import gzip, json, sys
a = json.load(gzip.open(sys.argv[1]))["traceEvents"]
b = json.load(open(sys.argv[2]))["traceEvents"]
changed = sum(1 for x, y in zip(a, b) if x != y and not (y.get("args", {}).get("autograph")))
assert len(a) == len(b) and changed == 0, (len(a), len(b), changed)
print("ok: the real trace's %d events unchanged but for the note on its graph launches" % len(a))
PY
