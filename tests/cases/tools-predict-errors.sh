#!/usr/bin/env bash
# tools-predict-errors.sh — autograph-predict on traces it cannot use: each gives exit status 2
# and one line on stderr, "autograph-predict: FILE: REASON", that says what is wrong and where
# (the byte offset for JSON, the compressed offset for gzip). Cases: a missing file, text that is
# not JSON, JSON cut short, valid JSON that is not a Chrome trace (an object without
# traceEvents, a library statistics file, a bare number), a trace without kernel launches, a
# truncated and a corrupted .json.gz, a nesting beyond the depth limit, and bad command lines.
. "$(dirname "$0")/lib.sh"
pred=$BUILD/autograph-predict
mt=$AG_ROOT/tests/cases/make-trace.py
[ -x "$pred" ] || ag_skip "skipped: $pred is not built"
d=$AG_TMP
python3 "$mt" train "$d/good.json.gz" --steps 4 --kernels 4 --gz || ag_fail "make-trace.py failed"
python3 "$mt" train "$d/good.json" --steps 4 --kernels 4 || ag_fail "make-trace.py failed"

# expect_error FILE PATTERN [ARGS…] — the predictor fails on FILE with exit 2 and one line.
expect_error() {
  local f=$1 pat=$2
  shift 2
  "$pred" "$@" "$f" >"$d/out" 2>"$d/err"
  local rc=$?
  [ $rc = 2 ] || { cat "$d/err" >&2; ag_fail "$f: exit status $rc, expected 2"; }
  [ "$(wc -l <"$d/err")" = 1 ] || { cat "$d/err" >&2; ag_fail "$f: expected one error line"; }
  [ ! -s "$d/out" ] || ag_fail "$f: a report was printed despite the error"
  grep -qE -- "^autograph-predict: $(printf '%s' "$f" | sed 's/[.[\*^$]/\\&/g'): $pat" "$d/err" ||
    ag_fail "$f: error line '$(cat "$d/err")' does not match '$pat'"
  echo "ok: $(basename "$f"): $(cat "$d/err")"
}

expect_error "$d/missing.json" "cannot open: No such file"
printf 'hello, world\n' >"$d/text.json"
expect_error "$d/text.json" "not JSON: unexpected 'h' at byte 0"
head -c 700 "$d/good.json" >"$d/cut.json"
expect_error "$d/cut.json" "not JSON: the input ends at byte 700 "
printf '{"traceEvents": [{"ph": "X",, }]}' >"$d/comma.json"
expect_error "$d/comma.json" "not JSON: unexpected ',' at byte 28"
printf '' >"$d/empty.json"
expect_error "$d/empty.json" "not JSON: the input is empty"
printf '{"launches": 10, "replayed": 4}\n' >"$d/stats.json"
expect_error "$d/stats.json" 'not a Chrome trace: no "traceEvents" array'
printf '42\n' >"$d/number.json"
expect_error "$d/number.json" "not a Chrome trace"
printf '{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 1.5, "dur": 2}]}' >"$d/cpu.json"
expect_error "$d/cpu.json" "no kernel launches: 1 events"
python3 -c "print('{\"traceEvents\": [' + '[' * 100 + ']' * 100 + ']}')" >"$d/deep.json"
expect_error "$d/deep.json" "nesting deeper than 64 levels at byte 79"
size=$(stat -c %s "$d/good.json.gz")
head -c $((size / 2)) "$d/good.json.gz" >"$d/trunc.json.gz"
expect_error "$d/trunc.json.gz" "truncated gzip data: the compressed input ends at byte $((size / 2)) inside a member \(JSON byte [0-9]+, compressed byte $((size / 2))\)"
python3 - "$d/good.json.gz" "$d/bad.json.gz" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
for i in range(40, 80):
    b[i] ^= 0x5a
open(sys.argv[2], "wb").write(b)
PY
expect_error "$d/bad.json.gz" "corrupt gzip data at compressed byte [0-9]+"

# Bad command lines: exit 2, usage or a message naming the option.
"$pred" >/dev/null 2>&1; [ $? = 2 ] || ag_fail "no argument: expected exit 2"
"$pred" --repeats 0 "$d/good.json" 2>"$d/err" >/dev/null; [ $? = 2 ] || ag_fail "--repeats 0: expected exit 2"
grep -q "^autograph-predict: --repeats: expected an integer from 1" "$d/err" || ag_fail "--repeats 0: $(cat "$d/err")"
"$pred" --min-seq 9 --max-seq 4 "$d/good.json" 2>"$d/err" >/dev/null; [ $? = 2 ] || ag_fail "--min-seq above --max-seq: expected exit 2"
"$pred" --bogus "$d/good.json" >/dev/null 2>&1; [ $? = 2 ] || ag_fail "--bogus: expected exit 2"
"$pred" --help | grep -q "^usage: autograph-predict" || ag_fail "--help prints no usage"
# The good traces still work (so the failures above are about the inputs).
"$pred" "$d/good.json.gz" >/dev/null || ag_fail "the good .json.gz trace failed"
"$pred" "$d/good.json" >/dev/null || ag_fail "the good .json trace failed"
echo "tools-predict-errors: every bad trace and command line gave exit 2 and one clear line"
