#!/usr/bin/env bash
# tools-launcher.sh — tools/autograph, the launcher, from the source tree.
#
# Checks: the program's exit status passes through, and so does death by a signal (128+N as a
# shell sees it); the library is appended to an inherited LD_PRELOAD, not substituted, and not
# added twice; each option sets its variable (seen by `env` run under the launcher), the default
# AUTOGRAPH_STATS=1 yields to an option or an inherited value; the library is found through
# --lib, AUTOGRAPH_LIB and, in a source tree, ../build/libautograph.so beside tools/; errors of
# the launcher itself exit 125, a missing program 127; --help documents every option; and a real
# CUDA program (tests/progs/train-loop, on the simulator) runs unchanged and ends with the
# library's summary, or writes the statistics file that --stats=PATH names, or the trace that
# --trace=PATH names.
. "$(dirname "$0")/lib.sh"
ag=$AG_ROOT/tools/autograph
[ -f "$AG_LIB" ] || ag_skip "skipped: $AG_LIB is not built"
export AUTOGRAPH_LIB=$AG_LIB
unset AUTOGRAPH_STATS AUTOGRAPH_LOG AUTOGRAPH_DISABLE
d=$AG_TMP
cd "$d" || exit 1

status_of() { "$@" >/dev/null 2>&1; echo $?; }
# Runs the launcher with an inherited LD_PRELOAD (base), which must stay first. Dry runs and
# error cases exec no program and run with an empty LD_PRELOAD, so the expected value is exact.
#
# Under a sanitizer build (AG_SAN_PRELOAD set) the sanitizer runtime is preloaded only together
# with the instrumented library, in front of it, never alone: TSan's runtime in a process with no
# instrumented code is never initialised and its setjmp interceptor jumps through a null
# pointer, so bash and dash die of SIGSEGV before their first line (the launcher is a bash
# script); ASan's refuses to start where an instrumented library is loaded before it. The checks
# up to the CUDA part are about the launcher and run no program of the project's (bash, sh, env,
# printf), so they get no runtime and an uninstrumented stand-in for the library
# (AUTOGRAPH_LIB); the CUDA part runs the project's program with the real library and the
# runtime in front. Without a sanitizer the real library is used throughout.
base=${LD_PRELOAD:-}
if [ -n "${AG_SAN_PRELOAD:-}" ]; then
  mkdir -p "$d/standin"
  printf 'int ag_standin;\n' | ${CC:-cc} -shared -fPIC -x c -o "$d/standin/libautograph.so" - ||
    ag_fail "cannot build the stand-in library"
  export AUTOGRAPH_LIB=$d/standin/libautograph.so
fi
lib=$(readlink -f "$AUTOGRAPH_LIB")
agx() { LD_PRELOAD="$base" "$ag" "$@"; }
ag0() { LD_PRELOAD='' "$ag" "$@"; }
envvar() { # NAME — its value in $d/env.out (the output of env under the launcher)
  sed -n "s/^$1=//p" "$d/env.out"
}

# Exit status and signals.
[ "$(status_of agx -- sh -c 'exit 42')" = 42 ] || ag_fail "exit status 42 not passed through"
[ "$(status_of agx -- true)" = 0 ] || ag_fail "exit status 0 not passed through"
[ "$(status_of agx -- sh -c 'kill -TERM $$')" = 143 ] || ag_fail "SIGTERM death is not 143"
[ "$(status_of agx -- sh -c 'kill -SEGV $$')" = 139 ] || ag_fail "SIGSEGV death is not 139"
# The launcher becomes the program: same process id.
out=$(LD_PRELOAD="$base" bash -c 'echo $$; exec "$1" -- sh -c "echo \$\$"' _ "$ag")
[ "$(echo "$out" | sort -u | wc -l)" = 1 ] || ag_fail "the program does not replace the launcher: $out"
echo "exit status and signals pass through"

