#!/usr/bin/env bash
# fuse-kernel.sh — kernel-pattern substitution (AUTOGRAPH_FUSE=exact) on tests/progs/k-fuse.cu,
# chains of PyTorch-named elementwise kernels: add→relu (torch_add_relu) and mul→add
# (torch_mul_add) in a sequence of 6 launches repeated for 24 steps.
#
# Every run must print exactly what the program prints without the library. Counts expected
# from the program's structure: with AUTOGRAPH_REPEATS=2 the sequence is graphed at its third
# occurrence and replayed for the remaining 22 steps; each replay runs each matching pattern's
# fused node once, so a pattern that matches counts 22 and one that must not match counts 0.
# AUTOGRAPH_MIN_SEQ=6 keeps content-defined cuts from splitting the 6-launch sequence.
. "$(dirname "$0")/lib.sh"
# One graph launch per replay (AUTOGRAPH_CHUNK_US=0): where chunks end follows the host's real
# pace, which varies from run to run.
export AUTOGRAPH_REPEATS=2 AUTOGRAPH_MIN_SEQ=6 AUTOGRAPH_CHUNK_US=0
REPLAYS=22

# Off by default: graphs, but nothing fused.
AG_EXPECT_REPLAY=1 ag_compare_prog k-fuse train
ag_expect "$AG_STATS" "fused == 0" "$(ag_graph_launches $REPLAYS)" "$(ag_replayed 6 $REPLAYS)"
# The chains of elementwise kernels (src/chain.h) are counted whether or not anything is fused:
# the four operations are one chain (each reads what the one before wrote, over the same N).
ag_expect "$AG_STATS" "$(ag_per_replay "st['elementwise'] / 4" $REPLAYS)" "$(ag_per_replay "st['chained'] / 4" $REPLAYS)"
AUTOGRAPH_FUSE=off ag_rerun k-fuse off train
ag_expect "$AG_STATS" "fused == 0" "$(ag_graph_launches $REPLAYS)"

# Both patterns, every replay.
AUTOGRAPH_FUSE=exact ag_rerun k-fuse exact train
ag_expect "$AG_STATS" "$(ag_graph_launches $REPLAYS)" "$(ag_replayed 6 $REPLAYS)" \
  "$(ag_per_replay "fp['torch_add_relu']" $REPLAYS)" "$(ag_per_replay "fp['torch_mul_add']" $REPLAYS)" \
  "$(ag_per_replay "fused / 2" $REPLAYS)" "demotions == 0"
# Chunks as small as they go (a 1 us budget: a chunk ends at nearly every launch) never split
# a pair a pattern replaces: every replay still runs both fused nodes.
AUTOGRAPH_FUSE=exact AUTOGRAPH_CHUNK_US=1 ag_rerun k-fuse exact-chunks train
ag_expect "$AG_STATS" "$(ag_replayed 6 $REPLAYS)" "$(ag_per_replay "fp['torch_add_relu']" $REPLAYS)" \
  "$(ag_per_replay "fp['torch_mul_add']" $REPLAYS)" "graph_launches > $REPLAYS" "demotions == 0"
# `all` includes `exact`.
AUTOGRAPH_FUSE=all ag_rerun k-fuse all train
ag_expect "$AG_STATS" "$(ag_per_replay "fused / 2" $REPLAYS)"

# The fused module cannot be loaded: nothing is substituted, the graphs still replay.
AUTOGRAPH_FUSE=exact SIM_FAIL=cuModuleLoadData:1+ ag_rerun k-fuse noload train
ag_expect "$AG_STATS" "fused == 0" "$(ag_graph_launches $REPLAYS)"
# One fused kernel missing from it: only that pattern is off.
AUTOGRAPH_FUSE=exact SIM_FAIL=cuModuleGetFunction:1 ag_rerun k-fuse nofunc train
ag_expect "$AG_STATS" "fp['torch_add_relu'] == 0" "$(ag_per_replay "fp['torch_mul_add']" $REPLAYS)"

# Buffers alternating between two sets: the fused nodes are updated at every replay (their
# parameters rebuilt through the same rule) and still counted.
AG_EXPECT_REPLAY=1 ag_compare_prog k-fuse alt
ag_expect "$AG_STATS" "fused == 0"
base_updates=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["updates"])' "$AG_STATS")
AUTOGRAPH_FUSE=exact ag_rerun k-fuse alt-exact alt
ag_expect "$AG_STATS" "$(ag_graph_launches $REPLAYS)" "$(ag_per_replay "fused / 2" $REPLAYS)" \
  "updates >= 3 * graph_launches - 3" "updates < $base_updates"

# Each broken variant leaves its pattern unfused (the other one still matches).
for v in relu-other:torch_add_relu:torch_mul_add count:torch_add_relu:torch_mul_add \
         sub:torch_add_relu:torch_mul_add alpha:torch_add_relu:torch_mul_add \
         div:torch_mul_add:torch_add_relu; do
  IFS=: read -r mode broken other <<<"$v"
  AG_EXPECT_REPLAY=1 ag_compare_prog k-fuse "$mode"
  AUTOGRAPH_FUSE=exact ag_rerun k-fuse "$mode-exact" "$mode"
  ag_expect "$AG_STATS" "$(ag_graph_launches $REPLAYS)" "fp['$broken'] == 0" \
    "$(ag_per_replay "fp['$other']" $REPLAYS)"
  # Where the relu reads another buffer, the add stands alone (a chain of 3 is left); where it
  # covers one element less, the add and the relu both do (mul and add: a chain of 2).
  case $mode in
  relu-other) ag_expect "$AG_STATS" "$(ag_per_replay "st['elementwise'] / 4" $REPLAYS)" "$(ag_per_replay "st['chained'] / 3" $REPLAYS)" ;;
  count) ag_expect "$AG_STATS" "$(ag_per_replay "st['elementwise'] / 4" $REPLAYS)" "$(ag_per_replay "st['chained'] / 2" $REPLAYS)" ;;
  esac
done

# The aliasing changes at step 12: the replays of steps 2..11 are fused, then the graph is
# rebuilt without substitution and the sequence keeps replaying.
AG_EXPECT_REPLAY=1 ag_compare_prog k-fuse alias
AUTOGRAPH_FUSE=exact ag_rerun k-fuse alias-exact alias
ag_expect "$AG_STATS" "$(ag_graph_launches $REPLAYS)" "$(ag_per_replay "fp['torch_add_relu']" 10)" \
  "$(ag_per_replay "fp['torch_mul_add']" 10)" "demotions == 0"

echo "fuse-kernel: identical output in every mode, fused counts as expected"
