#!/usr/bin/env bash
# torch-calibrate.sh — tools/calibrate-elementwise on the pinned wheel: the calibration table of
# PyTorch's contiguous elementwise kernels, from the simulated driver's launch log
# (SIM_LAUNCH_LOG) and the wheel's parameter layouts. Checks, on the table it writes:
#   - the kernels it lists are the wheel's contiguous elementwise kernels, each with 2 to 8
#     tensors (a fill: 1) and a functor inside its parameters, and its strided ones
#     (elementwise_kernel), whose data array sits where an OffsetCalculator of 25 dimensions puts
#     it, with the functor after it, of the contiguous kernel's size and with the contiguous
#     kernel's scalar places;
#   - every sentinel scalar of the float32 operations whose functors hold their scalars is found,
#     and the bytes at each reported place, decoded as reported, give the sentinel back;
#   - the operations the catalogue knows by name calibrate to the functors PyTorch defines for
#     them (add with alpha: CUDAFunctor_add with alpha as a float; a division by a scalar: the
#     multiplication by its reciprocal; fill in float16: the value as a half);
#   - the coverage lines are printed and the JSON's counts agree with them;
#   - each kernel's launch shape is recorded: 128 threads and a power of two of elements per
#     block, for a strided kernel the product of its template's threads and elements per thread;
#   - the table names its build: libtorch_cuda.so's build ID, as readelf prints it.
. "$(dirname "$0")/lib.sh"
. "$AG_ROOT/tests/torch/sim-env.sh"
[ -x "$BUILD/autograph-inspect" ] || ag_skip "skipped: $BUILD/autograph-inspect is not built"
out=$AG_TMP/calibration.json
ag_run "$AG_TMP/cal" "$TORCH_SIM" "$PY" "$AG_ROOT/tools/calibrate-elementwise" --json "$out"
[ "$(cat "$AG_TMP/cal.rc")" = 0 ] || { tail -n 20 "$AG_TMP/cal.err" >&2; ag_fail "calibrate-elementwise exited $(cat "$AG_TMP/cal.rc")"; }
grep -E "^functors of the wheel's contiguous elementwise kernels known: [0-9]+ of [0-9]+" "$AG_TMP/cal.out" ||
  ag_fail "no coverage line"