# LD_PRELOAD: appended after what is inherited (a soname the loader finds, here libm), once.
LD_PRELOAD="${base:+$base }libm.so.6" "$ag" -- env >"$d/env.out" || ag_fail "env under the launcher failed"
[ "$(envvar LD_PRELOAD)" = "${base:+$base }libm.so.6 $lib" ] || ag_fail "LD_PRELOAD is '$(envvar LD_PRELOAD)'"
LD_PRELOAD="${base:+$base }libm.so.6:$lib" "$ag" -- env >"$d/env.out"
[ "$(envvar LD_PRELOAD)" = "${base:+$base }libm.so.6:$lib" ] || ag_fail "added twice: '$(envvar LD_PRELOAD)'"
agx -- env >"$d/env.out"
[ "$(envvar LD_PRELOAD)" = "${base:+$base }$lib" ] || ag_fail "LD_PRELOAD alone is '$(envvar LD_PRELOAD)'"
[ "$(envvar AUTOGRAPH_STATS)" = 1 ] || ag_fail "AUTOGRAPH_STATS=1 is not the default"
echo "LD_PRELOAD appended"

# Every option and the variable it sets.
agx --disable --stats=s.json --log debug --dump dump.json --trace=/x/t.json --repeats 3 \
  --min-seq=4 --max-seq 500 --max-graphs 7 --max-graph-mb=64 --deny 'nccl*,my_kernel' \
  -- env >"$d/env.out" || ag_fail "env with every option failed"
while read -r name want; do
  got=$(envvar "$name")
  [ "$got" = "$want" ] || ag_fail "$name='$got', expected '$want'"
done <<EOF2
AUTOGRAPH_DISABLE 1
AUTOGRAPH_STATS $d/s.json
AUTOGRAPH_LOG debug
AUTOGRAPH_DUMP $d/dump.json
AUTOGRAPH_TRACE /x/t.json
AUTOGRAPH_REPEATS 3
AUTOGRAPH_MIN_SEQ 4
AUTOGRAPH_MAX_SEQ 500
AUTOGRAPH_MAX_GRAPHS 7
AUTOGRAPH_MAX_GRAPH_MB 64
AUTOGRAPH_DENY nccl*,my_kernel
EOF2
agx --no-stats -- env >"$d/env.out"; [ "$(envvar AUTOGRAPH_STATS)" = 0 ] || ag_fail "--no-stats"
agx --no-nvtx -- env >"$d/env.out"; [ "$(envvar AUTOGRAPH_NVTX)" = 0 ] || ag_fail "--no-nvtx"
agx -- env >"$d/env.out"; [ -z "$(envvar AUTOGRAPH_NVTX)" ] || ag_fail "AUTOGRAPH_NVTX set without --no-nvtx"
agx --stats -- env >"$d/env.out"; [ "$(envvar AUTOGRAPH_STATS)" = 1 ] || ag_fail "--stats"
AUTOGRAPH_STATS=/keep.json agx -- env >"$d/env.out"
[ "$(envvar AUTOGRAPH_STATS)" = /keep.json ] || ag_fail "an inherited AUTOGRAPH_STATS was replaced"
AUTOGRAPH_STATS=/keep.json agx --stats -- env >"$d/env.out"
[ "$(envvar AUTOGRAPH_STATS)" = 1 ] || ag_fail "--stats does not override the environment"
# The program's own arguments are untouched, options after its name included.
agx -- printf '<%s>' --stats 'a b' '' >"$d/args.out"
[ "$(cat "$d/args.out")" = '<--stats><a b><>' ] || ag_fail "arguments changed: $(cat "$d/args.out")"
agx printf '<%s>' --disable >"$d/args.out"
[ "$(cat "$d/args.out")" = '<--disable>' ] || ag_fail "without --: $(cat "$d/args.out")"
echo "options mapped"

# Errors of the launcher and of the program's name.
for bad in "--bogus -- true" "--repeats x -- true" "--max-graphs 0 -- true" "--repeats" "--log loud -- true" \
           "--disable=1 -- true" "--stats= -- true" ""; do
  # shellcheck disable=SC2086
  rc=$(status_of ag0 $bad)
  [ "$rc" = 125 ] || ag_fail "'autograph $bad' exited $rc, expected 125"
done
[ "$(status_of "$ag" -- no-such-program-here)" = 127 ] || ag_fail "missing program is not 127"
[ "$(status_of "$ag" -- "$d")" = 126 ] || ag_fail "a folder as program is not 126"
[ "$(status_of env AUTOGRAPH_LIB="$d/none.so" "$ag" -- true)" = 125 ] || ag_fail "missing library"
"$ag" --bogus -- true 2>&1 | grep -q '^autograph: unknown option --bogus' || ag_fail "no message"
echo "launcher errors exit 125"

