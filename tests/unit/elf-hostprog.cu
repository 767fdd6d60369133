/* elf-hostprog.cu — an ordinary CUDA executable whose .nv_fatbin section the parser test
 * (tests/unit/elf-image.c) walks: it carries the kernels of tests/kernels/elf-kernels.cu, built
 * for nvcc's default target. Run on its own it only has to start and exit 0, which also checks
 * that the runtime registers its fatbin at load. */
#include "../kernels/elf-kernels.cu"

int main(void) { return 0; }
