#!/usr/bin/env bash
# rel-fork.sh — fork with and without exec while a thread launches (tests/progs/r-fork.cu): a
# child forked before CUDA is touched and children forked while the launcher thread is inside
# the library all finish (no inherited lock deadlocks them: each is bounded to 20 s by the
# program), they call dlsym/dlopen/malloc and exit through _exit() or exec (the early one through
# exit()); the parent's
# results are identical with and without the library, it keeps replaying (replayed > 0), and no
# child's exit overwrites the parent's statistics (they must match the parent's own counts).
# Run three times: as is, with a modelled launch cost so the launcher runs longer and more forks
# land in the middle of its launches, and with AUTOGRAPH_STATS=1 (a summary on stderr).
. "$(dirname "$0")/lib.sh"
AG_EXPECT_REPLAY=1 ag_compare_prog r-fork 24 -- launch
ag_expect "$AG_STATS" "replayed > 0" "graphs >= 1"
SIM_LAUNCH_NS=20000 SIM_SEED=3 AG_EXPECT_REPLAY=1 ag_rerun r-fork slow 24 -- launch
ag_expect "$AG_STATS" "replayed > 0"
grep -h 'children forked' "$AG_TMP/r-fork/slow.err" || true
d=$AG_TMP/r-fork
ag_run "$d/summary" env LD_PRELOAD="$(ag_preload "$AG_LIB")" AUTOGRAPH_STATS=1 "$BUILD/tests/progs/r-fork" 24
ag_same "$d/plain1" "$d/summary"
echo "r-fork: identical with AUTOGRAPH_STATS=1"
