#!/usr/bin/env bash
# tools-install.sh — `make install` and `make uninstall` (tools/build.mk) into scratch prefixes.
#
# Installs the already built library, inspector and predictor (make -o: nothing is rebuilt here) with
# PREFIX=$AG_TMP/prefix, then checks that the installed launcher finds the installed library
# with no configuration, from any working directory and through a link, that the installed
# inspector runs, and that a real CUDA program runs under the installed launcher. Then a staged
# install (DESTDIR, PREFIX=/opt/autograph) whose launcher finds its library relative to itself,
# a custom LIBDIR, and uninstall, which removes exactly what install put there.
. "$(dirname "$0")/lib.sh"
[ -f "$AG_LIB" ] || ag_skip "skipped: $AG_LIB is not built"
[ -x "$BUILD/autograph-inspect" ] || ag_skip "skipped: $BUILD/autograph-inspect is not built"
[ -x "$BUILD/autograph-predict" ] || ag_skip "skipped: $BUILD/autograph-predict is not built"
unset AUTOGRAPH_LIB AUTOGRAPH_STATS
d=$AG_TMP
inst() { # MAKE-ARGS… — make install/uninstall with the build outputs taken as they are (and
  # without the flags of a make that may be running the test suite)
  env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$AG_ROOT" BUILD="$BUILD" -o "$BUILD/libautograph.so" -o "$BUILD/autograph-inspect" -o "$BUILD/autograph-predict" \
    "$@" >"$d/make.log" 2>&1 || { cat "$d/make.log" >&2; ag_fail "make $* failed"; }
}
files() { (cd "$1" && find . -type f -o -type l | sort); }

inst install PREFIX="$d/prefix"
files "$d/prefix"
[ "$(files "$d/prefix" | tr '\n' ' ')" = "./bin/autograph ./bin/autograph-inspect ./bin/autograph-predict ./bin/autograph-report ./lib/libautograph.so " ] ||
  ag_fail "installed files: $(files "$d/prefix")"
cmp -s "$AG_LIB" "$d/prefix/lib/libautograph.so" || ag_fail "the installed library differs"

mkdir -p "$d/elsewhere" "$d/path"
ln -s "$d/prefix/bin/autograph" "$d/path/autograph"
for launcher in "$d/prefix/bin/autograph" "$d/path/autograph"; do
  (cd "$d/elsewhere" && env -u BUILD LD_PRELOAD='' "$launcher" -n -- prog) >"$d/dry.out" ||
    ag_fail "$launcher: did not find its library"
  grep -qxF "LD_PRELOAD=$d/prefix/lib/libautograph.so" "$d/dry.out" ||
    ag_fail "$launcher preloads: $(cat "$d/dry.out")"
done
# Under a sanitizer build the sanitizer runtime is never preloaded alone into the launcher's
# bash (TSan's, uninitialised where nothing is instrumented, crashes every shell: see
# tools-launcher.sh), and the installed library, instrumented, cannot enter env without it: so
# there the launcher found from PATH only says what it would run (-n), from the same code.
run=(--)
[ -z "${AG_SAN_PRELOAD:-}" ] || run=(-n --)
(cd "$d/elsewhere" && env -u BUILD PATH="$d/prefix/bin:$PATH" autograph "${run[@]}" env) >"$d/env.out"
grep -qxF "LD_PRELOAD=${LD_PRELOAD:+$LD_PRELOAD }$d/prefix/lib/libautograph.so" "$d/env.out" ||
  ag_fail "run from PATH: $(grep ^LD_PRELOAD= "$d/env.out")"
"$d/prefix/bin/autograph-inspect" --count "$BUILD/tests/kernels/elf-tiny.cubin" 2>&1 |
  grep -q ': 2 kernels' || ag_fail "the installed inspector does not work"
"$d/prefix/bin/autograph" --help | grep -q -- '--max-graphs' || ag_fail "installed --help"
"$d/prefix/bin/autograph-predict" --help | grep -q '^usage: autograph-predict' || ag_fail "the installed predictor does not run"
echo "installed launcher and inspector work"

prog=$BUILD/tests/progs/train-loop
if [ -x "$prog" ] && [ -f "$AG_SIM/libcudart.so.13" ]; then
  ag_run "$d/plain" env LD_PRELOAD="$AG_PRELOAD_BASE" "$prog"
  ag_ok "$d/plain"
  # Under a sanitizer the launcher inherits the runtime together with the installed library, in
  # front of it (tools-launcher.sh says why), and keeps them; otherwise it adds the library.
  pre=${LD_PRELOAD:-}
  [ -z "${AG_SAN_PRELOAD:-}" ] || pre=$(ag_preload "$d/prefix/lib/libautograph.so")
  ag_run "$d/inst" env -u BUILD LD_PRELOAD="$pre" "$d/prefix/bin/autograph" --stats="$d/st.json" -- "$prog"
  ag_same "$d/plain" "$d/inst"
  ag_check_stats "$d/st.json" "$(tail -n 1 "$d/plain.out")"
  echo "train-loop runs under the installed launcher"
fi

# Staged install: the launcher finds the library relative to itself.
inst install PREFIX=/opt/autograph DESTDIR="$d/stage"
st=$d/stage/opt/autograph
[ -x "$st/bin/autograph" ] && [ -f "$st/lib/libautograph.so" ] || ag_fail "staged files missing"
env -u BUILD LD_PRELOAD='' "$st/bin/autograph" -n -- prog | grep -qxF "LD_PRELOAD=$st/lib/libautograph.so" ||
  ag_fail "the staged launcher does not find ../lib/libautograph.so"
inst uninstall PREFIX=/opt/autograph DESTDIR="$d/stage"
[ -z "$(files "$d/stage")" ] || ag_fail "uninstall left: $(files "$d/stage")"

# A LIBDIR that is not PREFIX/lib is written into the installed launcher.
inst install PREFIX="$d/p2" LIBDIR="$d/p2/lib64/autograph"
env -u BUILD LD_PRELOAD='' "$d/p2/bin/autograph" -n -- prog | grep -qxF "LD_PRELOAD=$d/p2/lib64/autograph/libautograph.so" ||
  ag_fail "the launcher does not find the library in LIBDIR"
inst uninstall PREFIX="$d/p2" LIBDIR="$d/p2/lib64/autograph"
inst uninstall PREFIX="$d/prefix"
[ -z "$(files "$d/prefix")" ] || ag_fail "uninstall left: $(files "$d/prefix")"
echo "tools-install: ok"