lib=$("$TORCH_SIM" "$PY" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cuda.so"))' 2>/dev/null | tail -n 1)
id=$(readelf -n "$lib" 2>/dev/null | sed -n 's/^ *Build ID: *\([0-9a-f]*\)$/\1/p' | head -n 1)
[ -n "$id" ] || ag_fail "readelf found no build ID in $lib"
python3 - "$out" "$AG_TMP/cal.out" "$id" <<'PY' || ag_fail "the calibration table is wrong (see above)"
import json, re, struct, sys
t = json.load(open(sys.argv[1]))
lib = t.get("library", {})
if lib.get("name") != "libtorch_cuda.so" or lib.get("build_id") != sys.argv[3]:
    print(f"calibration: the table names {lib}, the wheel's library has build ID {sys.argv[3]}")
    sys.exit(1)
line = [l for l in open(sys.argv[2]) if l.startswith("functors of")][0]
sline = [l for l in open(sys.argv[2]) if l.startswith("the wheel's strided")][0]
bad = []
def want(cond, what):
    if not cond:
        bad.append(what)
ks = t["kernels"]
want(len(ks) >= 40, f"only {len(ks)} kernels calibrated")
by, strided = {}, {}
for name, e in ks.items():
    if e["framework"] == "elementwise_kernel":
        n = e["tensors"]
        want(2 <= n <= 8 and e["data_offset"] - e["calc_offset"] == (4 + 12 * 25 + 4 * 25 * n + 7) // 8 * 8 and
             e["functor_offset"] >= e["data_offset"] + 8 * n, f"{name}: strided layout {n} tensors, "
             f"calculator at {e['calc_offset']}, data at {e['data_offset']}, functor at {e['functor_offset']}")
        for op, o in e["ops"].items():
            strided[(op, e["dtype"])] = dict(e, **o)
        continue
    want(e["framework"] in ("vectorized_elementwise_kernel", "unrolled_elementwise_kernel"), f"{name}: framework {e['framework']}")
    want(2 <= e["tensors"] + (list(e["ops"]) == ["fill"]) <= 8, f"{name}: {e['tensors']} tensors")
    for op, o in e["ops"].items():
        want(len(bytes.fromhex(o["functor_bytes"])) == e["functor_size"], f"{name}: {op}'s functor bytes")
        by[(op, e["dtype"])] = dict(e, **o)
want(len(strided) >= 40, f"only {len(strided)} strided operations calibrated")
for key, e in strided.items():
    c = by.get(key)
    want(c and c["functor_size"] == e["functor_size"] and c["functor"] == e["functor"] and
         {m: s["at"] for m, s in c["scalars"].items()} == {m: s["at"] for m, s in e["scalars"].items()},
         f"{key}: the strided kernel's functor is not the contiguous one's")
def decode(b, enc):
    if enc == "float": return struct.unpack("<f", b[:4])[0]
    if enc == "double": return struct.unpack("<d", b[:8])[0]
    if enc == "half": return struct.unpack("<e", b[:2])[0]
    return struct.unpack("<f", b"\0\0" + b[:2])[0]  # bfloat16
forms = {"as given": lambda v: v, "negated": lambda v: -v, "reciprocal": lambda v: 1.0 / v}
checked = 0
for (op, dt), e in by.items():
    fb = bytes.fromhex(e["functor_bytes"])
    for meaning, s in e["scalars"].items():
        if dt == "float32":
            want(s["at"], f"{op}/{dt}: {meaning} not found")
        for p in s["at"]:
            got, exp = decode(fb[p["offset"]:], p["encoding"]), forms[p["form"]](s["value"])
            tol = {"float": 1e-7, "double": 0, "half": 1e-3, "bfloat16": 1e-2}[p["encoding"]]
            want(abs(got - exp) <= tol * abs(exp), f"{op}/{dt}: {meaning} at {p}: {got} != {exp}")
            checked += 1
want(checked >= 20, f"only {checked} scalar places checked")
e = by.get(("add_alpha", "float32"))
want(e and e["functor"] == "CUDAFunctor_add" and {"offset": 0, "encoding": "float", "form": "as given"} in e["scalars"]["alpha"]["at"], f"add_alpha: {e and e['scalars']}")
e = by.get(("div_scalar", "float32"))
want(e and e["functor"] == "MulFunctor" and all(p["form"] == "reciprocal" for p in e["scalars"]["other"]["at"]), f"div_scalar: {e and e['scalars']}")
e = by.get(("fill", "float16"))
want(e and e["functor"] == "FillFunctor" and [p["encoding"] for p in e["scalars"]["value"]["at"]] == ["half"], f"fill/float16: {e and e['scalars']}")
# The launch shapes: PyTorch sizes every framework's blocks as a power of two of elements; the
# strided framework elementwise_kernel<nt, vt, …> by its template arguments (nt threads, vt
# elements each), which the shape read from the grid must agree with.
for name, e in ks.items():
    w, th = e.get("block_work"), e.get("threads")
    want(w and th and w & (w - 1) == 0 and th == 128, f"{name}: launch shape {th} threads, {w} per block")
    tm = re.search(r"elementwise_kernel<(\d+), (\d+),", e["demangled"])
    if e["framework"] == "elementwise_kernel":
        want(tm and (int(tm.group(1)), int(tm.group(1)) * int(tm.group(2))) == (th, w),
             f"{name}: shape {th}, {w} is not its template's {tm and tm.groups()}")
c = t["coverage"]
m = re.search(r"known: (\d+) of (\d+) .*kernels: (\d+) of (\d+)", line)
want(m and [int(x) for x in m.groups()] == [c["functors_known"], c["functors"], c["kernels_known"], c["kernels"]], f"coverage line {line!r} != {c}")
want(c["functors"] >= 100 and c["functors_known"] >= 20, f"coverage {c}")
m = re.search(r"known: (\d+) of (\d+)", sline)
want(m and [int(x) for x in m.groups()] == [c["strided_kernels_known"], c["strided_kernels"]] and
     c["strided_kernels"] >= 1000, f"strided coverage line {sline!r} != {c}")
for b in bad:
    print("calibration:", b)
print(f"calibration: {len(ks)} kernels, {checked} scalar places decoded, coverage {c}")
sys.exit(1 if bad else 0)
PY
echo "torch-calibrate: the table is consistent"
