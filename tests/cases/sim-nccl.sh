#!/usr/bin/env bash
# sim-nccl.sh — the simulated libnccl.so.2 between two ranks (tests/progs/s-nccl.cu: two
# processes, each on its own device under SIM_DEVICES=2, tests/sim/README.md "NCCL"): all-reduce
# (sum, avg, max, min, prod over float, int32, uint8, half, bfloat16; one in place and, with
# SIM_NCCL_BUFFER_BYTES=4096, in chunks), broadcast and reduce with root 1, all-gather,
# reduce-scatter, a group of sends and receives larger than a mailbox: every result equal to the
# host's, on both ranks. Rank 1 then launches an all-reduce its peer never joins: with
# SIM_NCCL_TIMEOUT_S=1 its kernel reports the wait on stderr and gives up, and the communicator
# answers ncclRemoteError. The output is the same under SIM_SEED=1, 2, 3, then the same with the
# library (AUTOGRAPH_STATS=stats-%p.json: one file per rank), which holds none of them: rank 0
# passes every NCCL kernel through at its launch (fallbacks.denied), and rank 1, a forked child,
# passes everything through (the library does not hold in a forked child).
. "$(dirname "$0")/lib.sh"
prog=s-nccl
[ -f "$AG_SIM/libnccl.so.2" ] || ag_skip "skipped: the simulated NCCL is not built"
export SIM_DEVICES=2 SIM_NCCL_TIMEOUT_S=1 SIM_NCCL_BUFFER_BYTES=4096 SIM_NCCL_LOG=1
ag_seed_stable $prog
ref=$AG_REF
[ "$(grep -c ': ok$' <<<"$ref")" = 13 ] || ag_fail "$prog: expected 13 operations ok"
grep -qx 'rank 1: same results, and ncclRemoteError after waiting alone' <<<"$ref" ||
  ag_fail "$prog: rank 1 did not agree"
d=$AG_TMP/nccl
mkdir -p "$d"
ag_run "$d/lib" env LD_PRELOAD="$(ag_preload "$AG_LIB")" AUTOGRAPH_STATS="$d/stats-%p.json" \
  "$BUILD/tests/progs/$prog"
[ "$(cat "$d/lib.rc")" = 0 ] || { cat "$d/lib.err" >&2; ag_fail "$prog failed with the library"; }
[ "$(cat "$d/lib.out")" = "$ref" ] || { diff <(echo "$ref") "$d/lib.out" >&2; ag_fail "$prog: the output differs with the library"; }
cat "$d/lib.err"
grep -q 'sim nccl: rank 1 of 2 waited 1 s for its peers in AllReduce #12 ' "$d/lib.err" ||
  ag_fail "$prog: rank 1's lone all-reduce did not report its wait"
n=0 denied=0
for f in "$d"/stats-*.json; do
  ag_expect "$f" "launches >= 13" "passthrough == launches"
  n=$((n + 1))
  python3 -c 'import json, sys; st = json.load(open(sys.argv[1])); sys.exit(st.get("fallbacks", {}).get("denied") != st["launches"])' "$f" &&
    denied=$((denied + 1))
done
[ $n = 2 ] || ag_fail "expected the statistics of two ranks, found $n"
[ $denied -ge 1 ] || ag_fail "rank 0 did not pass its NCCL kernels through as denied"
echo "sim-nccl: every operation right on both ranks, the lone one fails in 1 s; every NCCL kernel passed through"
