/* chain.c — chains of PyTorch elementwise kernels (see chain.h). */
#include "chain.h"

#include <string.h>

#define AG_CHAIN_MAX_TENSORS 8

/* The number of tensors of a contiguous framework kernel with the layout of chain.h, else 0. */
static int contiguous_tensors(const ag_kinfo_t *k) {
  if (!k || !k->name || k->nparams < 3) return 0;
  /* The frameworks' identifiers as the Itanium mangling spells them, in at::native. */
  if (strncmp(k->name, "_ZN2at6native", 13) ||
      (strncmp(k->name + 13, "29vectorized_elementwise_kernelI", 32) &&
       strncmp(k->name + 13, "27unrolled_elementwise_kernelI", 30)))
    return 0;
  const ag_kparam_t *p = k->params;
  if (p[0].offset != 0 || p[0].size != 4 || p[2].size % 8 || !p[2].size || p[2].size > 8 * AG_CHAIN_MAX_TENSORS ||
      p[2].offset % 8 || p[2].offset + p[2].size > k->param_bytes)
    return 0;
  return (int)(p[2].size / 8);
}

int ag__chain_elementwise(const ag_kinfo_t *k) { return contiguous_tensors(k) >= 2; }

int ag__chain_single(const ag_kinfo_t *k) { return contiguous_tensors(k) == 1; }

int ag__chain_strided(const ag_kinfo_t *k) {
  if (!k || !k->name || k->nparams != 2) return 0;
  return !strncmp(k->name, "_ZN2at6native18elementwise_kernelI", 34) && k->params[0].offset == 0 &&
         k->params[0].size == 4;
}

int ag__chain_member(const ag_chain_launch_t *l) {
  if (!l->args || !l->k) return 0;
  if (!l->snt) return ag__chain_elementwise(l->k);
  return ag__chain_strided(l->k) && l->snt >= 2 && l->snt <= AG_CHAIN_MAX_TENSORS && l->sdata % 8 == 0 &&
         l->sdata >= l->k->params[1].offset && (uint32_t)l->sdata + 8u * l->snt <= l->k->param_bytes;
}

/* The element count and tensors of a member; returns the number of tensors. */
static int view(const ag_chain_launch_t *l, int32_t *n, uint64_t *data) {
  const ag_kparam_t *p = l->k->params;
  int t = l->snt ? l->snt : (int)(p[2].size / 8);
  memcpy(n, l->args, 4);
  memcpy(data, l->args + (l->snt ? l->sdata : p[2].offset), (size_t)t * 8);
  return t;
}

int ag__chain_links(const ag_chain_launch_t *a, const ag_chain_launch_t *b) {
  int32_t na = 0, nb = 0;
  uint64_t da[AG_CHAIN_MAX_TENSORS], db[AG_CHAIN_MAX_TENSORS];
  if (!ag__chain_member(a) || !ag__chain_member(b)) return 0;
  view(a, &na, da);
  int t = view(b, &nb, db);
  if (na != nb || na <= 0 || !da[0]) return 0;
  for (int j = 1; j < t; j++)
    if (db[j] == da[0]) return 1;
  return 0;
}

int ag__chain_scan(const ag_chain_launch_t *l, int n, uint8_t *role) {
  int chains = 0, run = 0; /* run: launches in the current run of links, ending at i - 1 */
  for (int i = 0; i < n; i++) {
    int ew = ag__chain_member(&l[i]);
    int links = ew && run && ag__chain_links(&l[i - 1], &l[i]);
    role[i] = ew ? AG_CHAIN_ELEMENTWISE : AG_CHAIN_NONE;
    if (links) {
      if (run == 1) chains++, role[i - 1] = AG_CHAIN_LINKED;
      role[i] = AG_CHAIN_LINKED;
      run++;
    } else {
      run = ew ? 1 : 0;
    }
  }
  return chains;
}
