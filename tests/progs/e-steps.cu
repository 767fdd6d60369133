/* e-steps.cu — steps that end early, steps longer than a sequence, steps that diverge once.
 *
 * Usage: e-steps MODE [STEPS], MODE one of
 *   prefix   the first ten steps launch 25 kernels, then the stream is synchronised; from the
 *            tenth step on, the synchronisation comes after the first 15. By then the 25 are
 *            graphed, so the end of the 15 is always held as a proper prefix of a sequence, too
 *            short a one (under two thirds) to be replayed from its graph: a held run that ends
 *            there must become a sequence of its own (graphed), or the end of every later step
 *            passes through;
 *   long     every step is 600 launches, then a synchronisation: with AUTOGRAPH_MAX_SEQ=64 the
 *            step is cut into several sequences, replayed one after the other with no launch
 *            passed through between them;
 *   resync   every step is 200 launches; every fifth step one launch in the middle has another
 *            block. The sequence holding it diverges; the engine must find its place again within
 *            a few launches, so that the rest of the step is still replayed;
 *   period   every step is the same 9 launches with nothing between steps: no synchronisation,
 *            no other call, until the end. These 9 contain no cut point of the segmenter's
 *            window, so only their period can cut them: the engine must end a sequence where
 *            its first launch comes round again, else sequences run to AUTOGRAPH_MAX_SEQ (256),
 *            which 9 does not divide, and start at another phase of the body each time (nine
 *            phases, each learned separately and late);
 *   grids    every step is 40 launches of a kernel whose arguments never change but whose grid
 *            (1 to 4 blocks; every thread updates its element) changes from step to step: the
 *            grid is not part of the structure, so the step is replayed, and each replay must
 *            launch the nodes with this step's grids (stale grids update other elements);
 *   partial  every step is 12 launches and a memset of the buffer's first 64 elements, then a
 *            synchronisation; from the sixth step on, every third step stops after its first
 *            10 launches (no memset) and synchronises: a proper prefix of a graphed sequence,
 *            replayed from its graph with the last two kernel nodes and the memset node
 *            disabled, and the next whole step must run them again (either mistake changes the
 *            checksums);
 *   partial-event  the same with an event record in place of the memset: CUDA cannot disable
 *            an event record node, so the cut-short steps are submitted as launches.
 * The launches' blocks follow a fixed table (distinct shapes, so the structure is not periodic
 * within a step). Every kernel folds the step number into the buffer, so the printed checksums
 * depend on every launch. Output: a checksum every few steps and overall, then the launch counts.
 */
#include <cuda_runtime.h>

#include <stdlib.h>

#include "prog.h"
#include "sim_kernel.h"

enum { N = 4096, GRID = 4 };

__host__ __device__ static inline void step_body(unsigned long i, unsigned *x, unsigned k,
                                                 unsigned it, int n) {
  if (i < (unsigned long)n) x[i] = (x[i] ^ (k * 0x9e3779b9u + it)) * 0x2545f491u + k;
}

extern "C" __global__ void es_step(unsigned *x, unsigned k, unsigned it, int n) {
  step_body(PROG_TID(), x, k, it, n);
}

SIM_KERNEL(es_step) {
  SIM_FOR_EACH_THREAD(i)
  step_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, unsigned), SIM_ARG(2, unsigned), SIM_ARG(3, int));
}

/* Every thread of the grid updates its element: how many are updated is the grid's alone, the
 * arguments never change. */
__host__ __device__ static inline void grid_body(unsigned long i, unsigned *x, unsigned k) {
  x[i] = x[i] * 0x2545f491u + k;
}

extern "C" __global__ void es_grid(unsigned *x, unsigned k) { grid_body(PROG_TID(), x, k); }

SIM_KERNEL(es_grid) {
  SIM_FOR_EACH_THREAD(i)
  grid_body(i, SIM_ARG(0, unsigned *), SIM_ARG(1, unsigned));
}

/* Launch j of a step: its block, in warps (1 to 32: 32 to 1024 threads; GRID blocks cover the
 * first GRID * block elements). The block is part of a launch's structure, the grid is not. */
static unsigned warps_of(int j) { return 1 + (unsigned)((j * 7 + j / 13) % 32); }

static void launch(unsigned *x, int j, int it, unsigned warps, cudaStream_t s) {
  PROG_LAUNCH(es_step, GRID, 32 * warps, 0, s, x, (unsigned)j, (unsigned)it, (int)(GRID * 32 * warps));
}

int main(int argc, char **argv) {
  int steps = argc == 3 ? atoi(argv[2]) : 40;
  int mode = argc >= 2 ? (!strcmp(argv[1], "prefix") ? 0 : !strcmp(argv[1], "long") ? 1
                          : !strcmp(argv[1], "resync") ? 2
                          : !strcmp(argv[1], "period") ? 3
                          : !strcmp(argv[1], "grids") ? 4
                          : !strcmp(argv[1], "partial") ? 5
                          : !strcmp(argv[1], "partial-event") ? 6 : -1) : -1;
  if (mode < 0 || argc > 3 || steps <= 0) {
    fprintf(stderr, "usage: e-steps prefix|long|resync|period|grids|partial|partial-event [STEPS]\n");
    return 2;
  }
  unsigned *x;
  static unsigned h[N];
  uint64_t total = prog_hash(NULL, 0);
  cudaStream_t s;
  cudaEvent_t ev;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK_CUDA(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  CHECK_CUDA(cudaMalloc((void **)&x, N * sizeof *x));
  CHECK_CUDA(cudaMemsetAsync(x, 0, N * sizeof *x, s));
  for (int it = 0; it < steps; it++) {
    int cut_short = mode >= 5 && it >= 5 && it % 3 == 2;
    int n = mode == 0 ? (it < 10 ? 25 : 15) : mode == 1 ? 600 : mode == 2 ? 200 : mode == 3 ? 9
            : mode == 4 ? 40 : cut_short ? 10 : 12;
    for (int j = 0; j < n && mode == 4; j++)
      PROG_LAUNCH(es_grid, 1 + (unsigned)(j + it * 3) % 4, 32 * warps_of(j), 0, s, x, (unsigned)j);
    for (int j = 0; j < n && mode != 4; j++) {
      unsigned g = warps_of(j);
      if (mode == 2 && it % 5 == 4 && j == 100) g = g % 32 + 1; /* diverges once */
      launch(x, j, it, g, s);
    }
    if (mode == 5 && !cut_short) CHECK_CUDA(cudaMemsetAsync(x, 0, 64 * sizeof *x, s));
    if (mode == 6 && !cut_short) CHECK_CUDA(cudaEventRecord(ev, s));
    if (mode == 3 && it < steps - 1) continue; /* nothing between the steps */
    CHECK_CUDA(cudaStreamSynchronize(s));
    if (it % 5 == 4 || it == steps - 1) {
      CHECK_CUDA(cudaMemcpy(h, x, sizeof h, cudaMemcpyDeviceToHost));
      uint64_t v = prog_hash(h, sizeof h);
      total = prog_hash(&v, sizeof v, total);
      printf("step %d: %016llx\n", it, (unsigned long long)v);
    }
  }
  printf("total: %016llx\n", (unsigned long long)total);
  CHECK_CUDA(cudaFree(x));
  CHECK_CUDA(cudaEventDestroy(ev));
  CHECK_CUDA(cudaStreamDestroy(s));
  prog_print_launches();
  return 0;
}
