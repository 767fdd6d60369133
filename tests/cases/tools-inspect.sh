#!/usr/bin/env bash
# tools-inspect.sh — autograph-inspect lists exactly the kernels and layouts of known images.
#
# The images are built from tests/kernels/elf-kernels.cu: a cubin (sm_80), a fatbin and a
# zstd-compressed fatbin (sm_75 and sm_80), and the host executable tests/unit/elf-hostprog
# (nvcc's default target, sm_75). The expected layouts below follow from the C layout rules for
# the kernels' parameter types (tests/unit/elf-image.c derives the same numbers with offsetof):
# each kernel appears once per architecture, with these offsets and sizes, and its demangled name.
# Also: the text and --count outputs, the source-tree wrapper, several files in one call, a host
# file without device code, and --help.
. "$(dirname "$0")/lib.sh"
insp=$BUILD/autograph-inspect
k=$BUILD/tests/kernels
[ -x "$insp" ] || ag_skip "skipped: $insp is not built"
for f in "$k/elf-kernels.cubin" "$k/elf-kernels.fatbin" "$k/elf-kernels.z.fatbin" \
         "$BUILD/tests/unit/elf-hostprog"; do
  [ -f "$f" ] || ag_skip "skipped: $f is not built"
done

check_json() { # FILE ARCH… — the JSON for FILE lists every expected kernel once per ARCH
  local file=$1
  shift
  "$insp" --json "$file" >"$AG_TMP/out.json" 2>"$AG_TMP/err" || {
    cat "$AG_TMP/err" >&2
    ag_fail "autograph-inspect --json $file exited with $?"
  }
  python3 - "$AG_TMP/out.json" "$file" "$@" <<'PY' || ag_fail "wrong kernels in $file (see above)"
import json, sys
path, file, archs = sys.argv[1], sys.argv[2], [int(a) for a in sys.argv[3:]]
want = {  # name: (demangled, param_bytes, [(offset, size), ...])
    "elf_none": ("elf_none", 0, []),
    "elf_mixed": ("elf_mixed", 49,
                  [(0, 1), (8, 8), (16, 2), (24, 8), (32, 1), (36, 4), (40, 8), (48, 1)]),
    "elf_structs": ("elf_structs", 48, [(0, 12), (12, 1), (16, 24), (40, 3), (44, 4)]),
    "elf_big": ("elf_big", 20008, [(0, 20000), (20000, 8)]),
    "elf_big_mid": ("elf_big_mid", 20016, [(0, 1), (4, 20000), (20004, 2), (20008, 8)]),
    "elf_huge": ("elf_huge", 32756, [(0, 32752), (32752, 4)]),
    "_Z7elf_cppPfif": ("elf_cpp(float*, int, float)", 16, [(0, 8), (8, 4), (12, 4)]),
    "_Z8elf_tmplIfLi4EEvPT_S0_c": ("void elf_tmpl<float, 4>(float*, float, char)", 13,
                                   [(0, 8), (8, 4), (12, 1)]),
    "_Z8elf_tmplIdLi8EEvPT_S0_c": ("void elf_tmpl<double, 8>(double*, double, char)", 17,
                                   [(0, 8), (8, 8), (16, 1)]),
    "_Z8elf_tmplIcLi2EEvPT_S0_c": ("void elf_tmpl<char, 2>(char*, char, char)", 10,
                                   [(0, 8), (8, 1), (9, 1)]),
}
with open(path) as f:
    got = json.load(f)
errors = []
seen = {}
for o in got:
    key = (o["name"], o["arch"])
    seen[key] = seen.get(key, 0) + 1
    for field in ("arch", "param_bytes"):
        if not isinstance(o.get(field), int):
            errors.append(f"{key}: {field} is not an integer")
    if o.get("file") != file:
        errors.append(f"{key}: file is {o.get('file')!r}")
    if o["name"] not in want:
        errors.append(f"unexpected kernel {o['name']}")
        continue
    dem, nbytes, params = want[o["name"]]
    p = [(x["offset"], x["size"]) for x in o["params"]]
    if (o["demangled"], o["param_bytes"], p) != (dem, nbytes, params):
        errors.append(f"{key}: got {o['demangled']!r} {o['param_bytes']} {p}, "
                      f"expected {dem!r} {nbytes} {params}")
for name in want:
    for a in archs:
        if seen.get((name, a), 0) != 1:
            errors.append(f"{name} sm_{a} listed {seen.get((name, a), 0)} times, expected once")
if len(got) != len(want) * len(archs):
    errors.append(f"{len(got)} kernels listed, expected {len(want) * len(archs)}")
for e in errors:
    print(e, file=sys.stderr)
if errors:
    sys.exit(1)
print(f"{file}: {len(got)} kernels as expected")
PY
}

