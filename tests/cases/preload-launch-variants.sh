#!/usr/bin/env bash
# preload-launch-variants.sh — every runtime launch form, and a driver launch through cudaGetDriverEntryPoint.
# Runs tests/progs/launch-variants.cu without and with the preload library (see lib.sh, ag_compare_prog).
. "$(dirname "$0")/lib.sh"
ag_compare_prog launch-variants -- launch copy memset sync
