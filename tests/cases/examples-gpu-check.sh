#!/usr/bin/env bash
# examples-gpu-check.sh — tools/gpu-check checks its prerequisites before doing anything.
#
# On a machine without a GPU (every CI machine) it must exit 2, name what is missing, and run
# nothing (no build folder made). On a machine with a GPU the case is skipped: the check itself
# is run by hand there (it takes minutes). Also: --help documents the usage, a bad option exits 2.
# And the report of its generated-chain-kernel runs and its kernel-pattern run with the table
# (step 3b''), read from logs made up here: equal outputs pass; an output that differs, or a warm
# run that fused no chain, fails, and a run-time compiler that is off is said to be.
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

# The report of the generated chain kernels (step 3b''), from logs made up here: step 5's Python,
# taken from the script, reads the runs' outputs, statistics and stderr. Equal outputs with
# chains fused in the warm run pass; a step that differs, or a warm run that fused nothing
# because the run-time compiler is off, is a failure that says so.
logs=$d/logs
mkdir -p "$logs"
# shellcheck disable=SC2016 # the script's own text, not an expansion
sed -n '/^"$py" - "$logs" "$json"/,/^EOF$/p' "$gc" | sed '1d;$d' >"$d/report.py"
[ -s "$d/report.py" ] || ag_fail "step 5's Python not found in tools/gpu-check"
printf 'checksum: 1\n' >"$logs/torchrun.out"; echo 0 >"$logs/torchrun.rc"
echo 0 >"$logs/chains-cal.rc"
echo '{"coverage": {"kernels_known": 24}, "not_run": []}' >"$logs/chains-table.json"
printf 'step 0 float32: ab\nchecksum: cd\n' >"$logs/chains-plain.out"
for w in plain cold warm; do echo 0 >"$logs/chains-$w.rc"; : >"$logs/chains-$w.err"; done
cp "$logs/chains-plain.out" "$logs/chains-cold.out"
cp "$logs/chains-plain.out" "$logs/chains-warm.out"
st() { # st FILE FUSED KERNELS COMPILES HITS FAILURES
  printf '{"chained": 90, "chained_fused": %s, "fills_fused": 21, "fused_by_pattern": {"elementwise_chain": %s}, "jit": {"compiles": %s, "cache_hits": %s, "cache_rejected": 0, "failures": %s}}\n' \
    "$2" "$3" "$4" "$5" "$6" >"$1"
}
st "$logs/chains-cold.json" 30 10 3 0 0
st "$logs/chains-warm.json" 80 40 0 3 0
echo 'autograph: jit: NVRTC 13.0 from /opt/nvrtc/libnvrtc.so.13' >"$logs/chains-cold.err"
# The kernel patterns with the table: the same checksum as eager, two pairs fused.
for w in plain lib; do echo 0 >"$logs/patterns-$w.rc"; printf 'loss: 1\nchecksum: 0123456789abcdef\n' >"$logs/patterns-$w.out"; done
echo '{"fused_by_pattern": {"torch_add_relu": 2}}' >"$logs/patterns-lib.json"
python3 "$d/report.py" "$logs" "$d/r1.json" gpu 1 >"$d/r1" 2>&1
rc=$?
cat "$d/r1"
[ "$rc" = 0 ] || ag_fail "equal chain outputs, chains fused: exit $rc"
grep -q '^warm  *0  *identical  *90  *80  *40  *21  *0  *3  *0$' "$d/r1" || ag_fail "the warm run's statistics are not reported"
grep -q 'compiles with NVRTC 13.0 from /opt/nvrtc/libnvrtc.so.13' "$d/r1" || ag_fail "the NVRTC used is not named"
grep -qF "kernel patterns with the table (AUTOGRAPH_FUSE=exact, resnet_small_batch): output identical, fused {'torch_add_relu': 2}" "$d/r1" ||
  ag_fail "the kernel patterns' run is not reported"
printf 'loss: 1\nchecksum: 0123456789abcdee\n' >"$logs/patterns-lib.out"
printf 'step 0 float32: 00\nchecksum: cd\n' >"$logs/chains-warm.out"
st "$logs/chains-warm.json" 0 0 0 0 5
echo 'autograph: kernels compiled at run time are off: no usable NVRTC (none for this driver)' >"$logs/chains-warm.err"
python3 "$d/report.py" "$logs" "$d/r2.json" gpu 1 >"$d/r2" 2>&1
rc=$?
cat "$d/r2"
[ "$rc" = 1 ] || ag_fail "a chain output that differs: exit $rc, expected 1"
grep -q '^FAILED: chains (warm): the output differs with AUTOGRAPH_FUSE=chains$' "$d/r2" || ag_fail "the difference is not reported"
grep -q '^FAILED: chains (warm): no chain was fused .*the run-time compiler is off: no usable NVRTC' "$d/r2" ||
  ag_fail "a warm run without fused chains is not reported with the compiler's state"
grep -q '^chains: THE RUN-TIME COMPILER IS OFF' "$d/r2" || ag_fail "the compiler being off is not said"
grep -q '^FAILED: patterns: resnet_small_batch with AUTOGRAPH_FUSE=exact and the table: checksum 0123456789abcdee' "$d/r2" ||
  ag_fail "a kernel-pattern run whose checksum differs is not reported"
echo "examples-gpu-check: the report of generated chain kernels passes equal runs and fails a difference"
