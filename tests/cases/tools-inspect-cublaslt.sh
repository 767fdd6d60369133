#!/usr/bin/env bash
# tools-inspect-cublaslt.sh — autograph-inspect over a large real library: libcublasLt.so.13 from
# $CUDA_HOME/lib64 (skipped when absent), ~42k kernels in zstd-compressed fatbins, must be listed
# (more than 40 000) within seconds. Prints the counts and the time of --count and of --json;
# the JSON must parse, and every kernel in it have a name and parameters inside its block.
. "$(dirname "$0")/lib.sh"
insp=$BUILD/autograph-inspect
lt=${CUDA_HOME:-/usr/local/cuda}/lib64/libcublasLt.so.13
[ -x "$insp" ] || ag_skip "skipped: $insp is not built"
[ -f "$lt" ] || ag_skip "skipped: $lt not found"
limit=${AG_INSPECT_LIMIT_S:-30}

t0=$(date +%s.%N)
"$insp" --count "$lt" >"$AG_TMP/count" || ag_fail "--count $lt exited with $?"
t1=$(date +%s.%N)
cat "$AG_TMP/count"
n=$(sed -n 's/.*: \([0-9]*\) kernels.*/\1/p' "$AG_TMP/count")
[ -n "$n" ] && [ "$n" -gt 40000 ] || ag_fail "expected more than 40000 kernels, got '${n:-none}'"
secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
echo "--count: $n kernels in ${secs}s"

"$insp" --json "$lt" >"$AG_TMP/lt.json" || ag_fail "--json $lt exited with $?"
t2=$(date +%s.%N)
jsecs=$(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.2f", b - a }')
echo "--json: $(stat -c %s "$AG_TMP/lt.json") bytes in ${jsecs}s"
python3 - "$AG_TMP/lt.json" "$n" <<'PY' || ag_fail "the JSON for $lt is wrong (see above)"
import json, sys
ks = json.load(open(sys.argv[1]))
assert len(ks) == int(sys.argv[2]), f"{len(ks)} kernels in the JSON, --count said {sys.argv[2]}"
for k in ks:
    assert k["name"] and k["demangled"], k
    assert 0 <= k["param_bytes"] <= 32764, k
    end = 0
    for p in k["params"]:
        assert p["offset"] >= end and p["offset"] + p["size"] <= k["param_bytes"], k
        end = p["offset"] + p["size"]
dem = sum(1 for k in ks if k["demangled"] != k["name"])
print(f"json ok: {len(ks)} kernels, {dem} demangled, archs {sorted({k['arch'] for k in ks})}")
PY
awk -v s="$secs" -v j="$jsecs" -v l="$limit" 'BEGIN { exit !(s < l && j < l) }' ||
  ag_fail "too slow: --count ${secs}s, --json ${jsecs}s (limit ${limit}s)"
echo "tools-inspect-cublaslt: ok"
