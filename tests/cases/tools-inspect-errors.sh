#!/usr/bin/env bash
# tools-inspect-errors.sh — autograph-inspect on truncated and corrupted inputs: one clear line
# per bad file on stderr, "autograph-inspect: FILE: offset 0xN: REASON", exit status 1, never a
# crash, and the good files given in the same call are still listed in full.
#
# Inputs: hand-made cases (truncated container, cubin and host executable; bad magic; a fatbin
# wrapper; text; an empty file; a missing file; a compressed fatbin when zstd's decoder cannot be
# loaded), then every prefix of the small fatbins and cubin
# of tests/kernels/elf-tiny.cu and a few hundred copies of the compressed fatbin and the cubin
# with bytes overwritten at random (fixed seed), all in one call each so the test stays fast.
. "$(dirname "$0")/lib.sh"
insp=$BUILD/autograph-inspect
k=$BUILD/tests/kernels
host=$BUILD/tests/unit/elf-hostprog
[ -x "$insp" ] || ag_skip "skipped: $insp is not built"
for f in "$k/elf-kernels.cubin" "$k/elf-kernels.fatbin" "$k/elf-tiny.fatbin" \
         "$k/elf-tiny.z.fatbin" "$k/elf-tiny.cubin" "$host"; do
  [ -f "$f" ] || ag_skip "skipped: $f is not built"
done
d=$AG_TMP/bad
mkdir -p "$d"

# expect_error FILE PATTERN — inspecting FILE (between two good files) fails cleanly.
expect_error() {
  local f=$1 pat=$2
  "$insp" --count "$k/elf-tiny.cubin" "$f" "$k/elf-tiny.fatbin" >"$d/out" 2>"$d/err"
  local rc=$?
  [ $rc = 1 ] || { cat "$d/err" >&2; ag_fail "$f: exit status $rc, expected 1"; }
  [ "$(wc -l <"$d/err")" = 1 ] || { cat "$d/err" >&2; ag_fail "$f: expected one error line"; }
  grep -qE -- "^autograph-inspect: $(printf '%s' "$f" | sed 's/[.[\*^$]/\\&/g'): $pat" "$d/err" ||
    ag_fail "$f: error line '$(cat "$d/err")' does not match '$pat'"
  grep -q "elf-tiny.cubin: 2 kernels" "$d/out" && grep -q "elf-tiny.fatbin: 4 kernels" "$d/out" ||
    ag_fail "$f: the good files around it were not listed: $(cat "$d/out")"
  echo "ok: $(cat "$d/err")"
}

n=$(stat -c %s "$k/elf-kernels.fatbin")
head -c 10 "$k/elf-kernels.fatbin" >"$d/t10.fatbin"
head -c $((n / 2)) "$k/elf-kernels.fatbin" >"$d/half.fatbin"
head -c $((n - 1)) "$k/elf-kernels.fatbin" >"$d/short.fatbin"
head -c 700 "$k/elf-kernels.cubin" >"$d/t700.cubin"
head -c 30 "$k/elf-kernels.cubin" >"$d/t30.cubin"
head -c 40000 "$host" >"$d/host.trunc"
cp "$k/elf-kernels.fatbin" "$d/magic.fatbin"
printf '\x77' | dd of="$d/magic.fatbin" bs=1 seek=0 conv=notrunc status=none
# A second container after the first whose header is garbage, 8-byte aligned as in .nv_fatbin.
{ cat "$k/elf-tiny.fatbin"; head -c $(( (8 - $(stat -c %s "$k/elf-tiny.fatbin") % 8) % 8 )) /dev/zero
  printf 'GARBAGE!GARBAGE!'; } >"$d/two.fatbin"
printf '\xb1\x43\x62\x46\x01\x00\x00\x00\x00\x10\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00' \
  >"$d/wrapper.bin"
echo "plain text" >"$d/text.txt"
: >"$d/empty"

