#!/usr/bin/env bash
# dump-states.sh — the states and reasons a dump reports, each in the run that produces it.
#  - denied: e-long-loop with AUTOGRAPH_DENY=el_step: el_step appears as a "denied" sequence
#    (negative id, length 1) seen 500 times, reason naming AUTOGRAPH_DENY; e-nccl: the NCCL
#    kernel is "denied" with a reason naming NCCL, seen 12 times; e-steps grids with
#    AUTOGRAPH_DENY=es_grid (40 launches a step, blocks from a table, grids changing every
#    step): one denied entry per block size, not per grid, together seen 40 times a step;
#  - demoted: e-long-loop with every cuGraphLaunch failing (SIM_FAIL): the sequence is
#    "demoted" with the CUDA error as its reason, nothing replayed;
#  - cudnn: cudnn-net: kernels launched inside cuDNN calls have path "cudnn" and name the call,
#    the others have path "runtime" and no call.
# Every run's output must equal the plain run's and every dump must pass dump-schema.sh; the
# dumps with denied kernels must also be read by autograph-report, which lists them.
. "$(dirname "$0")/dump-schema.sh"
AG_EXPECT_REPLAY=1 ag_compare_prog e-long-loop -- launch
d=$AG_TMP/deny.json
AUTOGRAPH_DUMP=$d AUTOGRAPH_DENY=el_step AG_EXPECT_REPLAY=1 ag_rerun e-long-loop deny -- launch
dump_check "$d" "states['denied'] == 1" "states['graphed'] >= 1" \
  "[(s['id'] < 0, s['length'], s['seen'], s['kernels'][0]['name']) for s in seqs if s['state'] == 'denied'] == [(True, 1, 500, 'el_step')]" \
  "all('AUTOGRAPH_DENY' in s['reason'] for s in seqs if s['state'] == 'denied')" \
  "totals['fallbacks']['denied'] == 500"
report_denied() {
  "$AG_ROOT/tools/autograph-report" "$1" >"$1.txt" 2>&1 || { cat "$1.txt" >&2; ag_fail "autograph-report rejects $1"; }
  grep -Eq "^ +-[0-9]+ +1 .* denied " "$1.txt" || { cat "$1.txt" >&2; ag_fail "the report of $1 does not list the denied kernel"; }
}
report_denied "$d"

d=$AG_TMP/demote.json
AUTOGRAPH_DUMP=$d SIM_FAIL=cuGraphLaunch:1+ ag_rerun e-long-loop demote -- launch
dump_check "$d" "states['demoted'] >= 1" "totals['replayed'] == 0" \
  "all('CUDA error' in s['reason'] for s in seqs if s['state'] == 'demoted')" \
  "totals['demotions'] == states['demoted']"

AG_EXPECT_REPLAY=1 ag_compare_prog e-nccl -- launch
d=$AG_TMP/nccl.json
AUTOGRAPH_DUMP=$d AG_EXPECT_REPLAY=1 ag_rerun e-nccl dump -- launch
dump_check "$d" "states['denied'] == 1" \
  "[s['seen'] for s in seqs if s['state'] == 'denied'] == [12]" \
  "all('NCCL' in s['reason'] and s['kernels'][0]['name'].startswith('ncclDevKernel') for s in seqs if s['state'] == 'denied')"
report_denied "$d"

ag_compare_prog e-steps grids 6 -- launch sync copy
d=$AG_TMP/grids.json
AUTOGRAPH_DUMP=$d AUTOGRAPH_DENY=es_grid ag_rerun e-steps deny grids 6 -- launch sync copy
# The distinct block sizes of a step (warps_of in tests/progs/e-steps.cu).
nblocks=$(python3 -c 'print(len({1 + (j * 7 + j // 13) % 32 for j in range(40)}))')
dump_check "$d" "states['denied'] == $nblocks" \
  "sum(s['seen'] for s in seqs if s['state'] == 'denied') == 6 * 40"
report_denied "$d"

ag_compare_prog cudnn-net
d=$AG_TMP/cudnn.json
AUTOGRAPH_DUMP=$d ag_rerun cudnn-net dump
dump_check "$d" "any(k['path'] == 'cudnn' for k in kernels)" \
  "all((k['path'] == 'cudnn') == (k['cudnn_call'] is not None) for k in kernels)" \
  "all(k['cudnn_call'].startswith('cudnn') for k in kernels if k['cudnn_call'])"
