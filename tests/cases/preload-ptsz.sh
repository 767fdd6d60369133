#!/usr/bin/env bash
# preload-ptsz.sh — the per-thread default stream (_ptsz/_ptds) entry points.
# Runs tests/progs/ptsz.cu without and with the preload library (see lib.sh, ag_compare_prog).
. "$(dirname "$0")/lib.sh"
ag_compare_prog ptsz -- launch copy memset event host_func sync
