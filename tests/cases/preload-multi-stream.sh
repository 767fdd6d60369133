#!/usr/bin/env bash
# preload-multi-stream.sh — event, legacy-stream and host-function ordering across several streams.
# Runs tests/progs/multi-stream.cu without and with the preload library (see lib.sh, ag_compare_prog).
. "$(dirname "$0")/lib.sh"
ag_compare_prog multi-stream -- launch copy memset event host_func stream sync alloc free
