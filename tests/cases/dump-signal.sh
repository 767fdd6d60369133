#!/usr/bin/env bash
# dump-signal.sh — dumps written during the run (tests/progs/e-dump-signal.cu).
#  - SIGUSR1: the program raises it half way through when a handler is installed (the library
#    installs one under AUTOGRAPH_DUMP) and copies the dump right after its next CUDA call: that
#    copy says written_at "signal" and was written mid-run (fewer launches than at exit); the
#    final dump says "exit". Without AUTOGRAPH_DUMP no handler is installed (nothing raised, no
#    file). The output is identical in every run.
#  - varied arguments: the final dump reports the step number (ds_mad parameter 2) as a
#    "value" and the buffer that alternates between two allocations (parameter 0) as a "pointer".
#  - AUTOGRAPH_DUMP_INTERVAL=1: the program sleeps 1.2 s at three quarters and copies the dump
#    after its next CUDA call: written_at "interval".
. "$(dirname "$0")/dump-schema.sh"
ag_compare_prog e-dump-signal -- launch sync
d=$AG_TMP/e-dump-signal
AUTOGRAPH_DUMP=$d/dump-final.json E_DUMP_COPY=$d/copy-signal.json ag_rerun e-dump-signal signal -- launch sync
dump_check "$d/copy-signal.json" "d['written_at'] == 'signal'" "0 < totals['launches'] < 200"
dump_check "$d/dump-final.json" "d['written_at'] == 'exit'" "totals['launches'] == 200" \
  "('ds_mad', 0, 'pointer') in varied" "('ds_mad', 2, 'value') in varied"
[ ! -e "$d/dump-final.json.tmp" ] || ag_fail "the temporary file was left behind"

# Without AUTOGRAPH_DUMP the library installs no handler: nothing is raised or copied.
E_DUMP_COPY=$d/copy-none.json ag_rerun e-dump-signal nodump -- launch sync
[ ! -e "$d/copy-none.json" ] || ag_fail "a SIGUSR1 handler was installed without AUTOGRAPH_DUMP"

AUTOGRAPH_DUMP=$d/dump-final2.json AUTOGRAPH_DUMP_INTERVAL=1 E_DUMP_SLEEP_MS=1200 \
  E_DUMP_INTERVAL_COPY=$d/copy-interval.json ag_rerun e-dump-signal interval -- launch sync
dump_check "$d/copy-interval.json" "d['written_at'] == 'interval'" "0 < totals['launches'] < 200" \
  "d['process']['options']['AUTOGRAPH_DUMP_INTERVAL'] == '1'"
dump_check "$d/dump-final2.json" "d['written_at'] == 'exit'"
