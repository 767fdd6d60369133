#!/usr/bin/env bash
# dump-schema.sh — the checker of AUTOGRAPH_DUMP documents, sourced by the other dump-*.sh cases.
#
# dump_check FILE [EXPR…]: FILE is valid JSON of schema "autograph-dump" version 3 with every
# field of docs/dump-and-report.md present and of its type (totals.cuts, runs_total and runs
# included; each sequence's stream and chunks, each kernel's position and node); sequences are
# sorted by saved_ns_est (descending), and a graphed one lists its chunks; unless truncated, the sum of launches_replayed equals totals.replayed and the
# number of non-denied sequences equals totals.sequences. Then each Python expression must
# hold, over: d (the document), seqs (its sequences), totals, states (a Counter of the states),
# kernels (every kernel of every sequence), varied (every (kernel name, index, kind) seen), cuts
# (totals.cuts) and runs.
# Run directly (the runner runs every tests/cases/*.sh), it tests the checker itself on a
# made-up document: good ones accepted, broken ones rejected.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

dump_check() {
  local file=$1
  shift
  [ -s "$file" ] || ag_fail "no dump written to $file"
  python3 - "$file" "$@" <<'EOF' || ag_fail "the dump $file is not as expected (see above)"
import collections, json, sys

path, exprs = sys.argv[1], sys.argv[2:]
errors = []
try:
    with open(path) as f:
        d = json.load(f)
except Exception as e:
    sys.exit(f"dump: {path} is not valid JSON: {e}")

def isint(v):
    return isinstance(v, int) and not isinstance(v, bool)

def isnum(v):
    return (isint(v) or isinstance(v, float))

def need(obj, key, pred, what, where):
    v = obj.get(key, KeyError) if isinstance(obj, dict) else KeyError
    if v is KeyError:
        errors.append(f"{where}{key}: missing")
    elif not pred(v):
        errors.append(f"{where}{key}: {v!r} is not {what}")
    return v

isstr = lambda v: isinstance(v, str)
need(d, "schema", lambda v: v == "autograph-dump", '"autograph-dump"', "")
need(d, "version", lambda v: v == 3, "3", "")
need(d, "written_at", lambda v: v in ("exit", "signal", "interval"), "exit|signal|interval", "")
p = need(d, "process", lambda v: isinstance(v, dict), "an object", "")
if isinstance(p, dict):
    need(p, "pid", isint, "an integer", "process.")
    need(p, "argv", lambda v: isinstance(v, list) and all(map(isstr, v)) and v, "a list of strings", "process.")
    need(p, "runtime_version", lambda v: v is None or isint(v), "an integer or null", "process.")
    need(p, "driver_version", lambda v: v is None or isint(v), "an integer or null", "process.")
    opts = need(p, "options", lambda v: isinstance(v, dict) and all(map(isstr, v.values())),
                "an object of strings", "process.")
    if isinstance(opts, dict):
        for o in ("AUTOGRAPH_DUMP", "AUTOGRAPH_DUMP_INTERVAL", "AUTOGRAPH_DUMP_MAX_SEQ",
                  "AUTOGRAPH_STATS", "AUTOGRAPH_REPEATS", "AUTOGRAPH_DENY"):
            if o not in opts:
                errors.append(f"process.options.{o}: missing")
totals = need(d, "totals", lambda v: isinstance(v, dict), "an object", "")
if isinstance(totals, dict):
    for k in ("launches", "replayed", "graphs", "graph_launches", "updates", "passthrough"):
        need(totals, k, isint, "an integer", "totals.")
    need(totals, "fallbacks", lambda v: isinstance(v, dict) and all(map(isint, v.values())),
         "an object of integers", "totals.")
truncated = need(d, "truncated", lambda v: isinstance(v, bool), "a boolean", "")
need(d, "sequences_omitted", lambda v: isint(v) and v >= 0, "a count", "")
seqs = need(d, "sequences", lambda v: isinstance(v, list), "a list", "")
if not isinstance(seqs, list):
    seqs = []
kernels, varied = [], []
for i, s in enumerate(seqs):
    w = f"sequences[{i}]."
    need(s, "id", isint, "an integer", w)
    need(s, "hash", lambda v: isstr(v) and len(v) == 16 and all(c in "0123456789abcdef" for c in v),
         "16 hex digits", w)
    for k in ("length", "seen", "replays", "launches_replayed"):
        need(s, k, lambda v: isint(v) and v >= 0, "a count", w)
    need(s, "state", lambda v: v in ("learning", "graphed", "demoted", "denied", "evicted"),
         "a state", w)
    need(s, "reason", lambda v: v is None or isstr(v), "a string or null", w)
    h = need(s, "host_ns", lambda v: isinstance(v, dict), "an object", w)
    if isinstance(h, dict):
        need(h, "launch_mean", lambda v: v is None or isnum(v), "a number or null", w + "host_ns.")
        need(h, "replay_mean", lambda v: v is None or isnum(v), "a number or null", w + "host_ns.")
    need(s, "saved_ns_est", isnum, "a number", w)
    if s.get("state") == "demoted" and not s.get("reason"):
        errors.append(f"{w}reason: a demoted sequence must say why")
    need(s, "stream", lambda v: v is None or (isstr(v) and v.startswith("0x")),
         "a hex string or null", w)
    need(s, "chunks", lambda v: v is None or (isinstance(v, list) and v and v[0] == 0 and
                                              all(map(isint, v)) and v == sorted(set(v))),
         "ascending node indices from 0, or null", w)
    if s.get("state") == "graphed" and s.get("chunks") is None:
        errors.append(f"{w}chunks: a graphed sequence must list its graph's chunks")
    ks = need(s, "kernels", lambda v: isinstance(v, list), "a list", w)
    for j, k in enumerate(ks if isinstance(ks, list) else []):
        kw = f"{w}kernels[{j}]."
        need(k, "position", lambda v: v == j, f"{j} (its index)", kw)
        need(k, "node", lambda v: v in ("kernel", "memset", "memcpy", "event_record", "event_wait"),
             "a node kind", kw)
        need(k, "name", isstr, "a string", kw)
        need(k, "demangled", isstr, "a string", kw)
        need(k, "path", lambda v: v in ("runtime", "driver", "cudnn"), "a path", kw)
        need(k, "cudnn_call", lambda v: v is None or isstr(v), "a string or null", kw)
        for key in ("grid", "block"):
            need(k, key, lambda v: isinstance(v, list) and len(v) == 3 and all(map(isint, v)),
                 "three integers", kw)
        need(k, "shmem", isint, "an integer", kw)
        need(k, "param_sizes", lambda v: isinstance(v, list) and all(map(isint, v)), "integers", kw)
        vs = need(k, "varied", lambda v: isinstance(v, list), "a list", kw)
        for v in vs if isinstance(vs, list) else []:
            if not (isinstance(v, dict) and isint(v.get("index")) and v.get("kind") in ("pointer", "value")):
                errors.append(f"{kw}varied: bad entry {v!r}")
            else:
                varied.append((k.get("name"), v["index"], v["kind"]))
        kernels.append(k)
saved = [s.get("saved_ns_est") for s in seqs if isnum(s.get("saved_ns_est"))]
if saved != sorted(saved, reverse=True):
    errors.append("sequences are not sorted by saved_ns_est, descending")
if not errors and truncated is False and isinstance(totals, dict):
    total = sum(s["launches_replayed"] for s in seqs)
    if total != totals["replayed"]:
        errors.append(f"sum of launches_replayed {total} != totals.replayed {totals['replayed']}")
    if "sequences" in totals:
        n = sum(1 for s in seqs if s["state"] != "denied")
        if n != totals["sequences"]:
            errors.append(f"{n} sequences listed, totals.sequences is {totals['sequences']}")
    if d.get("sequences_omitted") != 0:
        errors.append("sequences_omitted is not 0 in a document that is not truncated")
isseq = lambda v: v is None or (isint(v) and v > 0)
isnames = lambda v: isinstance(v, list) and all(map(isstr, v)) and len(v) <= 4
cuts = need(totals, "cuts", lambda v: isinstance(v, list), "a list", "totals.") \
    if isinstance(totals, dict) else []
need(totals if isinstance(totals, dict) else {}, "cuts_omitted", isint, "an integer", "totals.")
for i, c in enumerate(cuts if isinstance(cuts, list) else []):
    w = f"totals.cuts[{i}]."
    if not isinstance(c, dict):
        errors.append(f"{w[:-1]}: not an object")
        continue
    need(c, "sequence", isseq, "a positive integer or null", w)
    need(c, "length", lambda v: v is None if c.get("sequence") is None else isint(v),
         "an integer (null without a sequence)", w)
    need(c, "after", lambda v: isint(v) and v > 0, "a positive integer", w)
    need(c, "calls", isnames, "up to 4 strings", w)
    need(c, "count", lambda v: isint(v) and v > 0, "a positive integer", w)
    need(c, "launches", lambda v: v == c.get("after", 0) * c.get("count", 0), "after * count", w)
launched = [c.get("launches", 0) for c in cuts if isinstance(c, dict)] if isinstance(cuts, list) else []
if launched != sorted(launched, reverse=True):
    errors.append("totals.cuts are not sorted by launches, descending")
runs = need(d, "runs", lambda v: isinstance(v, list) and len(v) <= 1024, "a list (1024 at most)", "")
need(d, "runs_total", lambda v: isint(v) and v >= len(runs if isinstance(runs, list) else []),
     "an integer >= len(runs)", "")
for i, r in enumerate(runs if isinstance(runs, list) else []):
    w = f"runs[{i}]."
    if not isinstance(r, dict):
        errors.append(f"{w[:-1]}: not an object")
        continue
    need(r, "sequence", isseq, "a positive integer or null", w)
    need(r, "length", lambda v: v is None if r.get("sequence") is None else isint(v),
         "an integer (null without a sequence)", w)
    need(r, "launches", lambda v: isint(v) and v > 0, "a positive integer", w)
    need(r, "outcome", lambda v: v in ("replayed", "cut", "passed"), "replayed|cut|passed", w)
    need(r, "calls", isnames, "up to 4 strings", w)
states = collections.Counter(s.get("state") for s in seqs)
env = {"d": d, "seqs": seqs, "totals": totals, "states": states, "kernels": kernels,
       "varied": varied, "cuts": cuts, "runs": runs}
for e in exprs:
    try:
        ok = bool(eval(e, {"__builtins__": {"sum": sum, "len": len, "any": any, "all": all,
                                            "min": min, "max": max}}, env))
    except Exception as ex:
        ok = False
        print(f"dump: {e}: cannot evaluate: {ex}", file=sys.stderr)
    print(f"dump: {e}: {'ok' if ok else 'FAILED'}", file=sys.stdout if ok else sys.stderr)
    if not ok:
        errors.append(f"expectation failed: {e}")
for e in errors:
    print("dump:", e, file=sys.stderr)
if errors:
    sys.exit(1)
print(f"dump ok: {path}: {len(seqs)} sequences {dict(states)}, written at {d['written_at']}")
EOF
}

