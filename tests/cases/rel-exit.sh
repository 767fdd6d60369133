#!/usr/bin/env bash
# rel-exit.sh — how a preloaded process ends (tests/progs/r-exit.cu):
#   - returning from main with launches held and no synchronisation: identical output and
#     statistics that account for every launch (passthrough + replayed == launches);
#   - exit() called from a second thread right after its launches: the program's atexit handler
#     reads the result, which must include every launch (identical output);
#   - SIGTERM, SIGHUP and SIGKILL in the middle of a launch loop: the process dies of that signal
#     promptly, exactly as without the library (no hang in a handler or at exit);
#   - statistics that cannot be written never block or fail exit: AUTOGRAPH_STATS naming a FIFO
#     with no reader, and a path in a missing folder, give the same output and status.
. "$(dirname "$0")/lib.sh"
ag_compare_prog r-exit main-return -- launch
ag_expect "$AG_STATS" "replayed + passthrough == launches"

prog=$BUILD/tests/progs/r-exit
d=$AG_TMP/r-exit
# A FIFO nobody reads, and a folder that does not exist.
mkfifo "$d/fifo"
for target in "$d/fifo" "$d/missing/stats.json"; do
  ag_run "$d/stats-$(basename "$target")" env LD_PRELOAD="$(ag_preload "$AG_LIB")" \
    AUTOGRAPH_STATS="$target" "$prog" main-return
  ag_same "$d/plain1" "$d/stats-$(basename "$target")"
  echo "r-exit: AUTOGRAPH_STATS=$target: same output and status, exit not blocked"
done

ag_compare_prog r-exit thread-exit -- launch
ag_expect "$AG_STATS" "replayed + passthrough == launches"

# ends_by_signal SIG PRELOAD — runs the loop mode, sends SIG once it is running, and checks that
# (SIGINT is not among the signals: a non-interactive shell starts background jobs ignoring it)
# it dies of SIG within 10 s.
ends_by_signal() {
  local sig=$1 pre=$2 out=$d/loop-$1-${2:+lib}
  env LD_PRELOAD="$pre" AUTOGRAPH_STATS="$d/sig.json" "$prog" loop >"$out.out" 2>"$out.err" &
  local pid=$! i
  # Up to 40 s to start (200 iterations: seconds under a sanitizer on a loaded machine).
  for ((i = 0; i < 800; i++)); do
    grep -q running "$out.out" 2>/dev/null && break
    sleep 0.05
  done
  grep -q running "$out.out" || { kill -KILL $pid; ag_fail "loop mode never started (${pre:+with the library})"; }
  kill -"$sig" $pid
  for ((i = 0; i < 200; i++)); do kill -0 $pid 2>/dev/null || break; sleep 0.05; done
  if kill -0 $pid 2>/dev/null; then
    kill -KILL $pid
    ag_fail "SIG$sig: still running 10 s after the signal (${pre:+with the library})"
  fi
  wait $pid
  local rc=$? want=$((128 + $(kill -l "$sig")))
  [ "$rc" = "$want" ] || { tail "$out.err" >&2; ag_fail "SIG$sig: exit status $rc, expected $want (${pre:+with the library})"; }
  echo "r-exit: SIG$sig ends the process (status $rc)${pre:+ with the library}"
}
for sig in TERM HUP KILL; do
  ends_by_signal "$sig" "$AG_PRELOAD_BASE"
  ends_by_signal "$sig" "$(ag_preload "$AG_LIB")"
done
