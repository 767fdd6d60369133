/* fused.c — the library's fused kernels (shims/fused/elementwise.cu) for real PyTorch on the
 * simulator: with AUTOGRAPH_FUSE=exact the library replaces runs of PyTorch's elementwise
 * kernels by its own fused kernels, which the simulated driver runs as the host functions
 * sim_<name> the process exports. Test programs include their twins themselves; under
 * tools/torch-sim this library is the one that carries them (the same header). */
#include <stddef.h>

#include "../../progs/fused-twins.h"
