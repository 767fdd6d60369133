#!/usr/bin/env bash
# dump-train-loop.sh — AUTOGRAPH_DUMP on the training loop (tests/progs/train-loop.cu).
# With the dump on, the output is unchanged and the statistics still match; the dump written
# at exit is valid (dump-schema.sh: every field and type, sorted by saved_ns_est, the sum of
# launches_replayed equal to totals.replayed); at least one sequence is graphed, and the
# parameters that change every step are reported as varied values: the learning rate of the
# SGD updates (tl_sgd parameter 2) and the dropout seed and offset (tl_dropout 2 and 3). Its
# totals equal the AUTOGRAPH_STATS report of the same run.
. "$(dirname "$0")/dump-schema.sh"
AG_EXPECT_REPLAY=1 ag_compare_prog train-loop
d=$AG_TMP/train-loop.dump.json
AUTOGRAPH_DUMP=$d AG_EXPECT_REPLAY=1 ag_rerun train-loop dump
dump_check "$d" "d['written_at'] == 'exit'" "states['graphed'] >= 1" \
  "('tl_sgd', 2, 'value') in varied" "('tl_dropout', 2, 'value') in varied" \
  "('tl_dropout', 3, 'value') in varied" \
  "all(k['path'] == 'runtime' and k['cudnn_call'] is None for k in kernels)" \
  "any(k['name'] == 'tl_sgd' and k['param_sizes'] == [8, 8, 4, 4] for k in kernels)" \
  "d['process']['options']['AUTOGRAPH_DUMP'] == '$d'" \
  "d['process']['argv'][0].endswith('train-loop')" \
  "not any(v[2] == 'pointer' for v in varied)"
python3 - "$d" "$AG_STATS" <<'PY' || ag_fail "the dump's totals differ from the statistics"
import json, sys
d, st = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
for k in ("launches", "replayed", "graphs", "graph_launches", "updates", "passthrough", "fallbacks"):
    if d["totals"][k] != st[k]:
        sys.exit(f"totals.{k}={d['totals'][k]!r}, statistics {st[k]!r}")
print("dump totals equal the statistics")
PY
# Disabled library: no dump at all.
rm -f "$AG_TMP/off.json"
ag_run "$AG_TMP/off" env LD_PRELOAD="$(ag_preload "$AG_LIB")" AUTOGRAPH_DISABLE=1 \
  AUTOGRAPH_DUMP="$AG_TMP/off.json" "$BUILD/tests/progs/train-loop"
ag_same "$AG_TMP/train-loop/plain1" "$AG_TMP/off"
[ ! -e "$AG_TMP/off.json" ] || ag_fail "AUTOGRAPH_DISABLE=1 still wrote a dump"
echo "no dump when disabled"
