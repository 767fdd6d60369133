#!/usr/bin/env bash
# examples-gpu-check.sh — tools/gpu-check checks its prerequisites before doing anything.
#
# On a machine without a GPU (every CI machine) it must exit 2, name what is missing, and run
# nothing (no build folder made). On a machine with a GPU the case is skipped: the check itself
# is run by hand there (it takes minutes). Also: --help documents the usage, a bad option exits 2.
. "$(dirname "$0")/lib.sh"
gc=$AG_ROOT/tools/gpu-check
d=$AG_TMP
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  ag_skip "skipped: this machine has a GPU; run tools/gpu-check itself"
fi
BUILD=$d/gpu-build "$gc" "$d/out.json" >"$d/out" 2>"$d/err"
rc=$?
cat "$d/out" "$d/err"
[ "$rc" = 2 ] || ag_fail "gpu-check exited $rc without a GPU, expected 2"
grep -q '^gpu-check: cannot run, missing prerequisites:' "$d/err" || ag_fail "no clear message"
grep -q 'nvidia-smi' "$d/err" || ag_fail "the missing nvidia-smi is not named"
grep -q 'nothing was run' "$d/err" || ag_fail "does not say that nothing was run"
if [ -e "$d/gpu-build" ] || [ -e "$d/out.json" ]; then ag_fail "it built or wrote something anyway"; fi
# A Python without torch is named as such.
AG_PYTHON=/bin/false BUILD=$d/gpu-build "$gc" >/dev/null 2>"$d/err2"
rc=$?
[ "$rc" = 2 ] || ag_fail "a Python without torch: exit $rc, expected 2"
grep -q 'cannot import torch' "$d/err2" || ag_fail "a Python without torch is not reported"
"$gc" --help | grep -q 'Usage: tools/gpu-check' || ag_fail "--help"
"$gc" --bogus >/dev/null 2>&1
[ $? = 2 ] || ag_fail "a bad option does not exit 2"
echo "examples-gpu-check: prerequisites reported, exit 2"
