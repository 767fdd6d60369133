#!/usr/bin/env bash
# cuda12-harmless.sh — NVIDIA's own CUDA 12 runtime (libcudart.so.12 of the CUDA 12 toolkit,
# tools/setup --cuda12) on a machine with no driver: a program built by that toolkit has the same
# stdout, stderr and exit status with and without the library, as shim-harmless shows for 13.
# The library is not idle meanwhile: its statistics count the program's registration calls and
# its one launch, which reaches it through nvcc 12's cudaLaunchKernel stub.
. "$(dirname "$0")/lib.sh"
CUDA12_HOME=${CUDA12_HOME:-$AG_ROOT/build/cuda12/home}
[ -x "$CUDA12_HOME/bin/nvcc" ] && [ -f "$CUDA12_HOME/lib64/libcudart.so.12" ] ||
  ag_skip "skipped: no CUDA 12 toolkit at $CUDA12_HOME (install it with tools/setup --cuda12)"
[ -f "$AG_LIB" ] || ag_skip "skipped: $AG_LIB is not built"

cat >"$AG_TMP/nodrv.cu" <<'CU'
#include <cstdio>
__global__ void k(int *p) { *p = 1; }
int main() {
  int v = 0;
  cudaError_t e = cudaRuntimeGetVersion(&v);
  printf("runtime: %s %d\n", cudaGetErrorName(e), v);
  int *p = nullptr;
  e = cudaMalloc(&p, 4);
  printf("malloc: %s\n", cudaGetErrorName(e));
  k<<<1, 1>>>(p);
  printf("launch: %s\n", cudaGetErrorName(cudaGetLastError()));
  cudaDeviceProp prop;
  printf("properties: %s\n", cudaGetErrorName(cudaGetDeviceProperties(&prop, 0)));
  e = cudaDeviceSynchronize();
  printf("sync: %s\n", cudaGetErrorName(e));
  fprintf(stderr, "done\n");
  return e == cudaSuccess ? 0 : 2;
}
CU
"$CUDA12_HOME/bin/nvcc" -cudart shared -o "$AG_TMP/nodrv" "$AG_TMP/nodrv.cu" 2>"$AG_TMP/nvcc.err" ||
  { cat "$AG_TMP/nvcc.err"; ag_fail "nvcc (CUDA 12) failed"; }
readelf -d "$AG_TMP/nodrv" | grep -q 'NEEDED.*\[libcudart\.so\.12\]' || ag_fail "nodrv does not need libcudart.so.12"

# Only the toolkit's lib64 on the search path: NVIDIA's libcudart.so.12 and no libcuda.so.1.
run() { env LD_LIBRARY_PATH="$CUDA12_HOME/lib64" "$@" "$AG_TMP/nodrv"; }
case $(run ldd | grep -E 'libcudart|libcuda\.so') in
  *"$CUDA12_HOME/lib64/libcudart.so.12"*) ;;
  *) ag_fail "nodrv does not load $CUDA12_HOME/lib64/libcudart.so.12" ;;
esac
! run ldd | grep -q 'libcuda\.so' || ag_fail "a libcuda is on the search path"

run >"$AG_TMP/a.out" 2>"$AG_TMP/a.err"
ra=$?
run LD_PRELOAD="$(ag_preload "$AG_LIB")" AUTOGRAPH_STATS="$AG_TMP/stats.json" >"$AG_TMP/b.out" 2>"$AG_TMP/b.err"
rb=$?
cat "$AG_TMP/a.out"
[ $ra = $rb ] || ag_fail "exit status $ra without the library, $rb with it"
cmp -s "$AG_TMP/a.out" "$AG_TMP/b.out" || { diff "$AG_TMP/a.out" "$AG_TMP/b.out"; ag_fail "stdout differs"; }
cmp -s "$AG_TMP/a.err" "$AG_TMP/b.err" || { diff "$AG_TMP/a.err" "$AG_TMP/b.err"; ag_fail "stderr differs"; }
# No driver: the runtime says so (cudaErrorInsufficientDriver) and the program fails.
grep -q '^runtime: cudaSuccess 12090$' "$AG_TMP/a.out" || ag_fail "not the 12.9 runtime"
grep -q '^malloc: cudaErrorInsufficientDriver$' "$AG_TMP/a.out" || ag_fail "the runtime found a driver"
[ $ra = 2 ] || ag_fail "exit status $ra, expected 2"

python3 - "$AG_TMP/stats.json" <<'PY' || ag_fail "the library's statistics do not show the program's calls"
import json, sys
s = json.load(open(sys.argv[1]))
calls = s["calls"]
print("stats: launches=%d by_path=%s cudaLaunchKernel=%s __cudaRegisterFunction=%s" % (
    s["launches"], s["by_path"], calls.get("cudaLaunchKernel"), calls.get("__cudaRegisterFunction")))
assert s["launches"] == 1 and s["by_path"]["runtime"] == 1 and s["replayed"] == 0
assert calls.get("cudaLaunchKernel") == 1 and calls.get("__cudaRegisterFunction") == 1
PY
echo "ok: identical with and without the library on NVIDIA's libcudart.so.12 without a driver"
