/* elf-kernels.cu — kernels of known signatures for the fatbin/cubin parser tests.
 *
 * The parameter types are plain C so that tests/unit/elf-image.c can include this file with
 * ELF_KERNELS_TYPES_ONLY defined and compute the expected layouts (offsetof, sizeof, alignof)
 * from the very types the kernels take. The kernels cover: no parameters; mixed scalar sizes
 * with alignment padding; structs by value; a parameter over 16 KiB (which the 14-bit size
 * field of KPARAM_INFO cannot hold); extern "C" and C++-mangled names; template instances.
 */
#ifndef ELF_KERNELS_CU
#define ELF_KERNELS_CU

#include <stdint.h>

/* 12 bytes, 4-byte aligned, with internal padding. */
struct elf_small {
  char tag;
  int count;
  short s;
};

/* 24 bytes, 8-byte aligned. */
struct elf_mid {
  double d;
  char c;
  float *p;
};

/* Odd size, byte aligned. */
struct elf_odd {
  char bytes[3];
};

/* 20 000 bytes: its size does not fit in the 14-bit size field of KPARAM_INFO. */
struct elf_big {
  int v[5000];
};

/* Near the CUDA 13 limit of 32 764 bytes of parameters, with a small parameter after it. */
struct elf_huge {
  char b[32752];
};

#ifndef ELF_KERNELS_TYPES_ONLY

extern "C" __global__ void elf_none(void) {}

extern "C" __global__ void elf_mixed(char a, double b, short c, int *p, char d, int e, double f,
                                     unsigned char g) {
  if (p) *p = a + (int)b + c + d + e + (int)f + g;
}

extern "C" __global__ void elf_structs(struct elf_small s, char c, struct elf_mid m,
                                       struct elf_odd o, int n) {
  if (m.p) *m.p = s.tag + s.count + s.s + c + (float)m.d + m.c + o.bytes[2] + n;
}

extern "C" __global__ void elf_big(struct elf_big b, int *out) {
  if (out) *out = b.v[threadIdx.x] + b.v[4999];
}

extern "C" __global__ void elf_big_mid(char a, struct elf_big b, short c, double *out) {
  if (out) *out = a + b.v[threadIdx.x] + c;
}

extern "C" __global__ void elf_huge(struct elf_huge h, int tail) {
  if (tail) h.b[threadIdx.x] = (char)tail;
  if (h.b[threadIdx.x + 1] == 7) asm volatile("trap;");
}

/* C++ linkage: the symbol is the mangled name. */
__global__ void elf_cpp(float *x, int n, float a) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}

template <typename T, int N>
__global__ void elf_tmpl(T *x, T v, char flag) {
  if (flag) x[threadIdx.x % N] = v;
}

template __global__ void elf_tmpl<float, 4>(float *, float, char);
template __global__ void elf_tmpl<double, 8>(double *, double, char);
template __global__ void elf_tmpl<char, 2>(char *, char, char);

#endif /* ELF_KERNELS_TYPES_ONLY */
#endif /* ELF_KERNELS_CU */
