#!/usr/bin/env bash
# rel-fork-first.sh — a child forked before the parent used CUDA (tests/progs/r-forkfirst.cu):
# CUDA allows such a child to use the GPU, so the library must work there as in any process.
# Checked: the program is deterministic without the library (SIM_SEED 1, 2, 3); with it the
# output is byte-identical, and of the statistics files (one per process, AUTOGRAPH_STATS with
# %p) the child's counts its 240 launches and replays most of them, while the parent, which made
# no CUDA call, writes none. A library that passes everything through in every forked child
# replays nothing there.
. "$(dirname "$0")/lib.sh"
ag_seed_stable r-forkfirst
d=$AG_TMP
ag_run "$d/lib" env LD_PRELOAD="$(ag_preload "$AG_LIB")" AUTOGRAPH_STATS="$d/st-%p.json" \
  "$BUILD/tests/progs/r-forkfirst"
[ "$(cat "$d/lib.rc")" = 0 ] || { cat "$d/lib.err" >&2; ag_fail "r-forkfirst failed with the library"; }
[ "$(cat "$d/lib.out")" = "$AG_REF" ] || { diff <(echo "$AG_REF") "$d/lib.out" >&2; ag_fail "the output differs with the library"; }
echo "r-forkfirst: identical output with the library"
python3 - "$d" <<'PY' || ag_fail "the child's statistics (above)"
import glob, json, sys
files = sorted(glob.glob(sys.argv[1] + "/st-*.json"))
stats = [json.load(open(f)) for f in files]
for f, s in zip(files, stats):
    print(f"{f.rsplit('/', 1)[1]}: launches={s['launches']} replayed={s['replayed']} graphs={s['graphs']} fallbacks={s['fallbacks']}")
if len(stats) != 1:
    sys.exit(f"{len(stats)} statistics files, expected the child's alone")
s = stats[0]
sys.exit(0 if s["launches"] == 240 and s["replayed"] >= 0.9 * 240 else 1)
PY
echo "r-forkfirst: the child's launches replayed"
