#!/usr/bin/env bash
# tools-wheel.sh — the Python package (pyproject.toml, docs/install.md) as a user gets it.
#
# 1. `make wheel`: one wheel, tagged py3-none-manylinux_2_28_x86_64, holding the package (the
#    library, the launcher, autograph-report, -predict and -inspect, the Python modules) and
#    nothing else: no CUDA library, no vendored library (zstd is opened at run time, when a
#    compressed image comes); the binaries need only glibc (2.28 at most, by their symbol
#    versions), libstdc++ for the inspector and zlib for the predictor.
# 2. pip installs it, offline, into a fresh virtual environment. There the `autograph` command
#    and `python -m autograph` preload the installed library by its absolute path, after what is
#    already in LD_PRELOAD; the program keeps the launcher's process id, its exit status and its
#    death by a signal; a library path holding a space is refused with a message; the other
#    three commands run.
# 3. A CUDA C program under the installed `autograph` on the simulator prints the same as
#    without it, with the summary on stderr showing replay; with the torch environment of
#    `tools/setup --torch` visible to the fresh environment (a .pth file: torch stays where it
#    is), `autograph tools/torch-sim python examples/mlp.py` with that environment's python
#    prints the summary and replays.
# 4. `pip install .` from the source tree into another fresh environment, with pip's own build
#    isolation, from the packages `tools/setup --wheel` cached (no network): its `autograph`
#    works, and setuptools left nothing beside the sources.
# Needs `tools/setup --wheel`. Building the wheel compiles the library again with zig's
# compiler (minutes on a loaded two-core machine), hence the longer limit. Not run under the
# sanitizers (the wheel would carry an instrumented library that only loads after its
# sanitizer runtime).
# ag-timeout: 600
. "$(dirname "$0")/lib.sh"
[ -z "${AG_SAN_PRELOAD:-}" ] || ag_skip "skipped under sanitizers: the wheel's library is instrumented there"
ag_need train-loop
wpy=$BUILD/wheel-venv/bin/python
[ -x "$wpy" ] || ag_skip "skipped: no packaging tools in $BUILD/wheel-venv (run tools/setup --wheel)"
cache=${AUTOGRAPH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/libautograph}/wheels
unset AUTOGRAPH_LIB AUTOGRAPH_STATS
d=$AG_TMP

# ---- 1. the wheel ----
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$AG_ROOT" BUILD="$BUILD" \
  -o "$BUILD/libautograph.so" -o "$BUILD/autograph-inspect" -o "$BUILD/autograph-predict" \
  wheel >"$d/make.log" 2>&1 || { tail -n 30 "$d/make.log" >&2; ag_fail "make wheel failed"; }
