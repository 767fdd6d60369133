/* elf-tiny.cu — the smallest useful device image, for the parser's truncation and corruption
 * tests (tests/unit/elf-fuzz.c), which parse every prefix of its cubin and fatbins. */

extern "C" __global__ void tiny_none(void) {}

extern "C" __global__ void tiny_add(int *x, char c, double d) {
  if (x) *x += c + (int)d;
}
