#!/usr/bin/env bash
# preload-two-threads.sh — two threads interleaving launches on one shared stream.
# Runs tests/progs/two-threads.cu without and with the preload library (see lib.sh, ag_compare_prog).
. "$(dirname "$0")/lib.sh"
ag_compare_prog two-threads -- launch copy memset sync