check_json "$k/elf-kernels.cubin" 80
check_json "$k/elf-kernels.fatbin" 75 80
check_json "$k/elf-kernels.z.fatbin" 75 80
check_json "$BUILD/tests/unit/elf-hostprog" 75

# Text output: a header per file, one line per kernel, the demangled name after the mangled one.
"$insp" "$k/elf-kernels.cubin" >"$AG_TMP/text" || ag_fail "text output: exit $?"
head -n 1 "$AG_TMP/text" | grep -qxF "$k/elf-kernels.cubin:" || ag_fail "text: no header line"
[ "$(grep -c '^  sm_80 ' "$AG_TMP/text")" = 10 ] || ag_fail "text: expected 10 sm_80 lines"
grep -qE '^  sm_80 +8 +49  0\+1,8\+8,16\+2,24\+8,32\+1,36\+4,40\+8,48\+1  elf_mixed$' "$AG_TMP/text" ||
  ag_fail "text: elf_mixed line wrong: $(grep elf_mixed "$AG_TMP/text")"
grep -qF '_Z7elf_cppPfif  elf_cpp(float*, int, float)' "$AG_TMP/text" || ag_fail "text: not demangled"
grep -qE '^  sm_80 +0 +0  -  elf_none$' "$AG_TMP/text" || ag_fail "text: elf_none line wrong"
"$insp" --no-demangle "$k/elf-kernels.cubin" | grep -q 'elf_cpp(' && ag_fail "--no-demangle demangled"
echo "text output ok"

# --count, several files in one call, and a host file without device code (not an error).
"$insp" --count "$k/elf-kernels.cubin" "$k/elf-kernels.z.fatbin" /bin/sh >"$AG_TMP/count" \
  2>"$AG_TMP/count.err" || ag_fail "--count: exit $? ($(cat "$AG_TMP/count.err"))"
cat "$AG_TMP/count" "$AG_TMP/count.err"
grep -qxF "$k/elf-kernels.cubin: 10 kernels (sm_80: 10)" "$AG_TMP/count" || ag_fail "--count cubin"
grep -qxF "$k/elf-kernels.z.fatbin: 20 kernels (sm_75: 10, sm_80: 10)" "$AG_TMP/count" ||
  ag_fail "--count fatbin"
grep -qxF "/bin/sh: 0 kernels" "$AG_TMP/count" || ag_fail "--count of a host file without kernels"
grep -qF "/bin/sh: no CUDA device code" "$AG_TMP/count.err" || ag_fail "no note for /bin/sh"
"$insp" --json "$k/elf-kernels.cubin" "$k/elf-kernels.fatbin" |
  python3 -c 'import json,sys; n=len(json.load(sys.stdin)); sys.exit(n != 30)' ||
  ag_fail "--json over two files is not one array of 30 kernels"
"$insp" --json /bin/sh 2>/dev/null | python3 -c 'import json,sys; sys.exit(json.load(sys.stdin) != [])' ||
  ag_fail "--json of a file without kernels is not []"

# The source-tree wrapper runs the same binary.
BUILD=$BUILD "$AG_ROOT/tools/autograph-inspect" --count "$k/elf-kernels.cubin" | grep -q ': 10 kernels' ||
  ag_fail "tools/autograph-inspect does not run $insp"

# Help and usage errors.
"$insp" --help >"$AG_TMP/help" || ag_fail "--help exited $?"
for w in --json --count --no-demangle cubin fatbin libcublasLt offset 'Exit status'; do
  grep -q -- "$w" "$AG_TMP/help" || ag_fail "--help does not mention $w"
done
"$insp" >/dev/null 2>&1; [ $? = 2 ] || ag_fail "no file: expected exit 2"
"$insp" --bogus "$k/elf-kernels.cubin" >/dev/null 2>&1; [ $? = 2 ] || ag_fail "bad option: expected exit 2"
echo "tools-inspect: ok"
