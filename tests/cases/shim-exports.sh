#!/usr/bin/env bash
# shim-exports — the library exports exactly the symbols generated from its tables, and each
# of them (except dlsym) is a real symbol of libcudart.so.13, libcuda or libcudnn.so.9.
set -eu
: "${AG_LIB:?}" "${BUILD:?}"
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
want=$BUILD/gen/exports.txt
[ -f "$want" ] || { echo "missing $want"; exit 1; }
nm -D --defined-only "$AG_LIB" | awk '{ print $3 }' | sed 's/@.*//' | LC_ALL=C sort -u >"$AG_TMP/have"
if ! diff -u "$want" "$AG_TMP/have"; then
  echo "exports differ from the generated list (- expected, + exported)"
  exit 1
fi
real=$AG_TMP/real
: >"$real"
for lib in "$CUDA_HOME/lib64/libcudart.so.13" "$CUDA_HOME/lib64/stubs/libcuda.so" \
           "$CUDA_HOME/lib64/libcudnn.so.9"; do
  [ -e "$lib" ] || continue
  nm -D --defined-only "$lib" | awk '{ print $3 }' | sed 's/@.*//' >>"$real"
done
echo dlsym >>"$real"
LC_ALL=C sort -u -o "$real" "$real"
extra=$(LC_ALL=C comm -23 "$want" "$real")
if [ -n "$extra" ]; then
  echo "exported but not a CUDA symbol: $extra"
  exit 1
fi
echo "ok: $(wc -l <"$want") symbols"
