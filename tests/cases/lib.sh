# lib.sh — shell helpers for the case scripts in tests/cases (sourced, never run).
#
# The runner (tests/run-tests) gives every case AG_ROOT, BUILD, AG_LIB (the preload library),
# AG_SIM (the simulated CUDA libraries, already on LD_LIBRARY_PATH) and AG_TMP (a private
# scratch folder it removes afterwards). A case exits 0 to pass, 77 to skip (its last output
# line says why), anything else to fail; these helpers print what they compared before failing.
#
# The preload comparison, ag_compare_prog NAME [ARGS…] [-- FAMILY…]:
#   1. runs $BUILD/tests/progs/NAME twice without the library: same exit status, same stdout
#      (the programs are deterministic, so a difference is a bug in the program or simulator);
#   2. runs it with LD_PRELOAD=$AG_LIB AUTOGRAPH_STATS=$AG_TMP/stats.json: same exit status and
#      byte-identical stdout, i.e. the library changed nothing the program can see;
#   3. checks the statistics against the program's own last line
#      `launches: runtime=R driver=D cudnn=0` or `… cudnn_calls=K` (ag_check_stats).
# Replay: AG_EXPECT_REPLAY unset allows graph replays (replayed >= 0), =1 requires replayed > 0,
# =0 requires replayed == 0. ag_compare_prog leaves the statistics path in AG_STATS, so a case
# can assert more with ag_expect; ag_rerun repeats only the run with the library (under other
# settings in the environment: AUTOGRAPH_*, SIM_FAIL) against the first plain run.
# Every run is bounded by AG_PROG_TIMEOUT seconds (default 60) so that a deadlock fails with a
# message instead of reaching the runner's limit. An LD_PRELOAD already in the environment (a
# sanitizer runtime, say) is kept in every run, first, and the library is added after it.
#
# Run directly (the runner runs every tests/cases/*.sh), this file tests its own statistics
# checker on made-up statistics files: see the end of the file.

set -u

AG_PROG_TIMEOUT=${AG_PROG_TIMEOUT:-60}
# A sanitizer build's runtime (AG_SAN_PRELOAD, set by `make asan`/`make tsan`) goes first of all.
AG_PRELOAD_BASE=${AG_SAN_PRELOAD:-}${LD_PRELOAD:+${AG_SAN_PRELOAD:+ }$LD_PRELOAD}

# The LD_PRELOAD value that adds the library (or the given libraries) to the inherited one.
ag_preload() {
  echo "${AG_PRELOAD_BASE:+$AG_PRELOAD_BASE }$*"
}

ag_fail() {
  echo "FAIL: $*" >&2
  exit 1
}

ag_skip() {
  echo "$*"
  exit 77
}

# ag_seed_stable NAME [ARGS…] — runs the program without the library under SIM_SEED=1, 2 and 3
# (each within the runner's time limit): each run must succeed and print the same as the first,
# which is left in AG_REF and echoed.
ag_seed_stable() {
  local prog=$1 out seed
  shift
  ag_need "$prog"
  AG_REF=
  for seed in 1 2 3; do
    out=$(SIM_SEED=$seed LD_PRELOAD="$AG_PRELOAD_BASE" timeout "$AG_PROG_TIMEOUT" \
      "$BUILD/tests/progs/$prog" "$@") ||
      { printf '%s\n' "$out"; ag_fail "$prog failed under SIM_SEED=$seed"; }
    if [ $seed = 1 ]; then
      AG_REF=$out
      printf '%s\n' "$AG_REF"
    elif [ "$out" != "$AG_REF" ]; then
      diff <(printf '%s\n' "$AG_REF") <(printf '%s\n' "$out") >&2
      ag_fail "$prog: output under SIM_SEED=$seed differs from SIM_SEED=1"
    fi
  done
}

# Skips the case unless the preload library, the simulator and each named program are built.
ag_need() {
  [ -f "$AG_LIB" ] || ag_skip "skipped: $AG_LIB is not built"
  [ -f "$AG_SIM/libcudart.so.13" ] || ag_skip "skipped: the simulator ($AG_SIM) is not built"
  local p
  for p in "$@"; do
    [ -x "$BUILD/tests/progs/$p" ] || ag_skip "skipped: $BUILD/tests/progs/$p is not built"
  done
}