# Finding the library: --lib over AUTOGRAPH_LIB; in a source tree, ../build beside tools/.
mkdir -p "$d/tree/tools" "$d/tree/build" "$d/bin"
cp "$ag" "$d/tree/tools/autograph"
ln -s "$lib" "$d/tree/build/libautograph.so"
ln -s "$d/tree/tools/autograph" "$d/bin/autograph" # run through a link, as from a PATH folder
(unset AUTOGRAPH_LIB BUILD; LD_PRELOAD='' "$d/bin/autograph" -n -- prog) >"$d/dry.out" ||
  ag_fail "the source-tree launcher did not find its library"
grep -qxF "LD_PRELOAD=$lib" "$d/dry.out" || ag_fail "source tree: $(cat "$d/dry.out")"
cp "$lib" "$d/other.so"
ag0 --lib "$d/other.so" -n -- prog | grep -qxF "LD_PRELOAD=$d/other.so" || ag_fail "--lib ignored"
(unset AUTOGRAPH_LIB BUILD; "$d/tree/tools/autograph" --lib "$d/none.so" -- true 2>&1) |
  grep -q "cannot find libautograph.so" || ag_fail "a missing --lib is not reported"
echo "library found"

# Help documents every option, and claims nothing is unimplemented (--trace is implemented).
"$ag" --help >"$d/help" || ag_fail "--help exited $?"
for w in --disable --stats --no-stats --no-nvtx --log --dump --trace --repeats --min-seq --max-seq \
         --max-graphs --max-graph-mb --deny --lib --dry-run AUTOGRAPH_LIB LD_PRELOAD 125 127; do
  grep -q -- "$w" "$d/help" || ag_fail "--help does not mention $w"
done
grep -q 'NOT IMPLEMENTED' "$d/help" && ag_fail "--help still says something is NOT IMPLEMENTED"
grep -q 'SIGUSR1' "$d/help" || ag_fail "--help does not say when the dump is written"
echo "help ok"

# A real CUDA program on the simulator, with the real library. Under a sanitizer the launcher
# inherits the runtime together with the library, in front of it (see above); the launcher keeps
# that order and does not add the library again (checked above).
prog=$BUILD/tests/progs/train-loop
export AUTOGRAPH_LIB=$AG_LIB
lbase=$base
if [ -n "${AG_SAN_PRELOAD:-}" ]; then lbase=$(ag_preload "$(readlink -f "$AG_LIB")"); fi
if [ -x "$prog" ] && [ -f "$AG_SIM/libcudart.so.13" ]; then
  ag_run "$d/plain" env LD_PRELOAD="$base" "$prog"
  ag_ok "$d/plain"
  ag_run "$d/launched" env LD_PRELOAD="$lbase" "$ag" -- "$prog"
  ag_same "$d/plain" "$d/launched"
  grep -qE '^autograph: [0-9]+ launches' "$d/launched.err" ||
    ag_fail "no summary at exit: $(tail -n 3 "$d/launched.err")"
  grep -E '^autograph: ' "$d/launched.err"
  ag_run "$d/stats" env LD_PRELOAD="$lbase" "$ag" --stats=st.json -- "$prog"
  ag_same "$d/plain" "$d/stats"
  ag_check_stats "$d/st.json" "$(tail -n 1 "$d/plain.out")"
  grep -q '^autograph: [0-9]* launches' "$d/stats.err" && ag_fail "--stats=PATH still printed the summary"
  ag_run "$d/trace" env LD_PRELOAD="$lbase" "$ag" --trace=tr.json -- "$prog"
  ag_same "$d/plain" "$d/trace"
  python3 -c 'import json, sys; n = sum(e["name"] == "replay" for e in json.load(open(sys.argv[1]))["traceEvents"]); sys.exit(n == 0)' "$d/tr.json" ||
    ag_fail "--trace=PATH wrote no trace with replays to $d/tr.json"
  echo "train-loop runs unchanged under the launcher"
else
  echo "note: $prog or the simulator is not built; the CUDA program part was not run"
fi
echo "tools-launcher: ok"
