#!/usr/bin/env bash
# sim-nvrtc.sh — kernels generated at run time on the simulator (tests/progs/nvrtc-run.cu,
# tests/sim/README.md "NVRTC"): the program writes CUDA C, compiles it with NVRTC for the
# device's architecture (the simulated libnvrtc.so.13, which forwards to the toolkit's real NVRTC
# and builds the kernels as host twins), loads the CUBIN with cuModuleLoadData and launches it
# with cuLaunchKernel. Its results (an elementwise float kernel, a half-precision addition and a
# template kernel found by its lowered name) must equal the host's arithmetic bit for bit, and a
# syntax error must fail with NVRTC_ERROR_COMPILATION and a log. Then: the same output under
# SIM_SEED=1, 2, 3 and with the library (from the cache of host builds, and again compiled
# afresh under the library), one cached host build for the program, and the simulator's two
# refusals: a kernel that needs its block's threads together (__syncthreads, __shared__), and a
# second program whose kernel has the name of one already loaded.
. "$(dirname "$0")/lib.sh"
prog=nvrtc-run
ag_need $prog
export SIM_NVRTC_CACHE=$AG_TMP/nvrtc-cache

ag_seed_stable $prog
ref=$AG_REF
want() { grep -qxF -- "$1" <<<"$2" || ag_fail "$prog: expected the line: $1"; }
want 'mismatches against the host: float=0 half=0 axpy=0' "$ref"
want 'syntax error: NVRTC_ERROR_COMPILATION, log names the error' "$ref"
grep -qx 'compiled: NVRTC_SUCCESS, lowered name of gen_axpy<float>: _Z8gen_axpy.*' <<<"$ref" ||
  ag_fail "$prog: the template kernel's lowered name is missing"
builds=$(find "$SIM_NVRTC_CACHE" -name '*.so' ! -name 'twin-*' | wc -l)
links=$(find "$SIM_NVRTC_CACHE" -name 'twin-*.so' -type l | wc -l)
[ "$links" -ge 2 ] || ag_fail "expected the kernels' names linked to their host build, found $links links"
[ "$builds" = 1 ] || ag_fail "expected one cached host build, found $builds"
echo "sim-nvrtc: one cached host build"

ag_compare_prog $prog
SIM_NVRTC_CACHE=$AG_TMP/nvrtc-cache-preload ag_rerun $prog fresh-cache
[ -n "$(find "$AG_TMP/nvrtc-cache-preload" -name '*.so')" ] ||
  ag_fail "the run with the library and an empty cache built nothing"

out=$(timeout "$AG_PROG_TIMEOUT" "$BUILD/tests/progs/$prog" --barrier) || ag_fail "$prog --barrier failed"
printf '%s\n' "$out"
want 'barrier kernel: NVRTC_ERROR_COMPILATION, log names __syncthreads or __shared__: yes' "$out"
out=$(timeout "$AG_PROG_TIMEOUT" "$BUILD/tests/progs/$prog" --same-name) || ag_fail "$prog --same-name failed"
printf '%s\n' "$out"
want 'first gen_scale ran: 2 4 6 8' "$out"
want 'second gen_scale: NVRTC_ERROR_COMPILATION, log names the kernel: yes' "$out"
echo "sim-nvrtc: generated kernels run, bit for bit as on the host"
