#!/usr/bin/env bash
# sim-driver-version.sh — an older simulated driver (SIM_DRIVER_VERSION) refuses what a real one
# of that version refuses: a CUDA 13 program's first runtime call fails with
# cudaErrorInsufficientDriver (35) under a 12.9 driver; a CUDA 12 program starts there, and its
# kernels, compiled by the CUDA 13 front end to PTX 9.0 and ABI 8 cubins (docs/cuda-versions.md),
# fail to load with cudaErrorUnsupportedPtxVersion (222). The same programs run under the default
# driver. The loading rules themselves are tests/unit/drv-arch.c's.
. "$(dirname "$0")/lib.sh"
ag_need train-loop
d=$AG_TMP
ag_run "$d/13" env LD_PRELOAD="$AG_PRELOAD_BASE" SIM_DRIVER_VERSION=12090 "$BUILD/tests/progs/train-loop"
[ "$(cat "$d/13.rc")" != 0 ] || ag_fail "a CUDA 13 program ran on a 12.9 driver"
grep -q 'returned 35, expected 0' "$d/13.err" || { cat "$d/13.err" >&2; ag_fail "not cudaErrorInsufficientDriver"; }
echo "ok: a CUDA 13 program on a 12.9 driver: cudaErrorInsufficientDriver"
ag_run "$d/13ok" env LD_PRELOAD="$AG_PRELOAD_BASE" "$BUILD/tests/progs/train-loop"
ag_ok "$d/13ok"
p12=$BUILD/tests/progs12/train-loop
if [ -x "$p12" ]; then
  ag_run "$d/12" env LD_PRELOAD="$AG_PRELOAD_BASE" SIM_DRIVER_VERSION=12090 "$p12"
  [ "$(cat "$d/12.rc")" != 0 ] || ag_fail "kernels with PTX 9.0 ran on a 12.9 driver"
  grep -q 'returned 222, expected 0' "$d/12.err" || { cat "$d/12.err" >&2; ag_fail "not cudaErrorUnsupportedPtxVersion"; }
  echo "ok: a CUDA 12 program with CUDA 13's device code on a 12.9 driver: cudaErrorUnsupportedPtxVersion"
  ag_run "$d/12ok" env LD_PRELOAD="$AG_PRELOAD_BASE" "$p12"
  ag_ok "$d/12ok"
else
  echo "no CUDA 12 build of train-loop: its part is left out"
fi
