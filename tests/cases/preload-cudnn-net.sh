#!/usr/bin/env bash
# preload-cudnn-net.sh — a legacy-cuDNN convolution network; cuDNN launches counted by path.
# Runs tests/progs/cudnn-net.cu without and with the preload library (see lib.sh, ag_compare_prog).
. "$(dirname "$0")/lib.sh"
ag_compare_prog cudnn-net -- launch copy cudnn sync
