#!/usr/bin/env bash
# rel-hostile.sh — hostile device code and parameters from a program (tests/progs/r-hostile.cu):
# truncated, corrupted and oversized fatbins and malformed wrappers registered through
# __cudaRegisterFatBinary with a kernel bound to each and launched, cubins with absurd section
# sizes given to cuModuleLoadData, 4 KiB and 32 KiB parameter blocks launched repeatedly, and
# thousands of distinct kernel handles. With the library: no crash, every status and checksum
# identical (the kernels of unreadable images pass through), every launch counted, and, at
# AUTOGRAPH_LOG=debug, a log line for the images it could not read. Its images are the nvcc
# output of tests/kernels/elf-tiny.cu.
. "$(dirname "$0")/lib.sh"
k=$BUILD/tests/kernels
[ -f "$k/elf-tiny.fatbin" ] && [ -f "$k/elf-tiny.cubin" ] || ag_skip "skipped: $k/elf-tiny.{fatbin,cubin} are not built"
ag_compare_prog r-hostile "$k/elf-tiny.fatbin" "$k/elf-tiny.cubin" -- launch
ag_expect "$AG_STATS" "replayed > 0"
AUTOGRAPH_LOG=debug ag_rerun r-hostile debug "$k/elf-tiny.fatbin" "$k/elf-tiny.cubin" -- launch
lines=$(grep -ciE 'overrun|truncat|corrupt|no layouts|not a plausible|implausible' "$AG_TMP/r-hostile/debug.err")
[ "$lines" -gt 0 ] || ag_fail "no log line names an unreadable image (AUTOGRAPH_LOG=debug)"
echo "r-hostile: $lines log lines about unreadable images at AUTOGRAPH_LOG=debug"
grep -m 3 -iE 'overrun|truncat|corrupt|no layouts|not a plausible|implausible' "$AG_TMP/r-hostile/debug.err"
