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
# Every run is bounded by AG_PROG_TIMEOUT seconds (default 60) so that a deadlock fails with a
# message instead of reaching the runner's limit. An LD_PRELOAD already in the environment (a
# sanitizer runtime, say) is kept in every run, first, and the library is added after it.
#
# Run directly (the runner runs every tests/cases/*.sh), this file tests its own statistics
# checker on made-up statistics files: see the end of the file.

set -u

AG_PROG_TIMEOUT=${AG_PROG_TIMEOUT:-60}
AG_PRELOAD_BASE=${LD_PRELOAD:-}

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
# passthrough + replayed == launches, and replayed == 0 unless AG_EXPECT_REPLAY=1 (graph replay
# is a later stage); each FAMILY counted (families.FAMILY > 0).
ag_check_stats() {
  local stats=$1 line=$2
  shift 2
  [ -s "$stats" ] || ag_fail "no statistics written to $stats"
  python3 - "$stats" "$line" "${AG_EXPECT_REPLAY:-0}" "$@" <<'EOF' || ag_fail "statistics do not match (see above)"
import json, re, sys

path, line, allow_replay, families = sys.argv[1], sys.argv[2], sys.argv[3] == "1", sys.argv[4:]
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
    if not allow_replay:
        expect(replayed == 0, f"replayed={replayed}, expected 0 (replay not expected)")
        expect(passthrough == launches, f"passthrough={passthrough} != launches={launches}")
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
}

# ---- self-test, when run as a case rather than sourced ----
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  t=${AG_TMP:-$(mktemp -d)}
  stats() { # launches runtime driver cudnn replayed passthrough copy
    printf '{"version":1,"launches":%d,"replayed":%d,"graphs":0,"graph_launches":0,"updates":0,' \
      "$1" "$5" >"$t/s.json"
    printf '"passthrough":%d,"fallbacks":{},"by_path":{"runtime":%d,"driver":%d,"cudnn":%d},' \
      "$6" "$2" "$3" "$4" >>"$t/s.json"
    printf '"families":{"launch":%d,"copy":%d},"calls":{}}\n' "$1" "$7" >>"$t/s.json"
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
  stats 30 20 10 0 5 25 1
  bad "launches: runtime=20 driver=10 cudnn=0"
  (AG_EXPECT_REPLAY=1 ag_check_stats "$t/s.json" "launches: runtime=20 driver=10 cudnn=0") \
    >/dev/null 2>&1 || ag_fail "replay not allowed by AG_EXPECT_REPLAY=1"
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
