#!/usr/bin/env bash
# preload-train-loop.sh — a training loop (two threads on one stream, changing scalar arguments).
# Runs tests/progs/train-loop.cu without and with the preload library (see lib.sh, ag_compare_prog).
# Each step's 20 launches repeat between the loss copies, with the learning rate and the dropout
# seed and offset changing every step: at least 90% of the launches must be served by graph
# replays, with node updates for the changing arguments.
. "$(dirname "$0")/lib.sh"
AG_EXPECT_REPLAY=1 ag_compare_prog train-loop -- launch copy memset alloc free sync
ag_expect "$AG_STATS" "replayed >= 0.9 * launches" "updates > 0" "graph_launches > 0"
