#!/usr/bin/env bash
# shim-fake-driver — the getter, the dlsym override and nesting, against a tiny fake driver and
# runtime built here (independent of the simulator).
#
# fake libcuda.so.1: cuGetProcAddress_v2 answering by (name, version, flags) with distinct
# functions that record which ABI was called. fake libcudart.so.13: dlopens libcuda.so.1 and
# gets the getter with dlsym, as the real runtime does; cudaLaunchKernel launches through the
# driver's cuLaunchKernel and cudaMemcpy copies through cuMemcpyHtoD_v2. The program makes
# runtime launches, driver launches (getter and direct dlsym), a versioned query, and checks
# that every result is what the fake returned. The stats must count each launch once, at the
# outermost level, with the right path. The fake also serves functions the library's table does
# not describe (GL interop, cuDevicePrimaryCtxReset at the 7000 ABI, a made-up function with
# arguments in every register class and on the stack): each must reach the driver with every
# argument intact and count as an ordering call of family "unclassified".
set -eu
: "${AG_LIB:?}" "${AG_TMP:?}"
CC=${CC:-cc}
src=$AG_ROOT/tests/cases/shim
mkdir -p "$AG_TMP/lib"
$CC -shared -fPIC -o "$AG_TMP/lib/libcuda.so.1" -Wl,-soname,libcuda.so.1 "$src/fake-cuda.c"
echo 'libcudart.so.13 { global: cuda*; local: *; };' >"$AG_TMP/rt.map"
$CC -shared -fPIC -o "$AG_TMP/lib/libcudart.so.13" -Wl,-soname,libcudart.so.13 \
  -Wl,--version-script="$AG_TMP/rt.map" "$src/fake-cudart.c" -ldl
$CC -o "$AG_TMP/prog" "$src/fake-prog.c" -L"$AG_TMP/lib" -l:libcudart.so.13 -ldl -lpthread \
  -Wl,-rpath,"$AG_TMP/lib"

# Without the library: the program's own checks pass.
LD_LIBRARY_PATH=$AG_TMP/lib "$AG_TMP/prog" >"$AG_TMP/plain.out"
# With it: same output, and the counts.
LD_LIBRARY_PATH=$AG_TMP/lib LD_PRELOAD="${AG_SAN_PRELOAD:+$AG_SAN_PRELOAD }$AG_LIB" AUTOGRAPH_STATS=$AG_TMP/s.json \
  "$AG_TMP/prog" >"$AG_TMP/pre.out"
diff "$AG_TMP/plain.out" "$AG_TMP/pre.out"
cat "$AG_TMP/s.json"
python3 - "$AG_TMP/s.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
def eq(k, got, want):
    if got != want:
        sys.exit(f"{k}: got {got}, want {want}")
eq("launches", s["launches"], 5 + 3 + 2 + 4)
eq("passthrough", s["passthrough"], s["launches"])
eq("by_path", s["by_path"], {"runtime": 5 + 4, "driver": 3 + 2, "cudnn": 0})
eq("families.launch", s["families"]["launch"], s["launches"])
c = s["calls"]
eq("cudaLaunchKernel", c.get("cudaLaunchKernel"), 5)
eq("cudaLaunchKernel_ptsz", c.get("cudaLaunchKernel_ptsz"), 4)
eq("cuLaunchKernel", c.get("cuLaunchKernel"), 3 + 2)
eq("cudaMemcpy", c.get("cudaMemcpy"), 2)
eq("cuMemcpyHtoD (nested: not counted)", c.get("cuMemcpyHtoD"), None)
eq("cuCtxSynchronize", c.get("cuCtxSynchronize"), 1)
eq("cuStreamGetCaptureInfo (harmless)", c.get("cuStreamGetCaptureInfo"), None)
eq("families.copy", s["families"]["copy"], 2)
eq("families.sync", s["families"]["sync"], 1)
eq("cuGraphicsGLRegisterBuffer", c.get("cuGraphicsGLRegisterBuffer"), 1)
eq("cuDevicePrimaryCtxReset (7000 ABI)", c.get("cuDevicePrimaryCtxReset"), 2)
eq("cuFakeWide", c.get("cuFakeWide"), 2)
eq("families.unclassified", s["families"]["unclassified"], 5)
eq("ordering", s["ordering"], 3 + 5)
PY
echo ok
