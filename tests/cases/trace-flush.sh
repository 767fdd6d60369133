#!/usr/bin/env bash
# trace-flush.sh — the causes the trace gives for the end of held runs, on tests/progs/e-flush.cu
# (one kind of ordering call per mode): each mode's call appears by its API name where it ends a
# held run (a synchronous copy); where the run ends with an event record ("event", "poll") the record
# is the last node of the graph, so every held run is a complete sequence and nothing is flushed
# but a run that diverged from a sequence seen once (a mismatch while learning);
# and in the mode where a launch on
# the legacy default stream interrupts work held on blocking streams, the cause is that
# stream's implicit synchronisation. Streams get tracks of their own (two non-blocking streams in "event"; two blocking
# streams and the legacy default stream in "legacy"). Each run's output is identical with and
# without the trace and its trace agrees with its statistics (trace-lib.sh).
# Chunks are off (AUTOGRAPH_CHUNK_US=0): where the chunks of a sequence end depends on how fast
# the host issued its launches (a slower host, under a sanitizer, gets more and shorter chunks),
# and a chunk that ends where a held run would end launches it before the call that would end it.
# The final copy of "copy" ends the run held since the last iteration's launches unless that hold
# reached its bound first (a host descheduled for longer than the bound): then the statistics say so.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace-lib.sh"
want_copy="'cudaMemcpy' in causes or st.get('hold_timeouts', 0) > 0"
want_event="causes - {'mismatch', 'chunk complete'} == {'sequence complete'} and all(e['args'].get('fallback') == 'mismatch' for e in flushes) and len(tracks) == 3"
want_legacy="'legacy default stream (implicit synchronisation)' in causes and len(tracks) == 4 and any('legacy' in t for t in tracks.values())"
# A host function after a complete sequence: the run is replayed as soon as it is complete, so
# the call ends nothing held.
want_hostfn="'sequence complete' in causes and 'cudaLaunchHostFunc' not in causes"
want_poll="causes - {'mismatch', 'chunk complete'} == {'sequence complete'} and all(e['args'].get('fallback') == 'mismatch' for e in flushes)"
export AUTOGRAPH_CHUNK_US=0
for mode in copy event legacy hostfn poll; do
  want=want_$mode
  AG_EXPECT_REPLAY=1 ag_compare_prog e-flush "$mode"
  rm -f "$AG_TMP/$mode.json"
  AUTOGRAPH_TRACE=$AG_TMP/$mode.json AG_EXPECT_REPLAY=1 ag_rerun e-flush "trace-$mode" "$mode"
  ag_trace_check "$AG_TMP/$mode.json" "$AG_STATS" "len(replays) > 0" "${!want}"
done
echo "trace-flush: ok"
