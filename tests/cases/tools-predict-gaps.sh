#!/usr/bin/env bash
# tools-predict-gaps.sh — GPU idle time on a hand-made trace, checked to the nanosecond.
#
# Four steps of three kernels (10 us each) on one stream, each step ending with a
# cudaDeviceSynchronize; inside a step the kernels start 3.5 us and 7.25 us after the previous
# one ended, and step s begins at 1000 * (s + 1) us. With --repeats 2 --min-seq 3 steps 2 and 3
# are replayed, so the idle time graphs could close is 2 * (3.5 + 7.25) us = 21500 ns (10750 ns
# in each of steps #2 and #3), while all the idle time between consecutive kernels is
# 4 * 10.75 us plus three gaps of 1000 - 40.75 us between steps = 2920750 ns. A second stream's
# kernel placed inside those gaps must change neither figure (gaps are per stream), and a kernel
# on the same stream that overlaps its predecessor adds no negative gap.
. "$(dirname "$0")/lib.sh"
pred=$BUILD/autograph-predict
[ -x "$pred" ] || ag_skip "skipped: $pred is not built"
d=$AG_TMP
python3 - "$AG_ROOT/tests/cases/make-trace.py" "$d" <<'PY' || ag_fail "writing the traces failed"
import importlib.util, sys
spec = importlib.util.spec_from_file_location("mt", sys.argv[1])
mt = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mt)
for variant in ("plain", "other"):
    tr = mt.Trace()
    for s in range(4):
        tr.begin_step(s)
        base = 1000000 * (s + 1) + 50000000   # ns, far after the host clock's launches
        starts = [base, base + 10000 + 3500, base + 20000 + 3500 + 7250]
        for k, ts in enumerate(starts):
            tr.launch("k%d" % k, (4, 1, 1), (128, 1, 1), kernel_ns=10000, kernel_ts=ts)
        if variant == "other" and s == 1:
            # Another stream, inside this step's idle time: its own stream, no gap of its own.
            tr.launch("other", (1, 1, 1), (32, 1, 1), stream=13, kernel_ns=1000, kernel_ts=base + 12000)
        tr.call("cudaDeviceSynchronize")
        tr.end_step()
    tr.write("%s/%s.json" % (sys.argv[2], variant))
PY
for v in plain other; do
  "$pred" --json --repeats 2 --min-seq 3 "$d/$v.json" >"$d/$v.out" || ag_fail "autograph-predict failed on $v"
done
ag_expect "$d/plain.out" "launches == 12" "replayed == 6" "st['gpu_gap_closable_ns'] == 21500" \
  "st['gpu_gap_ns'] == 2920750" "[s['gpu_gap_closable_ns'] for s in st['steps']] == [0, 0, 10750, 10750]" \
  "[s['gpu_gap_ns'] for s in st['steps']] == [10750, 970000, 970000, 970000]"
# The other stream's launch comes after step 1's three launches (its kernel runs inside their
# idle time on the GPU): it ends that step's sequence just as the synchronisation would, so the
# same six launches are replayed, and neither gap figure of stream 7 moves.
ag_expect "$d/other.out" "launches == 13" "replayed == 6" "st['gpu_gap_ns'] == 2920750" \
  "st['gpu_gap_closable_ns'] == 21500"
echo "tools-predict-gaps: idle time between kernels and the part inside replayed sequences, exact"