# ag_run OUT_PREFIX CMD… — runs CMD with the time limit, stdout to OUT_PREFIX.out, stderr to
# OUT_PREFIX.err, exit status to OUT_PREFIX.rc. The environment is the caller's (use env).
ag_run() {
  local prefix=$1
  shift
  timeout -k 5 "$AG_PROG_TIMEOUT" "$@" >"$prefix.out" 2>"$prefix.err"
  echo $? >"$prefix.rc"
  if [ "$(cat "$prefix.rc")" = 124 ]; then
    echo "timed out after ${AG_PROG_TIMEOUT}s: $*" >&2
  fi
}

# ag_same A B — the two runs (prefixes given to ag_run) have the same exit status and stdout.
ag_same() {
  local a=$1 b=$2
  if [ "$(cat "$a.rc")" != "$(cat "$b.rc")" ]; then
    echo "--- stderr of $(basename "$a")" >&2; tail -n 20 "$a.err" >&2
    echo "--- stderr of $(basename "$b")" >&2; tail -n 20 "$b.err" >&2
    ag_fail "exit status differs: $(basename "$a")=$(cat "$a.rc") $(basename "$b")=$(cat "$b.rc")"
  fi
  if ! cmp -s "$a.out" "$b.out"; then
    diff -u "$a.out" "$b.out" | head -n 40 >&2
    ag_fail "stdout differs between $(basename "$a") and $(basename "$b")"
  fi
}

# ag_ok PREFIX — the run exited 0 and ended with a launches line.
ag_ok() {
  local p=$1
  if [ "$(cat "$p.rc")" != 0 ]; then
    tail -n 20 "$p.err" >&2
    ag_fail "$(basename "$p") exited with status $(cat "$p.rc")"
  fi
  tail -n 1 "$p.out" | grep -q '^launches: ' ||
    ag_fail "$(basename "$p"): last line is not a launches line: $(tail -n 1 "$p.out")"
}

