#!/usr/bin/env bash
# sim-devices.sh — several devices (tests/progs/s-devices.cu, tests/sim/README.md "Devices"):
# under SIM_DEVICES=2 the program sees two devices, each with its own primary context, memory
# (an allocation on one leaves the other's free memory), streams and events; pointer attributes
# name the device of the allocation; copies across devices work (cudaMemcpyPeer, cudaMemcpy with
# cudaMemcpyDefault, cuMemcpyPeer); and what CUDA refuses is refused: a launch on the other
# device's stream, an event recorded on another device's stream, the elapsed time between two
# devices' events, device ordinal 2, peer access to the device itself, peer access enabled twice
# or disabled when not enabled. The output is the same under SIM_SEED=1, 2, 3, then the same with
# the library, which learns one sequence per device and replays both (graphs >= 2). Without
# SIM_DEVICES the machine has one device and the program stops at its device count; a malformed
# SIM_DEVICES is reported and leaves one device.
. "$(dirname "$0")/lib.sh"
prog=s-devices
export SIM_DEVICES=2
ag_seed_stable $prog
ref=$AG_REF
want() { grep -qxF -- "$1" <<<"$ref" || ag_fail "$prog: expected the line: $1"; }
want 'devices: 2'
want 'device 0: sm_90 bus=0000:01:00.0'
want 'device 1: sm_90 bus=0000:02:00.0'
want 'buffer 0: type=2 device=0'
want 'buffer 1: type=2 device=1'
want 'memory: device 1 lost 64 MiB, device 0 lost 0 MiB'
want "launch on device 1's stream from device 0: cudaErrorInvalidResourceHandle"
want "record device 0's event on device 1's stream: cudaErrorInvalidResourceHandle"
want "elapsed time between the devices' events: cudaErrorInvalidResourceHandle"
want 'set device 2: cudaErrorInvalidDevice'
want 'can access peer: 0->1 1, 0->0 0'
want 'peer access to itself: cudaErrorInvalidDevice'
want 'disable peer access not enabled: cudaErrorPeerAccessNotEnabled'
want 'enable peer access 0->1: cudaSuccess'
want 'enable it again: cudaErrorPeerAccessAlreadyEnabled'
want 'disable it: cudaSuccess'
# The peer copy of device 1's buffer reads what device 1 computed.
d1=$(sed -n 's/^device 1 buffer: //p' <<<"$ref")
want "driver peer copy 1->0: $d1"
AG_EXPECT_REPLAY=1 ag_compare_prog $prog
ag_expect "$AG_STATS" 'graphs >= 2' 'sequences >= 2' 'replayed >= 0.9 * (launches - 4)'

out=$(env -u SIM_DEVICES LD_PRELOAD="$AG_PRELOAD_BASE" timeout "$AG_PROG_TIMEOUT" \
  "$BUILD/tests/progs/$prog" 2>&1) && ag_fail "$prog: ran with one device"
grep -qx 'devices: 1' <<<"$out" || ag_fail "$prog: without SIM_DEVICES: $out"
out=$(SIM_DEVICES=two LD_PRELOAD="$AG_PRELOAD_BASE" timeout "$AG_PROG_TIMEOUT" \
  "$BUILD/tests/progs/$prog" 2>&1) && ag_fail "$prog: ran with SIM_DEVICES=two"
grep -q 'SIM_DEVICES=two is not a count' <<<"$out" && grep -qx 'devices: 1' <<<"$out" ||
  ag_fail "$prog: a malformed SIM_DEVICES: $out"
echo "sim-devices: two devices with their own contexts, memory and streams; one without SIM_DEVICES"