wheels=("$BUILD"/wheelhouse/*.whl)
[ ${#wheels[@]} = 1 ] && [ -f "${wheels[0]}" ] || ag_fail "make wheel made ${#wheels[@]} wheels: ${wheels[*]}"
whl=${wheels[0]}
echo "wheel: ${whl##*/}"
[[ ${whl##*/} =~ ^libautograph-[0-9.]+-py3-none-manylinux_2_28_x86_64\.whl$ ]] ||
  ag_fail "the wheel's name is not a py3-none-manylinux_2_28 x86-64 wheel: ${whl##*/}"
"$wpy" -m zipfile -l "$whl" | awk 'NR > 1 { print $1 }' | sort >"$d/files"
for f in autograph/__init__.py autograph/__main__.py autograph/_cli.py autograph/lib/libautograph.so \
         autograph/bin/autograph autograph/bin/autograph-report autograph/bin/autograph-predict \
         autograph/bin/autograph-inspect; do
  grep -qxF "$f" "$d/files" || ag_fail "the wheel lacks $f"
done
extra=$(grep -vE '^(autograph/|libautograph-[0-9.]+\.dist-info/)' "$d/files")
[ -z "$extra" ] || ag_fail "the wheel carries more than the package: $extra"
echo "contents: $(grep -c . "$d/files") files, the package and its metadata only"

# ---- 2. installed into a fresh environment ----
venv=$d/venv
python3 -m venv "$venv" || ag_fail "cannot create a virtual environment"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-index "$whl" >"$d/pip.log" 2>&1 ||
  { cat "$d/pip.log" >&2; ag_fail "pip install of the wheel failed"; }
lib=$("$venv/bin/python" -c 'import autograph; print(autograph.lib_path())') || ag_fail "import autograph failed"
case $lib in "$venv"/*/autograph/lib/libautograph.so) ;; *) ag_fail "lib_path() is $lib" ;; esac
[ -f "$lib" ] || ag_fail "lib_path() names no file: $lib"
bin=${lib%/lib/libautograph.so}/bin
for f in "$lib" "$bin/autograph-inspect" "$bin/autograph-predict"; do
  needed=$(objdump -p "$f" | awk '$1 == "NEEDED" { print $2 }' | sort | tr '\n' ' ')
  for n in $needed; do
    case $n in libc.so.6|libpthread.so.0|libdl.so.2|libm.so.6|libz.so.1|libstdc++.so.6|libgcc_s.so.1|ld-linux-x86-64.so.2) ;;
      *) ag_fail "${f##*/} needs $n, which the wheel neither carries nor may assume" ;; esac
  done
  newest=$(objdump -T "$f" | grep -o 'GLIBC_2\.[0-9.]*' | sort -uV | tail -n 1)
  [ "$(printf '%s\n' "$newest" GLIBC_2.28 | sort -V | tail -n 1)" = GLIBC_2.28 ] ||
    ag_fail "${f##*/} uses $newest, newer than glibc 2.28"
  echo "${f##*/}: needs $needed; newest glibc symbol $newest"
done
ldd "$lib" >"$d/ldd" 2>&1
! grep -q 'not found' "$d/ldd" || ag_fail "the installed library misses libraries: $(cat "$d/ldd")"
echo "installed: $lib"

for launcher in "$venv/bin/autograph" "$venv/bin/python -m autograph"; do
  # shellcheck disable=SC2086 # the second one is a command line of three words
  LD_PRELOAD=/first.so $launcher -n python train.py >"$d/dry" || ag_fail "$launcher -n failed"
  head -n 1 "$d/dry" | grep -qxF "LD_PRELOAD=/first.so\\ $lib" ||
    ag_fail "$launcher preloads $(head -n 1 "$d/dry"), not /first.so then $lib"
  tail -n 1 "$d/dry" | grep -qxF 'python train.py' || ag_fail "$launcher would run: $(tail -n 1 "$d/dry")"
done
"$venv/bin/autograph" -- sh -c 'echo $$' >"$d/pid" &
pid=$!
wait $pid
[ "$(cat "$d/pid")" = "$pid" ] || ag_fail "the program ran as process $(cat "$d/pid"), the launcher was $pid"
"$venv/bin/autograph" --no-stats -- sh -c 'exit 7'
rc=$?; [ $rc = 7 ] || ag_fail "exit status 7 came back as $rc"
"$venv/bin/python" -m autograph --no-stats -- sh -c 'kill -TERM $$'
rc=$?; [ $rc = 143 ] || ag_fail "death by SIGTERM came back as $rc, not 143"
echo "launchers: same process, exit status 7 and SIGTERM (143) kept"
mkdir -p "$d/a b"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-index --no-deps --target "$d/a b" "$whl" >/dev/null 2>&1 ||
  ag_fail "pip install --target failed"
PYTHONPATH="$d/a b" "$venv/bin/python" -m autograph -n true >"$d/space.out" 2>"$d/space.err"
rc=$?
[ $rc = 125 ] && grep -q 'contains a space or a colon' "$d/space.err" ||
  ag_fail "a library under a path with a space: exit $rc, $(cat "$d/space.err")"
echo "a path with a space: $(cat "$d/space.err")"
"$venv/bin/autograph-report" --help | grep -q '^usage: autograph-report' || ag_fail "autograph-report does not run"
"$venv/bin/autograph-predict" --help | grep -q '^usage: autograph-predict' || ag_fail "autograph-predict does not run"
"$venv/bin/autograph-inspect" --count "$BUILD/tests/kernels/elf-tiny.cubin" 2>&1 | grep -q ': 2 kernels' ||
  ag_fail "autograph-inspect does not work"

# ---- 3. programs under the installed command ----
prog=$BUILD/tests/progs/train-loop
ag_run "$d/plain" "$prog"
ag_ok "$d/plain"
ag_run "$d/inst" "$venv/bin/autograph" -- "$prog"
ag_same "$d/plain" "$d/inst"
grep '^autograph: ' "$d/inst.err" | tee "$d/summary"
grep -Eq '^autograph: [0-9]+ launches .*, [1-9][0-9]* replayed' "$d/summary" ||
  ag_fail "no summary with replay from the installed library: $(cat "$d/inst.err")"

tpy=$BUILD/torch-venv/bin/python
if [ -x "$tpy" ] && [ -f "$AG_SIM/libtorchtwins.so" ]; then
  site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  "$tpy" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' >"$site/torch-env.pth"
  "$venv/bin/python" -c 'import torch, autograph' || ag_fail "torch and autograph do not import together"
  # The simulator stands in for the GPU through tools/torch-sim, after the library in LD_PRELOAD;
  # a loaded machine slows the simulated Python between launches (tests/torch/example.sh).
  AG_PROG_TIMEOUT=240
  ag_run "$d/mlp" env -u LD_LIBRARY_PATH AUTOGRAPH_HOLD_US=200000 "$venv/bin/autograph" \
    "$AG_ROOT/tools/torch-sim" "$venv/bin/python" "$AG_ROOT/examples/mlp.py" --device cuda \
    --warmup 2 --threads 1 --steps 8 --batch-size 16 --width 64
  [ "$(cat "$d/mlp.rc")" = 0 ] || { tail -n 30 "$d/mlp.err" >&2; ag_fail "mlp.py under the installed autograph exited $(cat "$d/mlp.rc")"; }
  grep -q '^device: cuda ' "$d/mlp.out" || ag_fail "mlp.py did not run on the device: $(cat "$d/mlp.out")"
  grep '^autograph: ' "$d/mlp.err" | tee "$d/mlp.summary"
  grep -Eq '^autograph: [0-9]+ launches .*, [1-9][0-9]* replayed' "$d/mlp.summary" ||
    ag_fail "mlp.py: no summary with replay: $(tail -n 5 "$d/mlp.err")"
else
  echo "no torch environment (tools/setup --torch): examples/mlp.py not run"
fi

# ---- 4. pip install . with build isolation, offline ----
ls "$cache"/setuptools-*.whl "$cache"/wheel-*.whl >/dev/null 2>&1 ||
  ag_fail "no setuptools and wheel in the cache $cache (tools/setup --wheel puts them there)"
venv2=$d/venv2
python3 -m venv "$venv2" || ag_fail "cannot create a virtual environment"
(cd "$AG_ROOT" && "$venv2/bin/python" -m pip install -q --disable-pip-version-check --no-index \
  --find-links "$cache" .) >"$d/pip2.log" 2>&1 || { tail -n 30 "$d/pip2.log" >&2; ag_fail "pip install . failed"; }
ag_run "$d/src" "$venv2/bin/autograph" -- "$prog"
ag_same "$d/plain" "$d/src"
grep '^autograph: ' "$d/src.err" | grep -Eq ', [1-9][0-9]* replayed' ||
  ag_fail "pip install .: no summary with replay: $(cat "$d/src.err")"
stray=$(find "$AG_ROOT/tools/python" -name '*.egg-info' -o -name build)
[ -z "$stray" ] || ag_fail "pip left files beside the sources: $stray"
echo "pip install . (isolated build from the cache): the autograph command works"