# ag_check_stats STATS_JSON LAUNCH_LINE [FAMILY…] — the statistics agree with the program's own
# count: by_path.runtime and by_path.driver exactly; for cuDNN programs by_path.cudnn >= the
# number of cuDNN calls and > 0, otherwise by_path.cudnn == 0; launches == their sum;
# passthrough + replayed == launches; replayed > 0 when AG_EXPECT_REPLAY=1, == 0 when it is 0,
# anything when it is unset; each FAMILY counted (families.FAMILY > 0); the run-time compiler's
# object `jit` present, its counts integers.
ag_check_stats() {
  local stats=$1 line=$2
  shift 2
  [ -s "$stats" ] || ag_fail "no statistics written to $stats"
  python3 - "$stats" "$line" "${AG_EXPECT_REPLAY:-}" "$@" <<'EOF' || ag_fail "statistics do not match (see above)"
import json, re, sys

path, line, want_replay, families = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
with open(path) as f:
    st = json.load(f)
m = re.fullmatch(r"launches: runtime=(\d+) driver=(\d+) (cudnn|cudnn_calls)=(\d+)", line.strip())
if not m:
    sys.exit(f"cannot parse the program's launches line: {line!r}")
rt, drv, kind, k = int(m[1]), int(m[2]), m[3], int(m[4])
errors = []

def num(obj, key, where):
    v = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(v, int) or isinstance(v, bool):
        errors.append(f"{where}{key} is missing or not an integer: {v!r}")
        return None
    return v

def expect(cond, text):
    if not cond:
        errors.append(text)

if st.get("version") != 1:
    errors.append(f"version is {st.get('version')!r}, expected 1")
launches = num(st, "launches", "")
replayed = num(st, "replayed", "")
passthrough = num(st, "passthrough", "")
by_path = st.get("by_path", {})
p_rt = num(by_path, "runtime", "by_path.")
p_drv = num(by_path, "driver", "by_path.")
p_dnn = num(by_path, "cudnn", "by_path.")
if not errors:
    expect(p_rt == rt, f"by_path.runtime={p_rt}, the program made {rt} runtime launches")
    expect(p_drv == drv, f"by_path.driver={p_drv}, the program made {drv} driver launches")
    if kind == "cudnn":
        expect(k == 0 and p_dnn == 0, f"by_path.cudnn={p_dnn}, the program made {k} cuDNN launches")
    else:
        expect(k > 0, f"the program reports {k} cuDNN calls; the test needs some")
        expect(p_dnn >= k and p_dnn > 0,
               f"by_path.cudnn={p_dnn}, expected at least the {k} cuDNN calls the program made")
    expect(launches == p_rt + p_drv + p_dnn,
           f"launches={launches} != by_path sum {p_rt}+{p_drv}+{p_dnn}")
    expect(passthrough + replayed == launches,
           f"passthrough={passthrough} + replayed={replayed} != launches={launches}")
    if want_replay == "0":
        expect(replayed == 0, f"replayed={replayed}, expected 0 (replay not expected)")
        expect(passthrough == launches, f"passthrough={passthrough} != launches={launches}")
    elif want_replay == "1":
        expect(replayed > 0, f"replayed={replayed}, expected graph replays (AG_EXPECT_REPLAY=1)")
# The run-time compiler's counts (docs/options.md), present whether or not it ran.
jit = st.get("jit")
if isinstance(jit, dict):
    for key in ("compiles", "cache_hits", "cache_rejected", "failures"):
        num(jit, key, "jit.")
else:
    errors.append(f"jit is missing or not an object: {jit!r}")
fam = st.get("families", {})
for name in families:
    v = num(fam, name, "families.")
    if v is not None:
        expect(v > 0, f"families.{name}={v}, expected > 0")
for e in errors:
    print("stats:", e, file=sys.stderr)
if errors:
    print("stats file:", json.dumps(st, sort_keys=True), file=sys.stderr)
    sys.exit(1)
print(f"stats ok: launches={launches} runtime={p_rt} driver={p_drv} cudnn={p_dnn}"
      + f" replayed={replayed} graphs={st.get('graphs')} updates={st.get('updates')}"
      + f" fallbacks={json.dumps(st.get('fallbacks', {}), sort_keys=True)}"
      + (f" families {','.join(families)} counted" if families else ""))
EOF
}

# ag_compare_prog NAME [ARGS…] [-- FAMILY…] — the whole comparison described at the top.
ag_compare_prog() {
  local name=$1
  shift
  local args=() fams=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do args+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  fams=("$@")
  ag_need "$name"
  local prog=$BUILD/tests/progs/$name d=$AG_TMP/$name
  mkdir -p "$d"

  ag_run "$d/plain1" env LD_PRELOAD="$AG_PRELOAD_BASE" "$prog" "${args[@]}"
  ag_ok "$d/plain1"
  ag_run "$d/plain2" env LD_PRELOAD="$AG_PRELOAD_BASE" "$prog" "${args[@]}"
  ag_same "$d/plain1" "$d/plain2"
  echo "$name: deterministic without the library"

  rm -f "$d/stats.json"
  ag_run "$d/preload" env LD_PRELOAD="$(ag_preload "$AG_LIB")" AUTOGRAPH_STATS="$d/stats.json" "$prog" "${args[@]}"
  ag_same "$d/plain1" "$d/preload"
  echo "$name: identical output with the library"
  ag_check_stats "$d/stats.json" "$(tail -n 1 "$d/plain1.out")" "${fams[@]}"
  AG_STATS=$d/stats.json
}

# ag_rerun NAME TAG [ARGS…] [-- FAMILY…] — after ag_compare_prog NAME (same ARGS): one more run
# with the library, under whatever AUTOGRAPH_*/SIM_* settings the caller exported, compared with
# the first plain run (same exit status, byte-identical stdout), its statistics checked as above.
# Output goes to $AG_TMP/NAME/TAG.*; AG_STATS names its statistics.
ag_rerun() {
  local name=$1 tag=$2
  shift 2
  local args=() fams=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do args+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  fams=("$@")
  local prog=$BUILD/tests/progs/$name d=$AG_TMP/$name
  [ -f "$d/plain1.out" ] || ag_fail "ag_rerun $name: run ag_compare_prog $name first"
  rm -f "$d/$tag.json"
  ag_run "$d/$tag" env LD_PRELOAD="$(ag_preload "$AG_LIB")" AUTOGRAPH_STATS="$d/$tag.json" "$prog" "${args[@]}"
  ag_same "$d/plain1" "$d/$tag"
  echo "$name [$tag]: identical output with the library"
  ag_check_stats "$d/$tag.json" "$(tail -n 1 "$d/plain1.out")" "${fams[@]}"
  AG_STATS=$d/$tag.json
}

