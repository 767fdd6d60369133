# trace-lib.sh — the checker of AUTOGRAPH_TRACE files, for the trace-*.sh cases (sourced after
# lib.sh). Run directly, it tests the checker itself on made-up traces: each kind of defect it
# must catch is planted once and must be rejected, and a correct trace must be accepted.
#
# ag_trace_check TRACE [STATS|-] [EXPR…] — TRACE is a valid Chrome trace as src/trace.h
# describes, and agrees with the statistics file STATS of the same run (unless "-"):
#   - the document: an object with a traceEvents list, displayTimeUnit "ns", otherData with
#     integer recorded_events and dropped_events (recorded_events = the events written);
#   - every event: name (string), ph one of X/i/M, integer pid (one pid) and tid; X: numeric ts
#     and dur >= 0; i: numeric ts and scope s; cat on X and i; M: process_name, thread_name or
#     thread_sort_index with its argument; args an object;
#   - tracks: every tid used has a thread_name, tid 0 is "autograph engine", the others
#     "stream 0x…"; held/build/replay/flush on stream tracks, demote/evict/"trace truncated" on 0;
#   - time: on each track timestamps are non-decreasing in file order, and X slices nest (a slice
#     that starts inside another ends inside it too);
#   - every held run ends with its replay or flush: one on its track ends exactly where it ends,
#     with the same number of launches and the matching outcome;
#   - "trace truncated" is present exactly when dropped_events > 0, last, with args.dropped equal
#     to it;
#   - with STATS and nothing dropped: replay events = graph_launches, builds that succeeded =
#     graphs, demote events = demotions, evict events = evictions, launches of replayed held
#     runs = replayed, and for each of mismatch, flushed, graph_error the launches of the flushes
#     of that reason = fallbacks[reason];
#   - each EXPR, a Python expression, holds. Names: ev (events other than M, in file order),
#     n (a Counter of event names), held, replays, builds, flushes, demotes, evicts (lists of
#     events), causes (the set of causes of held runs and flushes), od (otherData), st (the
#     statistics, {} without), tracks (tid → name), trunc (the truncation event or None).
ag_trace_check() {
  local trace=$1 stats=${2:--}
  shift
  [ $# -gt 0 ] && shift
  [ -s "$trace" ] || ag_fail "no trace written to $trace"
  python3 - "$trace" "$stats" "$@" <<'EOF' || ag_fail "the trace $trace is not as expected (see above)"
import collections, json, sys

path, stats_path, exprs = sys.argv[1], sys.argv[2], sys.argv[3:]
errors = []
def err(msg):
    if len(errors) < 20:
        errors.append(msg)

try:
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
except Exception as e:
    sys.exit(f"trace: not valid JSON: {e}")
st = {}
if stats_path != "-":
    with open(stats_path) as f:
        st = json.load(f)

def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)
def is_num(v):
    return (isinstance(v, (int, float))) and not isinstance(v, bool)

if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
    sys.exit("trace: no traceEvents list")
if doc.get("displayTimeUnit") != "ns":
    err(f"displayTimeUnit is {doc.get('displayTimeUnit')!r}")
od = doc.get("otherData")
if not isinstance(od, dict) or not is_int(od.get("dropped_events")) or not is_int(od.get("recorded_events")):
    sys.exit(f"trace: otherData lacks integer dropped_events/recorded_events: {od!r}")

events = doc["traceEvents"]
tracks, pids, ev = {}, set(), []
EPS = 0.0015  # microseconds: timestamps are written to the nanosecond
STREAM_KINDS = {"held", "build", "replay", "flush"}
ENGINE_KINDS = {"demote", "evict", "trace truncated"}
for i, e in enumerate(events):
    if not isinstance(e, dict):
        err(f"event {i} is not an object"); continue
    name, ph = e.get("name"), e.get("ph")
    if not isinstance(name, str) or ph not in ("X", "i", "M"):
        err(f"event {i}: bad name or ph: {e}"); continue
    if not is_int(e.get("pid")) or not is_int(e.get("tid")):
        err(f"event {i}: pid/tid not integers: {e}"); continue
    pids.add(e["pid"])
    args = e.get("args", {})
    if not isinstance(args, dict):
        err(f"event {i}: args not an object: {e}"); continue
    if ph == "M":
        if name in ("process_name", "thread_name"):
            if not isinstance(args.get("name"), str):
                err(f"event {i}: {name} without a name: {e}")
            if name == "thread_name":
                tracks[e["tid"]] = args.get("name")
        elif name == "thread_sort_index":
            if not is_int(args.get("sort_index")):
                err(f"event {i}: thread_sort_index without sort_index")
        else:
            err(f"event {i}: unknown metadata {name}")
        continue
    if not isinstance(e.get("cat"), str) or not is_num(e.get("ts")) or e["ts"] < 0:
        err(f"event {i}: bad cat or ts: {e}"); continue
    if ph == "X" and (not is_num(e.get("dur")) or e["dur"] < 0):
        err(f"event {i}: X without a valid dur: {e}"); continue
    if ph == "i" and e.get("s") not in ("t", "p", "g"):
        err(f"event {i}: instant without scope: {e}"); continue
    ev.append(e)

if len(pids) > 1:
    err(f"several pids: {sorted(pids)}")
if len(ev) != od["recorded_events"] + (1 if od["dropped_events"] else 0):
    err(f"{len(ev)} events written, otherData says {od['recorded_events']} recorded"
        f" (+1 truncation mark when {od['dropped_events']} dropped)")
for tid, tname in tracks.items():
    want = "autograph engine" if tid == 0 else "stream 0x"
    if not isinstance(tname, str) or not tname.startswith(want):
        err(f"track {tid} is named {tname!r}, expected {want}…")
by_tid = collections.defaultdict(list)
for e in ev:
    if e["tid"] not in tracks:
        err(f"tid {e['tid']} has no thread_name: {e}")
    if e["name"] in STREAM_KINDS and e["tid"] == 0:
        err(f"{e['name']} on the engine track: {e}")
    if e["name"] in ENGINE_KINDS and e["tid"] != 0:
        err(f"{e['name']} not on the engine track: {e}")
    if e["name"] not in STREAM_KINDS | ENGINE_KINDS:
        err(f"unknown event name {e['name']!r}")
    by_tid[e["tid"]].append(e)

for tid, lst in by_tid.items():
    last, stack = -1.0, []
    for e in lst:
        ts = e["ts"]
        if ts + EPS < last:
            err(f"track {tid}: timestamp goes back from {last} to {ts}: {e}")
        last = max(last, ts)
        while stack and stack[-1] <= ts + EPS:
            stack.pop()
        if e["ph"] == "X":
            end = ts + e["dur"]
            if stack and end > stack[-1] + EPS:
                err(f"track {tid}: slice {e['name']} at {ts} ends at {end}, after its parent's end {stack[-1]}")
            stack.append(end)

def kind(k):
    return [e for e in ev if e["name"] == k]
held, replays, builds, flushes = kind("held"), kind("replay"), kind("build"), kind("flush")
demotes, evicts = kind("demote"), kind("evict")
truncs = kind("trace truncated")
trunc = truncs[0] if truncs else None
if od["dropped_events"]:
    if len(truncs) != 1 or ev[-1] is not trunc or trunc["args"].get("dropped") != od["dropped_events"]:
        err(f"{od['dropped_events']} dropped but no single final 'trace truncated' with that count")
elif truncs:
    err("'trace truncated' without dropped events")

ends = collections.defaultdict(list)
for e in replays + flushes:
    ends[(e["tid"], round(e["ts"] + e["dur"], 3))].append(e)
for h in held:
    a = h["args"]
    if not is_int(a.get("launches")) or a.get("outcome") not in ("replay", "flush") or not isinstance(a.get("cause"), str) or not a["cause"]:
        err(f"held: bad args: {h}"); continue
    m = [e for e in ends.get((h["tid"], round(h["ts"] + h["dur"], 3)), [])
         if e["name"] == a["outcome"] and e["args"].get("launches") == a["launches"]]
    if not m and not od["dropped_events"]:
        err(f"held run without its {a['outcome']} at its end: {h}")
for e in replays + builds + demotes + evicts:
    a = e["args"]
    if not is_int(a.get("seq")) or not isinstance(a.get("hash"), str) or len(a["hash"]) != 16 or not is_int(a.get("launches")):
        err(f"{e['name']}: bad seq/hash/launches: {e}")
for e in replays:
    if not is_int(e["args"].get("updates")):
        err(f"replay without updates: {e}")
for e in builds:
    if not isinstance(e["args"].get("ok"), bool):
        err(f"build without ok: {e}")
for e in flushes:
    a = e["args"]
    if not is_int(a.get("launches")) or not isinstance(a.get("cause"), str) or not isinstance(a.get("fallback"), str):
        err(f"flush: bad args: {e}")
for e in demotes:
    if not isinstance(e["args"].get("reason"), str) or not e["args"]["reason"]:
        err(f"demote without reason: {e}")

if st and not od["dropped_events"]:
    fb = st.get("fallbacks", {})
    checks = [
        ("replay events", len(replays), "graph_launches", st.get("graph_launches", 0)),
        ("successful builds", sum(1 for b in builds if b["args"].get("ok")), "graphs", st.get("graphs", 0)),
        ("demote events", len(demotes), "demotions", st.get("demotions", 0)),
        ("evict events", len(evicts), "evictions", st.get("evictions", 0)),
        ("launches of replayed held runs", sum(h["args"]["launches"] for h in held if h["args"].get("outcome") == "replay"),
         "replayed", st.get("replayed", 0)),
    ]
    for reason in ("mismatch", "flushed", "graph_error"):
        checks.append((f"launches flushed for {reason}",
                       sum(e["args"]["launches"] for e in flushes if e["args"].get("fallback") == reason),
                       f"fallbacks.{reason}", fb.get(reason, 0)))
    for what, got, field, want in checks:
        if got != want:
            err(f"{what}: {got}, statistics {field}: {want}")

env = {"ev": ev, "n": collections.Counter(e["name"] for e in ev), "held": held, "replays": replays,
       "builds": builds, "flushes": flushes, "demotes": demotes, "evicts": evicts,
       "causes": {e["args"].get("cause") for e in held + flushes}, "od": od, "st": st,
       "tracks": tracks, "trunc": trunc}
for expr in exprs:
    try:
        # One namespace, as globals, so that comprehensions see the names too.
        ns = dict(env, __builtins__={"len": len, "sum": sum, "min": min, "max": max, "any": any,
                                     "all": all, "set": set, "sorted": sorted})
        ok = bool(eval(expr, ns))
    except Exception as e:
        ok = False
        print(f"trace expect: {expr}: cannot evaluate: {e}", file=sys.stderr)
    if not ok:
        err(f"expectation does not hold: {expr}")
    else:
        print(f"trace expect: {expr}: ok")
for e in errors:
    print("trace:", e, file=sys.stderr)
if errors:
    sys.exit(1)
print(f"trace ok: {dict(sorted(env['n'].items()))} tracks={len(tracks)} dropped={od['dropped_events']}"
      f" causes={sorted(c for c in env['causes'] if c)}")
EOF
}

