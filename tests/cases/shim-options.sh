#!/usr/bin/env bash
# shim-options — AUTOGRAPH_DISABLE, AUTOGRAPH_STATS and malformed values.
#   - AUTOGRAPH_DISABLE=1 writes nothing and prints nothing, even with AUTOGRAPH_STATS set;
#   - AUTOGRAPH_STATS=1 prints exactly one summary line on stderr for a process that made CUDA
#     calls, nothing for one that made none (the helpers a program starts); =<path> writes valid
#     JSON;
#     an unwritable path costs one warning and does not change the exit status; a process
#     that made no CUDA call only creates a missing report, never overwrites one;
#   - a malformed value prints exactly one warning naming the variable, once per process.
set -eu
: "${AG_LIB:?}" "${AG_TMP:?}"
cd "$AG_TMP"
run() { LD_PRELOAD="${AG_SAN_PRELOAD:+$AG_SAN_PRELOAD }$AG_LIB" "$@"; }

run env AUTOGRAPH_DISABLE=1 AUTOGRAPH_STATS="$AG_TMP/off.json" AUTOGRAPH_LOG=bogus /bin/true 2>err1
[ ! -e off.json ] || { echo "disabled library wrote stats"; exit 1; }
[ ! -s err1 ] || { echo "disabled library printed:"; cat err1; exit 1; }

run env AUTOGRAPH_STATS=1 /bin/true 2>err2
[ ! -s err2 ] || { echo "a process without CUDA calls printed:"; cat err2; exit 1; }
prog=$BUILD/tests/progs/train-loop
if [ -x "$prog" ]; then
  run env AUTOGRAPH_STATS=1 "$prog" >/dev/null 2>err2
  cat err2
  [ "$(wc -l <err2)" -eq 1 ] && grep -Eq '^autograph: 1002 launches \(runtime 1002, driver 0, cudnn 0\), [0-9]+ replayed \([0-9.]+%\), [0-9]+ graphs, [0-9]+ updates; [0-9]+ ordering calls' err2
fi

run env AUTOGRAPH_STATS="$AG_TMP/s.json" /bin/true
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["version"]==1 and d["launches"]==0 and isinstance(d["fallbacks"], dict), d' s.json

# A process that made no CUDA call does not overwrite an existing report (timeout(1), shells).
echo '{"kept":1}' >s.json
run env AUTOGRAPH_STATS="$AG_TMP/s.json" /bin/true
grep -q kept s.json

rc=0; run env AUTOGRAPH_STATS=/nonexistent/dir/s.json /bin/sh -c 'exit 5' 2>err3 || rc=$?
cat err3
[ $rc -eq 5 ] && [ "$(wc -l <err3)" -eq 1 ] && grep -q '^autograph: cannot write stats' err3

run env AUTOGRAPH_LOG=loud AUTOGRAPH_DISABLE=maybe /bin/sh -c '/bin/true; /bin/true' 2>err4
cat err4
# One warning per malformed variable, for each of the three processes (sh and two trues).
[ "$(grep -c 'AUTOGRAPH_LOG="loud" is not valid' err4)" -eq 3 ]
[ "$(grep -c 'AUTOGRAPH_DISABLE="maybe" is not valid' err4)" -eq 3 ]
[ "$(wc -l <err4)" -eq 6 ]
echo ok
