#!/usr/bin/env bash
# engine-timeline.sh — does the library leave the GPU idler than a run without it? On the
# simulator's modelled clock (tests/sim/README.md, "The modelled clock"), tests/progs/e-timeline
# runs steps of 40 launches with host work before each (declared to the clock, and spun in real
# time so that the library sees the pace the clock charges), each step ending in a copy of a
# small result and a stream synchronisation (`loss.item()`).
#
# Without the library each kernel starts as soon as it is launched. The library holds launches
# and submits them in chunks, as graphs: the steady-state steps (after SKIP steps of learning)
# must still
#   (a) leave the device no idler than without the library (per-step idle_ns), and
#   (b) start the step's first GPU work no later than without the library plus the host time
#       of the library's first chunk (a quarter of AUTOGRAPH_CHUNK_US) and one graph launch.
# A library that holds a whole learned step and submits it as one graph at its end fails both:
# the GPU then waits for the whole step's host time before it starts. The same run with
# AUTOGRAPH_CHUNK_US=0 (whole sequences) must fail them in every steady-state step until the
# library's guard demotes the sequence for it (on a loaded machine it may): the test tells the
# two policies apart. Two programs:
#   slow  20 us of host work before each launch, kernels of 18 us: the host is the slower side,
#         as in most eager training steps. Whatever chunks the library's real-time pace gives
#         (one launch or several), (a) and (b) hold;
#   fast  4 us of host work, kernels of 5 us, a launch 2 us: host and GPU nearly even, where the
#         size of the chunks matters most (chunks that grew to the whole step would starve the
#         GPU). The library's pace is real time, so under a sanitizer, which slows the host
#         several times, the chunks are not those the clock assumes: the checks are skipped there.
# Also checked, whatever the engine does: identical output and statistics as in every preload
# case, the modelled figures of the run without the library are deterministic (two runs under
# other SIM_SEEDs give byte-identical reports) and exactly what the settings imply, and the
# library runs the same GPU work (busy time) in every step.
. "$(dirname "$0")/lib.sh"
ag_need e-timeline
d=$AG_TMP/e-timeline
prog=$BUILD/tests/progs/e-timeline
check=$AG_ROOT/tests/cases/timeline-check.py
SKIP=3            # steps the library may spend learning
CHUNK_US=30       # AUTOGRAPH_CHUNK_US (the default)
export AUTOGRAPH_CHUNK_US=$CHUNK_US
unset SIM_LAUNCH_LATENCY_NS SIM_MEMOP_NS SIM_GRAPH_NODE_GAP_NS SIM_GRAPH_NODE_NS SIM_NODE_UPDATE_NS

# timeline NAME STEPS PER_STEP HOST_NS KERNEL_NS LAUNCH_NS GRAPH_LAUNCH_NS — one program.
timeline() {
  local name=$1 steps=$2 per=$3 host=$4 kernel=$5 launch=$6 graph=$7
  local args=("$steps" "$per" "$host") allowance=$((CHUNK_US * 1000 / 4 + graph))
  export SIM_KERNEL_NS="et_*:$kernel" SIM_LAUNCH_NS=$launch SIM_GRAPH_LAUNCH_NS=$graph
  AG_EXPECT_REPLAY=1 ag_compare_prog e-timeline "${args[@]}" -- launch sync copy
  for run in a:1 b:2; do
    ag_run "$d/clock-plain-${run%%:*}" env LD_PRELOAD="$AG_PRELOAD_BASE" SIM_SEED="${run#*:}" \
      SIM_CLOCK_REPORT="$d/$name-plain-${run%%:*}.json" "$prog" "${args[@]}"
    ag_same "$d/plain1" "$d/clock-plain-${run%%:*}"
  done
  cmp -s "$d/$name-plain-a.json" "$d/$name-plain-b.json" || {
    diff "$d/$name-plain-a.json" "$d/$name-plain-b.json" | head -n 20 >&2
    ag_fail "$name: the modelled clock's report differs between two runs without the library"
  }
  echo "e-timeline $name: the modelled clock is deterministic without the library"
  SIM_CLOCK_REPORT=$d/clock-$name-lib.json AG_EXPECT_REPLAY=1 ag_rerun e-timeline "$name-lib" "${args[@]}" \
    -- launch sync copy
  ag_expect "$AG_STATS" "replayed >= 0.9 * launches"
  if [ "$name" = fast ] && [ -n "${AG_SAN_PRELOAD:-}" ]; then
    echo "e-timeline $name: the comparison with the run without the library is skipped under a sanitizer"
    return
  fi
  python3 "$check" "$d/$name-plain-a.json" "$d/clock-$name-lib.json" "$steps" "$per" "$host" "$kernel" \
    "$launch" "$SKIP" "$allowance" || ag_fail "$name: the library delays the GPU's work (see above)"
  AUTOGRAPH_CHUNK_US=0 SIM_CLOCK_REPORT=$d/clock-$name-whole.json AG_EXPECT_REPLAY=1 \
    ag_rerun e-timeline "$name-whole" "${args[@]}" -- launch sync copy
  python3 "$check" "$d/$name-plain-a.json" "$d/clock-$name-whole.json" "$steps" "$per" "$host" "$kernel" \
    "$launch" "$SKIP" "$allowance" --expect-worse ||
    ag_fail "$name: whole sequences should have delayed the GPU's work (see above)"
}

timeline slow 12 40 20000 18000 2500 2000
timeline fast 30 40 4000 5000 2000 2500

echo "engine-timeline: ok"