# ---- self-test, when run as a case rather than sourced ----
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  t=${AG_TMP:-$(mktemp -d)}
  doc() { # state replays launches_replayed totals.replayed [cut]
    cat >"$t/d.json" <<JSON
{"schema":"autograph-dump","version":3,"written_at":"exit",
 "process":{"pid":1,"argv":["x"],"runtime_version":null,"driver_version":13000,
  "options":{"AUTOGRAPH_DUMP":"d","AUTOGRAPH_DUMP_INTERVAL":"0","AUTOGRAPH_DUMP_MAX_SEQ":"1000",
   "AUTOGRAPH_STATS":"","AUTOGRAPH_REPEATS":"2","AUTOGRAPH_DENY":""}},
 "totals":{"launches":10,"replayed":$4,"graphs":1,"graph_launches":1,"updates":0,"passthrough":2,
  "fallbacks":{},"sequences":1,"cuts":[${5:-}],"cuts_omitted":0},
 "truncated":false,"sequences_omitted":0,"runs_total":3,
 "runs":[{"sequence":1,"length":4,"launches":4,"outcome":"replayed","calls":["cudaStreamSynchronize"]},
  {"sequence":null,"length":null,"launches":2,"outcome":"passed","calls":[]}],
 "sequences":[{"id":1,"hash":"0123456789abcdef","length":4,"seen":3,"replays":$2,
  "launches_replayed":$3,"state":"$1","reason":null,
  "host_ns":{"launch_mean":100.0,"replay_mean":null},"saved_ns_est":0.0,
  "stream":"0x5a0","chunks":[0],
  "kernels":[{"position":0,"node":"kernel","name":"k","demangled":"k","path":"runtime","cudnn_call":null,"grid":[1,1,1],
   "block":[1,1,1],"shmem":0,"param_sizes":[8,4],"varied":[{"index":1,"kind":"value"}]}]}]}
JSON
  }
  doc graphed 2 8 8
  (dump_check "$t/d.json" "states['graphed'] == 1" "('k', 1, 'value') in varied") >/dev/null 2>&1 ||
    ag_fail "a good document was rejected"
  cut='{"sequence":1,"length":4,"after":3,"calls":["cudaMemcpyAsync","cudaStreamSynchronize"],"count":2,"launches":6}'
  doc graphed 2 8 8 "$cut"
  (dump_check "$t/d.json" "cuts[0]['after'] == 3" "runs[0]['outcome'] == 'replayed'") >/dev/null 2>&1 ||
    ag_fail "a good document with a cut was rejected"
  doc graphed 2 8 8 "${cut/\"launches\":6/\"launches\":5}"
  (dump_check "$t/d.json") >/dev/null 2>&1 && ag_fail "a cut whose launches are not after * count accepted"
  doc graphed 2 8 8 "${cut/\"sequence\":1/\"sequence\":0}"
  (dump_check "$t/d.json") >/dev/null 2>&1 && ag_fail "a cut of sequence 0 accepted"
  (dump_check "$t/d.json" "states['demoted'] == 1") >/dev/null 2>&1 &&
    ag_fail "a false expectation was accepted"
  doc graphed 2 8 9
  (dump_check "$t/d.json") >/dev/null 2>&1 && ag_fail "replayed sum mismatch accepted"
  doc asleep 2 8 8
  (dump_check "$t/d.json") >/dev/null 2>&1 && ag_fail "an unknown state accepted"
  doc demoted 2 8 8
  (dump_check "$t/d.json") >/dev/null 2>&1 && ag_fail "a demoted sequence without a reason accepted"
  doc graphed 2 8 8
  sed -i 's/"position":0/"position":1/' "$t/d.json"
  (dump_check "$t/d.json") >/dev/null 2>&1 && ag_fail "a kernel whose position is not its index accepted"
  doc graphed 2 8 8
  sed -i 's/"chunks":\[0\]/"chunks":[1]/' "$t/d.json"
  (dump_check "$t/d.json") >/dev/null 2>&1 && ag_fail "chunks not beginning at node 0 accepted"
  echo '{"schema":"autograph-dump","version":2' >"$t/d.json"
  (dump_check "$t/d.json") >/dev/null 2>&1 && ag_fail "invalid JSON accepted"
  echo "dump-schema.sh: the dump checker accepts and rejects as intended"
fi
