#!/usr/bin/env bash
# report-errors.sh — tools/autograph-report on bad input: a missing, unreadable, empty, non-JSON,
# cut-short, non-dump, wrong-version or malformed dump each gives exit status 2 and exactly one
# line on stderr, "autograph-report: FILE: REASON", naming the file (and the bad field where there
# is one), never a traceback; a bad command line exits 2 with usage; an HTML page that cannot be
# written exits 1. Malformed dumps are made from tests/fixtures/report/basic.json.
. "$(dirname "$0")/lib.sh"
rep=$AG_ROOT/tools/autograph-report
fx=$AG_ROOT/tests/fixtures/report
command -v python3 >/dev/null || ag_skip "skipped: python3 is not installed"
d=$AG_TMP/bad
mkdir -p "$d"

# expect_error FILE PATTERN — reporting on FILE fails cleanly with a line matching PATTERN.
expect_error() {
  local f=$1 pat=$2
  "$rep" "$f" >"$d/out" 2>"$d/err"
  local rc=$?
  [ $rc = 2 ] || { cat "$d/err" >&2; ag_fail "$f: exit status $rc, expected 2"; }
  [ ! -s "$d/out" ] || ag_fail "$f: printed a report: $(head -3 "$d/out")"
  [ "$(wc -l <"$d/err")" = 1 ] || { cat "$d/err" >&2; ag_fail "$f: expected one error line"; }
  grep -qE -- "^autograph-report: $(printf '%s' "$f" | sed 's/[.[\*^$]/\\&/g'): $pat" "$d/err" ||
    ag_fail "$f: error line '$(cat "$d/err")' does not match '$pat'"
  echo "ok: $(cat "$d/err")"
}

# mutate NAME PYTHON — writes $d/NAME.json: basic.json changed by PYTHON acting on `d`.
mutate() {
  python3 - "$fx/basic.json" "$d/$1.json" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
exec(sys.argv[3])
open(sys.argv[2], "w").write(json.dumps(d, allow_nan=True))
PY
}

: >"$d/empty.json"
printf '{"schema": "autograph-dump", ' >"$d/brace.json"
head -c 3000 "$fx/basic.json" >"$d/cut.json"
printf '\xff\xfe{}' >"$d/binary.json"
echo '[1, 2]' >"$d/list.json"
echo '{"version": 1, "launches": 3, "replayed": 0, "fallbacks": {}}' >"$d/stats.json"
mutate schema 'd["schema"] = "something-else"'
mutate v4 'd["version"] = 4'
mutate vstr 'd["version"] = "1"'
mutate nototals 'del d["totals"]'
mutate seqobj 'd["sequences"] = {}'
mutate seen 'd["sequences"][1]["seen"] = "many"'
mutate negative 'd["totals"]["launches"] = -1'
mutate boolint 'd["totals"]["replayed"] = True'
mutate grid 'd["sequences"][0]["kernels"][2]["grid"] = [1, 2]'
mutate nan 'd["sequences"][3]["saved_ns_est"] = float("nan")'
mutate fbval 'd["totals"]["fallbacks"]["flushed"] = 1.5'
mutate kname 'del d["sequences"][4]["kernels"][0]["name"]'

expect_error "$d/missing.json" 'cannot read: No such file or directory$'
expect_error "$d" 'cannot read: Is a directory$'
expect_error "$d/empty.json" 'empty file, not a dump'
expect_error "$d/brace.json" 'not valid JSON: .*line 1 column'
expect_error "$d/cut.json" 'not valid JSON: '
expect_error "$d/binary.json" 'not a dump: not UTF-8 text'
expect_error "$d/list.json" 'not a dump: the top level is a list, expected an object$'
expect_error "$d/stats.json" 'this is a statistics report \(AUTOGRAPH_STATS\), not a dump'
expect_error "$d/schema.json" 'not a dump: schema is "something-else", expected "autograph-dump"$'
expect_error "$d/v4.json" 'dump version 4 is not supported \(this tool reads versions 1 to 3\)$'
expect_error "$d/vstr.json" 'dump version "1" is not supported'
expect_error "$d/nototals.json" 'totals is missing$'
expect_error "$d/seqobj.json" 'sequences is an object, expected a list$'
expect_error "$d/seen.json" 'sequences\[1\]\.seen is a string, expected a non-negative integer$'
expect_error "$d/negative.json" 'totals\.launches is negative \(-1\), expected a non-negative integer$'
expect_error "$d/boolint.json" 'totals\.replayed is a boolean, expected a non-negative integer$'
expect_error "$d/grid.json" 'sequences\[0\]\.kernels\[2\]\.grid is a list, expected a list of 3 integers$'
expect_error "$d/nan.json" 'sequences\[3\]\.saved_ns_est is not a finite number \(nan\), expected a number$'
expect_error "$d/fbval.json" 'totals\.fallbacks\.flushed is a number, expected a non-negative integer$'
expect_error "$d/kname.json" 'sequences\[4\]\.kernels\[0\]\.name is missing$'

# The command line.
"$rep" >"$d/out" 2>"$d/err"; rc=$?
[ $rc = 2 ] && grep -q '^usage: autograph-report' "$d/err" && ! grep -q Traceback "$d/err" ||
  ag_fail "no arguments: status $rc, $(cat "$d/err")"
"$rep" --top x "$fx/basic.json" >"$d/out" 2>"$d/err"; rc=$?
[ $rc = 2 ] && grep -q "^autograph-report: argument --top: invalid int value" "$d/err" ||
  ag_fail "--top x: status $rc, $(cat "$d/err")"
"$rep" --html "$d/no/such/dir/r.html" "$fx/basic.json" >"$d/out" 2>"$d/err"; rc=$?
[ $rc = 1 ] && [ "$(cat "$d/err")" = "autograph-report: $d/no/such/dir/r.html: cannot write: No such file or directory" ] ||
  ag_fail "unwritable --html: status $rc, $(cat "$d/err")"
echo "ok: usage errors and an unwritable page"
echo "report-errors: ok"