# Expressions for ag_expect where a program replays a known number of steps. A hold that reaches
# its bound (the host paused for several times its usual pace: a loaded machine, a sanitizer)
# sends the held part of a step out early, as a prefix replay: that step takes one graph launch
# more, and a fused pair the cut fell inside runs as its originals. Where the prefix cannot run
# alone (the cut fell inside a fused node), the held launches and the rest of that step run as
# ordinary launches instead: one graph launch fewer. So:
# ag_graph_launches N — graph_launches is N, give or take one per such hold (st['hold_timeouts']);
# ag_per_replay EXPR N — EXPR (something counted once per whole replay) is N, less at most one
# per such hold;
# ag_replayed L N — replayed is L launches in each of N steps, less at most one step's per hold.
ag_graph_launches() { echo "$1 - st['hold_timeouts'] <= graph_launches <= $1 + st['hold_timeouts']"; }
ag_per_replay() { echo "$2 - st['hold_timeouts'] <= $1 <= $2"; }
ag_replayed() { echo "$1 * ($2 - st['hold_timeouts']) <= replayed <= $1 * $2"; }

# ag_expect STATS_JSON EXPR… — each Python expression holds over the statistics. Names: every
# top-level integer field (launches, replayed, graphs, graph_launches, updates, passthrough,
# sequences, demotions, evictions, fused; 0 when absent), fb (fallbacks: a mapping whose missing
# reasons read 0), fam (families, likewise), fp (fused_by_pattern, likewise) and st (the whole
# object). Prints each expression
# and the values; fails when one does not hold or cannot be evaluated.
ag_expect() {
  local stats=$1
  shift
  [ -s "$stats" ] || ag_fail "no statistics written to $stats"
  python3 - "$stats" "$@" <<'EOF' || ag_fail "expectations on the statistics do not hold (see above)"
import collections, json, sys

with open(sys.argv[1]) as f:
    st = json.load(f)
env = {k: 0 for k in ("launches", "replayed", "graphs", "graph_launches", "updates",
                      "passthrough", "sequences", "demotions", "evictions", "fused")}
for k, v in st.items():
    if isinstance(v, int) and not isinstance(v, bool):
        env[k] = v
env["fb"] = collections.defaultdict(int, st.get("fallbacks") or {})
env["fam"] = collections.defaultdict(int, st.get("families") or {})
env["fp"] = collections.defaultdict(int, st.get("fused_by_pattern") or {})
env["st"] = st
shown = ("launches", "replayed", "passthrough", "graphs", "graph_launches", "updates")
values = " ".join(f"{k}={env[k]}" for k in shown)
values += " fallbacks=" + json.dumps(st.get("fallbacks", {}), sort_keys=True)
bad = 0
for expr in sys.argv[2:]:
    try:
        ok = bool(eval(expr, {"__builtins__": {"min": min, "max": max, "sum": sum}}, env))
    except Exception as e:  # a missing field or a typo must fail, never pass
        ok = False
        print(f"expect: {expr}: cannot evaluate: {e}", file=sys.stderr)
    print(f"expect: {expr}: {'ok' if ok else 'FAILED'}", file=sys.stdout if ok else sys.stderr)
    bad += not ok
print(f"stats: {values}", file=sys.stderr if bad else sys.stdout)
sys.exit(1 if bad else 0)
EOF
}

