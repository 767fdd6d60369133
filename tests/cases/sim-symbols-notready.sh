#!/usr/bin/env bash
# sim-symbols-notready.sh — two rules of the simulated runtime (tests/sim/README.md), each shown
# by a program that also runs with the library:
#   s-symbol    copies to and from __device__/__constant__ symbols follow stream order (the
#               storage is device memory to the driver): the output is the same under
#               SIM_SEED=1..5; before symbols were declared to the driver, a copy from a symbol
#               into pinned or device memory read the symbol at the call and the output varied.
#   s-notready  cudaErrorNotReady from cudaStreamQuery, cudaEventQuery and cudaEventElapsedTime
#               is returned but not recorded as the thread's last error; an earlier error stays
#               recorded through it.
. "$(dirname "$0")/lib.sh"

same_seeds() { # PROG SEEDS…
  local prog=$BUILD/tests/progs/$1 ref out
  shift
  ag_need "$(basename "$prog")"
  ref=$(SIM_SEED=$1 LD_PRELOAD="$AG_PRELOAD_BASE" timeout "$AG_PROG_TIMEOUT" "$prog") ||
    ag_fail "$prog failed under SIM_SEED=$1"
  for s in "${@:2}"; do
    out=$(SIM_SEED=$s LD_PRELOAD="$AG_PRELOAD_BASE" timeout "$AG_PROG_TIMEOUT" "$prog") ||
      ag_fail "$prog failed under SIM_SEED=$s"
    [ "$out" = "$ref" ] || ag_fail "$prog: output under SIM_SEED=$s differs from SIM_SEED=$1"
  done
  printf '%s\n' "$ref"
}

out=$(same_seeds s-symbol 1 2 3 4 5) || exit 1
printf '%s\n' "$out"
# The values themselves: counter[63] is 64 * (1 + 2 + ... + 16) * 2 after both bumps of 16 steps.
grep -q '^from-symbol-async: [0-9a-f]* last=17408$' <<<"$out" || ag_fail "s-symbol: wrong final counter"
ag_compare_prog s-symbol

out=$(same_seeds s-notready 1 2 3) || exit 1
printf '%s\n' "$out"
want1='notready-last-error: earlier=none stream-query=cudaErrorNotReady peek=cudaSuccess event-query=cudaErrorNotReady elapsed=cudaErrorNotReady get=cudaSuccess get-again=cudaSuccess'
want2='notready-last-error: earlier=cudaErrorInvalidMemcpyDirection stream-query=cudaErrorNotReady peek=cudaErrorInvalidMemcpyDirection event-query=cudaErrorNotReady elapsed=cudaErrorNotReady get=cudaErrorInvalidMemcpyDirection get-again=cudaSuccess'
grep -qxF "$want1" <<<"$out" || ag_fail "s-notready: expected: $want1"
grep -qxF "$want2" <<<"$out" || ag_fail "s-notready: expected: $want2"
ag_compare_prog s-notready

echo "sim-symbols-notready: symbol copies in stream order, NotReady not recorded as the last error"
