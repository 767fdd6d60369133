#!/usr/bin/env bash
# dump-limits.sh — the dump's bounds and its failure mode (tests/progs/train-loop.cu).
#  - AUTOGRAPH_DUMP_MAX_SEQ=1: one sequence (the one with the largest saving, a graphed one) is
#    written, truncated is true and sequences_omitted counts the others (totals.sequences - 1);
#    AUTOGRAPH_DUMP_MAX_SEQ=0: no sequence, all omitted.
#  - An unwritable path (a directory that does not exist): the output is identical and stderr
#    holds exactly one warning about the dump, however many dumps were attempted.
#  - A malformed AUTOGRAPH_DUMP_MAX_SEQ: one warning, the default (1000) used.
. "$(dirname "$0")/dump-schema.sh"
AG_EXPECT_REPLAY=1 ag_compare_prog train-loop
d=$AG_TMP/cap1.json
AUTOGRAPH_DUMP=$d AUTOGRAPH_DUMP_MAX_SEQ=1 ag_rerun train-loop cap1
dump_check "$d" "len(seqs) == 1" "d['truncated'] is True" "seqs[0]['state'] == 'graphed'" \
  "d['sequences_omitted'] == totals['sequences'] - 1" "d['sequences_omitted'] >= 1"
d=$AG_TMP/cap0.json
AUTOGRAPH_DUMP=$d AUTOGRAPH_DUMP_MAX_SEQ=0 ag_rerun train-loop cap0
dump_check "$d" "len(seqs) == 0" "d['truncated'] is True" "d['sequences_omitted'] == totals['sequences']"

AUTOGRAPH_DUMP=$AG_TMP/no/such/dir/d.json AUTOGRAPH_DUMP_INTERVAL=1 ag_rerun train-loop unwritable
n=$(grep -c 'autograph: .*dump' "$AG_TMP/train-loop/unwritable.err")
[ "$n" = 1 ] || { cat "$AG_TMP/train-loop/unwritable.err" >&2; ag_fail "expected one warning about the dump, got $n"; }
grep -q "cannot write the dump to $AG_TMP/no/such/dir/d.json" "$AG_TMP/train-loop/unwritable.err" ||
  ag_fail "the warning does not name the path"
echo "unwritable path: one warning, identical output"

d=$AG_TMP/bad.json
AUTOGRAPH_DUMP=$d AUTOGRAPH_DUMP_MAX_SEQ=lots ag_rerun train-loop badcap
grep -q 'AUTOGRAPH_DUMP_MAX_SEQ="lots" is not valid' "$AG_TMP/train-loop/badcap.err" ||
  ag_fail "no warning for a malformed AUTOGRAPH_DUMP_MAX_SEQ"
dump_check "$d" "d['process']['options']['AUTOGRAPH_DUMP_MAX_SEQ'] == '1000'" "d['truncated'] is False"