# ag_fault_sweep NAME [ARGS…] — graph-API fault injection on a program that replays.
# A baseline comparison must replay (graphs > 0). Then, for each graph API the engine may call,
# SIM_FAIL makes its 1st call, a later call (half way through what the baseline made) and every
# call from the 2nd on fail; each run must give byte-identical output and report the failure
# as fallbacks.graph_error or fallbacks.demoted. Where the engine may use one of several APIs
# for a step (instantiation, node update), each is tried from its first call; at least one
# must be in use, and the sweep covers those that are. Failing destruction must change nothing.
# How many calls the baseline made is read from its statistics: cuGraphCreate, cuGraphAddKernelNode
# and instantiation at least `graphs`, cuGraphLaunch `graph_launches`, node updates `updates`;
# a point beyond that count is not run. Whether a fault fired is read from SIM_FAIL_LOG: a half-way
# point that this run never reached (fewer graph launches on a loaded machine) is halved until it
# fires; a fault at the 1st or 2nd call that never fires fails the test.
ag_fault_sweep() {
  local name=$1
  shift
  local args=("$@")
  AG_EXPECT_REPLAY=1 ag_compare_prog "$name" "${args[@]}"
  ag_expect "$AG_STATS" "graphs > 0" "replayed > 0"
  local graphs launches updates
  read -r graphs launches updates < <(python3 -c '
import json, sys
st = json.load(open(sys.argv[1]))
print(st.get("graphs", 0), st.get("graph_launches", 0), st.get("updates", 0))' "$AG_STATS")
  local failed_expect="fb['graph_error'] > 0 or fb['demoted'] > 0"

  # Which of the alternatives the engine calls: each one failing from its first call.
  local used=() api
  for api in cuGraphInstantiateWithFlags cuGraphInstantiate cuGraphInstantiateWithParams \
             cuGraphExecKernelNodeSetParams cuGraphExecUpdate; do
    SIM_FAIL=$api:1+ ag_rerun "$name" "fail-$api-all" "${args[@]}"
    if (ag_expect "$AG_STATS" "$failed_expect") >/dev/null 2>&1; then used+=("$api"); fi
  done
  echo "$name: the engine calls: ${used[*]:-none of the alternatives}"
  case " ${used[*]} " in
    *" cuGraphInstantiate"*) ;;
    *) ag_fail "no instantiation API failure was reported: the engine calls none of cuGraphInstantiate{,WithFlags,WithParams}, or ignores its failure" ;;
  esac

  local sweep=("cuGraphCreate $graphs" "cuGraphAddKernelNode $graphs" "cuGraphLaunch $launches")
  for api in "${used[@]}"; do
    case $api in
      cuGraphInstantiate*) sweep+=("$api $graphs") ;;
      *) sweep+=("$api $updates") ;;
    esac
  done
  local entry count point fired=$AG_TMP/$name/fired.log
  for entry in "${sweep[@]}"; do
    read -r api count <<<"$entry"
    for point in 1 $(( count / 2 > 1 ? count / 2 : 2 )) 2+; do
      if [ "${point%+}" -gt "$count" ]; then
        echo "$name: $api:$point not run (the baseline made about $count calls)"
        continue
      fi
      while :; do
        rm -f "$fired"
        SIM_FAIL=$api:$point SIM_FAIL_LOG=$fired ag_rerun "$name" "fail-$api-$point" "${args[@]}"
        [ -s "$fired" ] && break
        # The number of calls can depend on timing (graph launches follow the host's pace): a
        # point half way through the baseline's calls may lie beyond this run's. Move it earlier.
        case $point in
          1 | 2 | *+) ag_fail "$api:$point never failed: the run made no such call" ;;
        esac
        echo "$name: $api:$point not reached by this run; trying $(( point / 2 ))"
        point=$(( point / 2 ))
      done
      ag_expect "$AG_STATS" "$failed_expect"
    done
  done
  for api in cuGraphDestroy cuGraphExecDestroy; do
    SIM_FAIL=$api:1+ ag_rerun "$name" "fail-$api-all" "${args[@]}"
  done
  echo "$name: identical output under every injected graph-API failure"
}

