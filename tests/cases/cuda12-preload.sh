#!/usr/bin/env bash
# cuda12-preload.sh — the preload comparisons on CUDA 12: every tests/cases/preload-*.sh case runs
# again with the test programs built by the CUDA 12 toolkit ($BUILD/tests/progs12, linked
# against libcudart.so.12, nvcc 12's push/pop launch stubs; docs/cuda-versions.md) on the
# simulated CUDA 12 runtime, with the one library build that serves CUDA 13. Each case checks,
# as for 13, identical output with and without the library and exact launch counts by path; the
# replay checks of each case apply unchanged. Then the statistics of the 12 and the 13 build of
# four programs are compared: the same launches by path, and replayed counts within 5% of the
# launches of each other. (They need not be equal: a launch's structural hash includes its
# kernel's record number, which follows the order kernels are first seen in, and the 13 build's
# runtime makes other calls before its first launches; so the content-defined cuts, and how a
# step is split into graphs, may differ: docs/cuda-versions.md.)
#
# The cases find their programs in $BUILD/tests/progs; they run here with BUILD set to a shadow
# of the build folder whose tests/progs is progs12 and which is otherwise the same.
. "$(dirname "$0")/lib.sh"
# The sanitizer stages do not build the 12 programs (tests/check.mk, san-build): the library's
# code they run is the code the 13 programs run, and CI's time is mostly the sanitizer stages'.
[ -z "${AG_SAN_PRELOAD:-}" ] ||
  ag_skip "skipped under sanitizers: the CUDA 12 programs run the library code the 13 ones do (tests/check.mk)"
p12=$BUILD/tests/progs12
[ -d "$p12" ] || ag_skip "skipped: no CUDA 12 programs ($p12); install the toolkit with tools/setup --cuda12, then make"
[ -f "$AG_SIM/libcudart.so.12" ] || ag_skip "skipped: the simulated CUDA 12 runtime ($AG_SIM/libcudart.so.12) is not built"
ag_need

# The simulated runtime is a CUDA 12 one: NVIDIA's soname and version node, and nothing
# exported that NVIDIA's libcudart.so.12 does not export (when the toolkit is there to compare).
sim12=$AG_SIM/libcudart.so.12
readelf -d "$sim12" | grep -q 'SONAME.*\[libcudart\.so\.12\]' || ag_fail "$sim12: soname"
nm -D --defined-only "$sim12" | grep -q ' T cudaLaunchKernel@@libcudart\.so\.12$' ||
  ag_fail "$sim12: cudaLaunchKernel is not in version node libcudart.so.12"
real12=${CUDA12_HOME:-$AG_ROOT/build/cuda12/home}/lib64/libcudart.so.12
if [ -f "$real12" ]; then
  exports() { nm -D --defined-only "$1" | awk '$2 == "T" { print $3 }' | sort; }
  extra=$(comm -23 <(exports "$sim12") <(exports "$real12"))
  [ -z "$extra" ] || ag_fail "exported by the simulated libcudart.so.12, not by NVIDIA's: $extra"
  echo "ok   $(exports "$sim12" | wc -l) exports, each one of NVIDIA's libcudart.so.12 (same version node)"
fi

