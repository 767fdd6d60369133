#!/usr/bin/env bash
# rel-late-dlopen.sh — CUDA code in libraries loaded after start (tests/progs/r-late.cu): a
# library dlopened from another library's constructor (and launching from inside it), one
# dlopened from a second thread, both called again from the main thread. Identical output with
# the library, every launch counted (the statistics' runtime launches equal the program's own
# count, which includes the libraries'), and their repeated sequences replayed as graphs.
# AUTOGRAPH_MAX_SEQ=32: each run of a library is one unbroken 4-launch pattern shorter than the
# default longest sequence, so without a cut inside it no sequence would repeat.
. "$(dirname "$0")/lib.sh"
for l in a b loader; do
  [ -f "$BUILD/tests/progs/libr-late-$l.so" ] || ag_skip "skipped: $BUILD/tests/progs/libr-late-$l.so is not built"
done
export AUTOGRAPH_MAX_SEQ=32
AG_EXPECT_REPLAY=1 ag_compare_prog r-late -- launch
ag_expect "$AG_STATS" "replayed > 0" "graphs >= 2"