# ---- self-test, when run as a case rather than sourced ----
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  t=${AG_TMP:-$(mktemp -d)}
  stats() { # launches runtime driver cudnn replayed passthrough copy [jit.failures]
    {
      printf '{"version":1,"launches":%d,"replayed":%d,"graphs":0,"graph_launches":0,"updates":0,' \
        "$1" "$5"
      printf '"passthrough":%d,"fallbacks":{},"by_path":{"runtime":%d,"driver":%d,"cudnn":%d},' \
        "$6" "$2" "$3" "$4"
      printf '"jit":{"compiles":0,"cache_hits":0,"cache_rejected":0,"failures":%s},' "${8:-0}"
      printf '"families":{"launch":%d,"copy":%d},"calls":{}}\n' "$1" "$7"
    } >"$t/s.json"
  }
  good() { (ag_check_stats "$t/s.json" "$@") >/dev/null 2>&1 || ag_fail "rejected: $(cat "$t/s.json") for $*"; }
  bad() { ! (ag_check_stats "$t/s.json" "$@") >/dev/null 2>&1 || ag_fail "accepted: $(cat "$t/s.json") for $*"; }
  stats 30 20 10 0 0 30 4
  good "launches: runtime=20 driver=10 cudnn=0" launch copy
  bad "launches: runtime=21 driver=10 cudnn=0"
  bad "launches: runtime=20 driver=9 cudnn=0"
  bad "launches: runtime=20 driver=10 cudnn_calls=3"
  bad "launches: runtime=20 driver=10 cudnn=0" memset
  bad "no launches line"
  stats 30 20 10 0 0 30 0
  bad "launches: runtime=20 driver=10 cudnn=0" copy
  # The run-time compiler's object: its counts must be integers, and it must be there.
  stats 30 20 10 0 0 30 4 '"none"'
  bad "launches: runtime=20 driver=10 cudnn=0"
  stats 30 20 10 0 0 30 4
  sed -i 's/"jit":{[^}]*},//' "$t/s.json"
  bad "launches: runtime=20 driver=10 cudnn=0"
  stats 30 20 10 0 5 25 1
  good "launches: runtime=20 driver=10 cudnn=0"
  (AG_EXPECT_REPLAY=0 ag_check_stats "$t/s.json" "launches: runtime=20 driver=10 cudnn=0") \
    >/dev/null 2>&1 && ag_fail "replay accepted with AG_EXPECT_REPLAY=0"
  (AG_EXPECT_REPLAY=1 ag_check_stats "$t/s.json" "launches: runtime=20 driver=10 cudnn=0") \
    >/dev/null 2>&1 || ag_fail "replay not accepted with AG_EXPECT_REPLAY=1"
  stats 30 20 10 0 5 24 1
  bad "launches: runtime=20 driver=10 cudnn=0"
  stats 30 20 10 0 0 30 1
  (AG_EXPECT_REPLAY=1 ag_check_stats "$t/s.json" "launches: runtime=20 driver=10 cudnn=0") \
    >/dev/null 2>&1 && ag_fail "no replay accepted with AG_EXPECT_REPLAY=1"
  stats 30 20 10 0 27 3 1
  (ag_expect "$t/s.json" "replayed >= 0.9 * launches" "fb['denied'] == 0" "demotions == 0") \
    >/dev/null 2>&1 || ag_fail "ag_expect rejected true expectations"
  (ag_expect "$t/s.json" "replayed >= 0.9 * launches" "updates > 0") >/dev/null 2>&1 &&
    ag_fail "ag_expect accepted a false expectation"
  (ag_expect "$t/s.json" "no_such_name > 0") >/dev/null 2>&1 &&
    ag_fail "ag_expect accepted an expression it cannot evaluate"
  stats 31 20 10 1 0 30 1
  bad "launches: runtime=20 driver=10 cudnn=0"
  stats 50 4 0 46 0 50 1
  good "launches: runtime=4 driver=0 cudnn_calls=36"
  bad "launches: runtime=4 driver=0 cudnn_calls=47"
  bad "launches: runtime=4 driver=0 cudnn_calls=0"
  bad "launches: runtime=4 driver=0 cudnn=0"
  echo '{"version":1}' >"$t/s.json"
  bad "launches: runtime=0 driver=0 cudnn=0"
  : >"$t/s.json"
  bad "launches: runtime=0 driver=0 cudnn=0"
  echo "lib.sh: statistics checker accepts and rejects as intended"
fi