# Every program must really be a CUDA 12 one and resolve to the simulated 12 runtime.
for p in "$p12"/*; do
  [ -x "$p" ] || continue
  readelf -d "$p" | grep -q 'NEEDED.*\[libcudart\.so\.12\]' || ag_fail "$p does not need libcudart.so.12"
  ! readelf -d "$p" | grep -q 'libcudart\.so\.13' || ag_fail "$p needs libcudart.so.13"
  case $(LD_LIBRARY_PATH=$AG_SIM ldd "$p" | grep libcudart) in
    *"$AG_SIM/libcudart.so.12"*) ;;
    *) ag_fail "$p does not load $AG_SIM/libcudart.so.12" ;;
  esac
done
# A program with kernels launched by <<<>>> calls the push/pop stubs and cudaLaunchKernel, not
# CUDA 13's __cudaGetKernel/__cudaLaunchKernel.
nm -D "$p12/train-loop" | grep -q ' U __cudaPushCallConfiguration' || ag_fail "train-loop: no __cudaPushCallConfiguration"
nm -D "$p12/train-loop" | grep -q ' U cudaLaunchKernel@' || ag_fail "train-loop: no cudaLaunchKernel"
! nm -D "$p12/train-loop" | grep -q '__cudaGetKernel\|__cudaLaunchKernel' || ag_fail "train-loop: CUDA 13 launch stubs"

shadow=$AG_TMP/build12
mkdir -p "$shadow/tests"
for f in "$BUILD"/* "$BUILD"/tests/*; do
  case $f in "$BUILD/tests" | "$BUILD/tests/progs" | "$BUILD/tests/progs12") continue ;; esac
  ln -s "$f" "$shadow/${f#"$BUILD"/}"
done
ln -s "$p12" "$shadow/tests/progs"

n=0
for c in "$AG_ROOT"/tests/cases/preload-*.sh; do
  name=$(basename "$c" .sh)
  t=$AG_TMP/$name
  mkdir -p "$t"
  BUILD=$shadow AG_TMP=$t bash "$c" >"$AG_TMP/$name.log" 2>&1
  rc=$?
  if [ $rc -ne 0 ]; then
    tail -n 30 "$AG_TMP/$name.log"
    ag_fail "$name on CUDA 12: exit $rc (77 = skipped, which it must not be here)"
  fi
  echo "ok   $name on CUDA 12"
  n=$((n + 1))
done
[ $n -gt 0 ] || ag_fail "no preload case ran"

# The same program built for 12 and for 13, under the library: the same counts, path by path.
stat_fields() {
  python3 - "$1" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
b = s["by_path"]
print("launches=%d runtime=%d driver=%d cudnn=%d" % (s["launches"], b["runtime"], b["driver"], b["cudnn"]))
PY
}
# replayed_close S13 S12 — both replay, or neither, and within 5% of the launches of each other.
replayed_close() {
  python3 - "$1" "$2" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
print("replayed: 13 build %d, 12 build %d of %d" % (a["replayed"], b["replayed"], a["launches"]))
assert a["replayed"] + a["passthrough"] == a["launches"] and b["replayed"] + b["passthrough"] == b["launches"]
assert (a["replayed"] > 0) == (b["replayed"] > 0)
sys.exit(0 if abs(a["replayed"] - b["replayed"]) <= 0.05 * a["launches"] else 1)
PY
}
for prog in train-loop launch-variants driver-api multi-stream; do
  for v in 13 12; do
    dir=$BUILD/tests/progs
    [ $v = 12 ] && dir=$p12
    args=()
    [ $prog = driver-api ] && args=("$BUILD/tests/kernels")
    ag_run "$AG_TMP/x$v" env SIM_SEED=1 LD_PRELOAD="$(ag_preload "$AG_LIB")" \
        AUTOGRAPH_STATS="$AG_TMP/s$v.json" "$dir/$prog" "${args[@]}"
    [ "$(cat "$AG_TMP/x$v.rc")" = 0 ] || { cat "$AG_TMP/x$v.err"; ag_fail "$prog ($v) failed"; }
  done
  cmp -s "$AG_TMP/x13.out" "$AG_TMP/x12.out" || { diff "$AG_TMP/x13.out" "$AG_TMP/x12.out" | head; ag_fail "$prog: output of the 12 and 13 builds differs"; }
  a=$(stat_fields "$AG_TMP/s13.json") b=$(stat_fields "$AG_TMP/s12.json")
  [ "$a" = "$b" ] || ag_fail "$prog: statistics differ: 13: $a; 12: $b"
  replayed_close "$AG_TMP/s13.json" "$AG_TMP/s12.json" || ag_fail "$prog: the 12 and 13 builds replay different shares"
  case $a in launches=0\ *) ag_fail "$prog: no launches counted ($a)" ;; esac
  echo "ok   $prog: 12 and 13 builds: $a"
done
exit 0