# ---- self-test, when run as a case rather than sourced ----
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  . "$(dirname "$0")/lib.sh"
  t=${AG_TMP:-$(mktemp -d)}
  # A correct trace of one held run replayed on stream 0x10, one demotion, nothing dropped; each
  # defect below is one substitution into it.
  cat >"$t/good.json" <<'EOF2'
{"traceEvents":[
{"name":"process_name","ph":"M","pid":7,"tid":0,"args":{"name":"autograph: p"}},
{"name":"thread_name","ph":"M","pid":7,"tid":0,"args":{"name":"autograph engine"}},
{"name":"thread_name","ph":"M","pid":7,"tid":1,"args":{"name":"stream 0x10"}},
{"name":"held","cat":"autograph","ph":"X","ts":1.000,"dur":9.000,"pid":7,"tid":1,"args":{"launches":3,"outcome":"replay","cause":"cudaMemcpy"}},
{"name":"build","cat":"autograph","ph":"X","ts":2.000,"dur":3.000,"pid":7,"tid":1,"args":{"seq":1,"hash":"0123456789abcdef","launches":3,"ok":true}},
{"name":"replay","cat":"autograph","ph":"X","ts":6.000,"dur":4.000,"pid":7,"tid":1,"args":{"seq":1,"hash":"0123456789abcdef","launches":3,"updates":0}},
{"name":"demote","cat":"autograph","ph":"i","s":"t","ts":11.000,"pid":7,"tid":0,"args":{"seq":1,"hash":"0123456789abcdef","launches":3,"reason":"r"}}
],"displayTimeUnit":"ns","otherData":{"recorded_events":4,"dropped_events":0}}
EOF2
  echo '{"graphs":1,"graph_launches":1,"replayed":3,"demotions":1,"evictions":0,"fallbacks":{}}' >"$t/st.json"
  (ag_trace_check "$t/good.json" "$t/st.json" "'cudaMemcpy' in causes") >/dev/null 2>&1 ||
    { ag_trace_check "$t/good.json" "$t/st.json"; ag_fail "a correct trace was rejected"; }
  bad() { # DESCRIPTION SED-EXPRESSION [EXPR] — the trace with the substitution is rejected
    sed "$2" "$t/good.json" >"$t/bad.json"
    cmp -s "$t/good.json" "$t/bad.json" && ag_fail "self-test: the substitution for '$1' changed nothing"
    if (ag_trace_check "$t/bad.json" "$t/st.json" ${3:+"$3"}) >/dev/null 2>&1; then
      ag_fail "the checker accepted a trace with $1"
    fi
  }
  bad "invalid JSON" 's/"traceEvents":\[/"traceEvents":[[/'
  bad "a wrong displayTimeUnit" 's/"ns"/"ms"/'
  bad "a wrong recorded count" 's/"recorded_events":4/"recorded_events":5/'
  bad "a slice overlapping its parent's end" 's/"ts":6.000,"dur":4.000/"ts":6.000,"dur":5.000/'
  bad "a timestamp going back" 's/"ts":2.000,"dur":3.000/"ts":0.500,"dur":0.100/'
  bad "an unnamed track" 's/"tid":1,"args":{"name":"stream 0x10"}/"tid":5,"args":{"name":"stream 0x10"}/'
  bad "a badly named stream track" 's/stream 0x10/engine/'
  bad "a replay count different from graph_launches" '/"name":"replay"/d'
  bad "a demotion on a stream track" 's/"tid":0,"args":{"seq"/"tid":1,"args":{"seq"/'
  bad "a held run without its end" 's/"outcome":"replay"/"outcome":"flush"/'
  bad "a failed build counted as a graph" 's/"ok":true/"ok":false/'
  bad "dropped events without the truncation mark" 's/"dropped_events":0/"dropped_events":2/'
  bad "a missing cause" 's/"cause":"cudaMemcpy"/"cause":""/'
  bad "an unmet expectation" 's/cudaMemcpy/cudaFree/' "'cudaMemcpy' in causes"
  bad "an event without pid" 's/"pid":7,"tid":0,"args":{"seq"/"tid":0,"args":{"seq"/'
  echo "trace-lib: the trace checker accepts a correct trace and rejects each planted defect"
fi