expect_error "$d/t10.fatbin" 'offset 0x0: .*truncated'
expect_error "$d/half.fatbin" 'offset 0x0: fatbin of [0-9]+ bytes overruns'
expect_error "$d/short.fatbin" 'offset 0x0: fatbin of [0-9]+ bytes overruns'
expect_error "$d/t700.cubin" 'offset 0x0: cubin: .*past the end'
expect_error "$d/t30.cubin" 'offset 0x0: cubin: truncated ELF header'
expect_error "$d/host.trunc" 'offset 0x[0-9a-f]+: host ELF: section header table past the end'
expect_error "$d/magic.fatbin" 'offset 0x0: not a fatbin, cubin or ELF file'
expect_error "$d/two.fatbin" "offset 0x[0-9a-f]+: bad fatbin magic"
expect_error "$d/wrapper.bin" 'offset 0x0: fatbin wrapper'
expect_error "$d/text.txt" 'offset 0x0: not a fatbin, cubin or ELF file'
expect_error "$d/empty" 'empty file'
expect_error "$d/missing" 'No such file'
expect_error "$d" 'not a regular file'
# zstd is loaded when the first compressed image comes: a libzstd.so.1 without the decoder
# (found first through LD_LIBRARY_PATH) makes the compressed fatbin one clear error.
mkdir -p "$d/nozstd"
cc -shared -o "$d/nozstd/libzstd.so.1" -x c /dev/null || ag_fail "cannot build the stand-in libzstd"
LD_LIBRARY_PATH=$d/nozstd expect_error "$k/elf-tiny.z.fatbin" \
  'offset 0x[0-9a-f]+: zstd-compressed image: libzstd.so.1 lacks a function of the decoder'
# The kernels of the first container of two.fatbin are listed before the error.
"$insp" --count "$d/two.fatbin" 2>/dev/null | grep -q ': 4 kernels' ||
  ag_fail "two.fatbin: the kernels before the bad container were not listed"

# Prefixes of the small images: each is an error, none a crash.
mkdir -p "$d/pre"
for f in elf-tiny.fatbin elf-tiny.z.fatbin elf-tiny.cubin; do
  n=$(stat -c %s "$k/$f")
  cuts=$(python3 - "$k/$f" "$d/pre/$f" "$n" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
# Every prefix through the headers, then every 13th: the parser's own test (elf-fuzz) takes
# every prefix in memory; here the point is the command's behaviour, and files cost time.
cuts = [i for i in range(1, int(sys.argv[3])) if i < 512 or i % 13 == 0]
for i in cuts:
    open(f"{sys.argv[2]}.{i}", "wb").write(data[:i])
print(len(cuts))
PY
)
  "$insp" --json "$d/pre/$f".* >"$d/pre.json" 2>"$d/pre.err"
  rc=$?
  [ $rc = 1 ] || ag_fail "prefixes of $f: exit status $rc, expected 1"
  bad=$(grep -vcE '^autograph-inspect: .*: offset 0x[0-9a-f]+: .+' "$d/pre.err")
  [ "$bad" = 0 ] || ag_fail "prefixes of $f: $bad malformed error lines: $(grep -vE 'offset 0x' "$d/pre.err" | head -3)"
  [ "$(wc -l <"$d/pre.err")" = "$cuts" ] ||
    ag_fail "prefixes of $f: $(wc -l <"$d/pre.err") errors for $cuts truncated files"
  python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$d/pre.json" ||
    ag_fail "prefixes of $f: the JSON output is not valid"
  rm -f "$d/pre/$f".*
  echo "ok: all $cuts prefixes of $f (of $n bytes) rejected with an offset"
done

# Random corruption: any outcome but a crash; every failure explained with an offset.
mkdir -p "$d/fuzz"
python3 - "$d/fuzz" "$k/elf-tiny.z.fatbin" "$k/elf-tiny.cubin" "$k/elf-kernels.cubin" <<'PY'
import random, sys
out, srcs = sys.argv[1], sys.argv[2:]
rng = random.Random(1234)
for s, src in enumerate(srcs):
    data = open(src, "rb").read()
    for i in range(150):
        b = bytearray(data)
        for _ in range(rng.choice([1, 2, 4, 16])):
            pos = rng.randrange(len(b)) if rng.random() < 0.5 else rng.randrange(min(len(b), 512))
            b[pos] = rng.randrange(256)
        open(f"{out}/{s}.{i}", "wb").write(bytes(b))
PY
"$insp" --json "$d/fuzz"/* >"$d/fuzz.json" 2>"$d/fuzz.err"
rc=$?
[ $rc = 0 ] || [ $rc = 1 ] || ag_fail "corrupted files: exit status $rc (a crash?)"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$d/fuzz.json" ||
  ag_fail "corrupted files: the JSON output is not valid"
# (A cubin whose e_machine byte was hit reads as a host ELF without device code: a valid answer.)
ok_line='^autograph-inspect: .*: (offset 0x[0-9a-f]+: .+|no CUDA device code)$'
bad=$(grep -vcE "$ok_line" "$d/fuzz.err")
[ "$bad" = 0 ] || ag_fail "corrupted files: malformed error lines: $(grep -vE "$ok_line" "$d/fuzz.err" | head -3)"
echo "ok: 450 corrupted images, $(wc -l <"$d/fuzz.err") rejected with an offset, no crash"
echo "tools-inspect-errors: ok"
