#!/usr/bin/env bash
# docs-links.sh — every relative link and #anchor in README.md and docs/*.md resolves, and every
# docs/*.md is in README.md's documentation map (tools/check-doc-links). Then the checker is
# shown to catch each kind of problem on a copy of the documentation with one planted: a link
# to a missing file, an anchor that no heading has, a link out of the repository, and a docs
# file the map does not list; and to accept a repeated heading's GitHub anchor (-1).
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || ag_skip "skipped: python3 is not installed"
chk=$AG_ROOT/tools/check-doc-links

out=$("$chk" "$AG_ROOT") || { echo "$out"; ag_fail "the documentation has broken links"; }
echo "$out"
n=$(echo "$out" | sed -n 's/^\([0-9]*\) links checked.*/\1/p')
[ "${n:-0}" -ge 20 ] || ag_fail "only ${n:-0} links found: the checker no longer sees the map"

# copy NAME — a fresh copy of README.md and docs/ in $AG_TMP/NAME (echoes its path).
copy() {
  local d=$AG_TMP/$1
  rm -rf "$d"; mkdir -p "$d"
  cp "$AG_ROOT/README.md" "$d/" && cp -r "$AG_ROOT/docs" "$d/" && mkdir -p "$d/tests/sim" &&
    cp "$AG_ROOT/tests/README.md" "$d/tests/" && cp "$AG_ROOT/tests/sim/README.md" "$d/tests/sim/"
  echo "$d"
}
# planted NAME EXPECTED — the checker must fail on copy NAME with a line matching EXPECTED.
planted() {
  local o
  if o=$("$chk" "$AG_TMP/$1"); then ag_fail "$1: a planted problem was not found"; fi
  echo "$o" | grep -qE -- "$2" || { echo "$o"; ag_fail "$1: expected a line matching '$2'"; }
  echo "ok: $1 caught: $(echo "$o" | grep -E -- "$2" | head -1)"
}

d=$(copy clean)
"$chk" "$d" >/dev/null || ag_fail "the unmodified copy does not pass"

d=$(copy file)
printf '\nSee [the options](docs/no-such-page.md).\n' >>"$d/README.md"
planted file '^README.md:[0-9]+: docs/no-such-page.md: no such file'

d=$(copy anchor)
printf '\nSee [the schema](options.md#no-such-heading).\n' >>"$d/docs/tools.md"
planted anchor '^docs/tools.md:[0-9]+: options.md#no-such-heading: no heading with anchor'

d=$(copy self-anchor)
printf '\nBack to [the top](#not-a-heading-here).\n' >>"$d/docs/trace.md"
planted self-anchor '^docs/trace.md:[0-9]+: #not-a-heading-here: no heading'

d=$(copy outside)
printf '\nSee [this](../../etc/passwd).\n' >>"$d/docs/options.md"
planted outside 'points outside the repository'

d=$(copy unlisted)
printf '# Orphan\n' >"$d/docs/orphan.md"
planted unlisted '^docs/orphan.md: not linked from README.md'

# Links inside code are not links: a planted broken link in a code span or block passes.
d=$(copy code)
printf '\n`[x](nope.md)`\n\n```\n[y](nope.md#z)\n```\n' >>"$d/docs/options.md"
"$chk" "$d" >/dev/null || ag_fail "a link inside code was checked"

# A repeated heading: GitHub names the second one SLUG-1.
d=$(copy repeated)
printf '\n## Twice\n\n## Twice\n\nSee [the second](#twice-1) and [the `AUTOGRAPH_X=<v>` one](#autograph_xv).\n\n## `AUTOGRAPH_X=<v>`\n' >>"$d/docs/options.md"
"$chk" "$d" >/dev/null || { "$chk" "$d"; ag_fail "GitHub anchors of repeated and code headings were not accepted"; }
printf '\n[bad](#twice-2)\n' >>"$d/docs/options.md"
planted repeated '#twice-2: no heading'
echo "ok: the checker catches every planted problem"
