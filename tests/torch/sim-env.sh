# sim-env.sh — sourced by the tests/cases/torch-sim-* cases (after lib.sh): skips (exit 77,
# saying why) unless real PyTorch can run on the simulator here, and sets TORCH_SIM (the
# launcher) and PY (its python). Each run of PyTorch gets AG_PROG_TIMEOUT=240 s unless set: a
# run takes 10-30 s on a loaded two-core machine, most of it Python imports.
#
# Needs the torch environment of `tools/setup --torch` (BUILD/torch-venv) and the simulator. Not
# run under the sanitizer builds (AG_SAN_PRELOAD set): the PyPI wheel and CPython are not
# instrumented, so the sanitizers would check nothing there that the rest of the suite does not
# already check in the library and the simulator, while their runtimes in front of a 1 GB
# uninstrumented process multiply a run that already takes tens of seconds.
[ -z "${AG_SAN_PRELOAD:-}" ] || ag_skip "skipped under sanitizers: real PyTorch is not instrumented (see tests/torch/sim-env.sh)"
[ -f "$AG_LIB" ] || ag_skip "skipped: $AG_LIB is not built"
[ -x "$BUILD/torch-venv/bin/python" ] || ag_skip "skipped: no torch environment in $BUILD/torch-venv (run tools/setup --torch)"
[ -f "$AG_SIM/libtorchtwins.so" ] || ag_skip "skipped: the simulator ($AG_SIM) is not built"
TORCH_SIM=$AG_ROOT/tools/torch-sim
PY=python
export PYTHONDONTWRITEBYTECODE=1
# The wheel's libraries must come from the preload, not from the simulator folder on the path.
unset LD_LIBRARY_PATH
AG_PROG_TIMEOUT=${AG_PROG_TIMEOUT_TORCH:-240}
