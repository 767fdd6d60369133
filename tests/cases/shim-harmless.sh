#!/usr/bin/env bash
# shim-harmless — preloaded where it has nothing to do, the library changes nothing: programs
# that never touch CUDA, and a real CUDA program (the toolkit's libcudart) on a machine with no
# driver, have the same stdout, stderr and exit status with and without it.
set -u
: "${AG_LIB:?}" "${AG_TMP:?}"
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
fail=0

same() { # name, command…
  local name=$1; shift
  "$@" >"$AG_TMP/a.out" 2>"$AG_TMP/a.err"; local ra=$?
  LD_PRELOAD="${AG_SAN_PRELOAD:+$AG_SAN_PRELOAD }$AG_LIB" "$@" >"$AG_TMP/b.out" 2>"$AG_TMP/b.err"; local rb=$?
  if [ $ra -ne $rb ] || ! cmp -s "$AG_TMP/a.out" "$AG_TMP/b.out" ||
     ! cmp -s "$AG_TMP/a.err" "$AG_TMP/b.err"; then
    echo "FAIL $name: exit $ra vs $rb"; diff "$AG_TMP/a.out" "$AG_TMP/b.out"
    diff "$AG_TMP/a.err" "$AG_TMP/b.err"; fail=1
  else
    echo "ok   $name (exit $ra)"
  fi
}

same echo /bin/echo hello world
same false /bin/false
same python3 python3 -c 'import ctypes, sys; print(ctypes.CDLL(None).dlsym is not None); sys.exit(3)'
same sh /bin/sh -c 'echo in; echo err >&2; exit 4'

# A real CUDA program on no driver: the toolkit's libcudart, and no libcuda.so.1 anywhere on
# the search path (the runner's LD_LIBRARY_PATH points at the simulator; replace it).
if [ -x "$CUDA_HOME/bin/nvcc" ]; then
  cat >"$AG_TMP/nodrv.cu" <<'CU'
#include <cstdio>
__global__ void k(int *p) { *p = 1; }
int main() {
  int *p = nullptr;
  cudaError_t e = cudaMalloc(&p, 4);
  printf("malloc: %s\n", cudaGetErrorName(e));
  k<<<1, 1>>>(p);
  printf("launch: %s\n", cudaGetErrorName(cudaGetLastError()));
  e = cudaDeviceSynchronize();
  printf("sync: %s\n", cudaGetErrorName(e));
  fprintf(stderr, "done\n");
  return e == cudaSuccess ? 0 : 2;
}
CU
  if "$CUDA_HOME/bin/nvcc" -cudart shared -o "$AG_TMP/nodrv" "$AG_TMP/nodrv.cu" 2>"$AG_TMP/nvcc.err"; then
    same no-driver env LD_LIBRARY_PATH="$CUDA_HOME/lib64" "$AG_TMP/nodrv"
    same no-driver-stats-off env LD_LIBRARY_PATH="$CUDA_HOME/lib64" AUTOGRAPH_STATS=0 "$AG_TMP/nodrv"
    cat "$AG_TMP/a.out"
  else
    echo "nvcc failed:"; cat "$AG_TMP/nvcc.err"; fail=1
  fi
fi
exit $fail
