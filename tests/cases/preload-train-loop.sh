#!/usr/bin/env bash
# preload-train-loop.sh — a training loop (two threads on one stream, changing scalar arguments).
# Runs tests/progs/train-loop.cu without and with the preload library (see lib.sh, ag_compare_prog).
. "$(dirname "$0")/lib.sh"
ag_compare_prog train-loop -- launch copy memset alloc free sync
