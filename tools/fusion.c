/* fusion.c — the fusion estimate (see fusion.h). */
#include "fusion.h"

#include <string.h>

#include "fusegen.h"

/* The most kernels the library puts in one chain or group (src/fusegen.h): a longer run is
 * several, one after the other. */
#define AG_FUSE_MAX AG_FG_MAX_OPS

/* A kernel's name up to its template arguments or parameter list, after Kineto's "void " and any
 * namespace: the function's own identifier, e.g. "vectorized_elementwise_kernel". */
static size_t ident(const char *name, const char **start) {
  const char *p = name, *end;
  if (!strncmp(p, "void ", 5)) p += 5;
  end = p + strcspn(p, "<(");
  for (const char *q = p; q + 1 < end; q++)
    if (q[0] == ':' && q[1] == ':') p = q + 2;
  *start = p;
  return (size_t)(end - p);
}

const char *ag__fuse_family(const char *name) {
  static const struct {
    const char *ident, *family;
  } frameworks[] = {
      {"vectorized_elementwise_kernel", "vectorized"},
      {"unrolled_elementwise_kernel", "unrolled"},
      {"elementwise_kernel", "elementwise"},
  };
  const char *p;
  size_t n = ident(name, &p);
  for (size_t i = 0; i < sizeof frameworks / sizeof frameworks[0]; i++)
    if (strlen(frameworks[i].ident) == n && !memcmp(p, frameworks[i].ident, n))
      return frameworks[i].family;
  return NULL;
}

/* Whether a kernel of framework `family` (ag__fuse_family's; NULL: none) is a fill:
 * FillFunctor run by one of the frameworks. */
static int fill_of(const char *family, const char *name) {
  return family != NULL && strstr(name, "FillFunctor<") != NULL;
}

int ag__fuse_elem_bytes(const char *name) {
  if (strstr(name, "c10::Half") || strstr(name, "c10::BFloat16") || strstr(name, "__half") ||
      strstr(name, "__nv_bfloat16"))
    return 2;
  if (strstr(name, "double")) return 8;
  return 4;
}

static int same_shape(const ag_fuse_kernel_t *a, const ag_fuse_kernel_t *b) {
  return !memcmp(a->grid, b->grid, sizeof a->grid) && !memcmp(a->block, b->block, sizeof a->block);
}

/* The group of fills k[end - len .. end) is over: counted when it holds two or more. */
static void end_fills(const ag_fuse_kernel_t *k, size_t end, size_t len, ag_fuse_estimate_t *out) {
  if (len < 2) return;
  out->fill_groups++;
  out->fills_grouped += len;
  out->fill_removed += len - 1;
  for (size_t j = end - len + 1; j < end; j++) out->fill_removed_ns += k[j].dur;
}

void ag__fuse_estimate(const ag_fuse_kernel_t *k, size_t n, ag_fuse_estimate_t *out) {
  memset(out, 0, sizeof *out);
  size_t run = 0;   /* kernels in the current run: k[i - run .. i) */
  size_t fills = 0; /* fills in the current group: k[i - fills .. i) */
  for (size_t i = 0; i <= n; i++) {
    const char *family = i < n ? ag__fuse_family(k[i].name) : NULL;
    int fill = fill_of(family, i < n ? k[i].name : NULL);
    int ew = family != NULL && !fill;
    int joins = ew && run && run < AG_FUSE_MAX && k[i].stream == k[i - 1].stream &&
                same_shape(&k[i], &k[i - 1]);
    int groups = fill && fills && fills < AG_FUSE_MAX && k[i].stream == k[i - 1].stream;
    if (!groups) end_fills(k, i, fills, out);
    fills = !fill ? 0 : groups ? fills + 1 : 1;
    if (!joins && run >= 2) { /* the run that ends here is a chain */
      out->chains++;
      out->chained += run;
      out->removed += run - 1;
      if (run > out->longest) out->longest = run;
      for (size_t j = i - run + 1; j < i; j++) {
        const ag_fuse_kernel_t *c = &k[j];
        double threads = (double)c->grid[0] * c->grid[1] * c->grid[2] * c->block[0] * c->block[1] *
                         c->block[2];
        out->removed_ns += c->dur;
        out->bytes_not_read += threads * ag__fuse_elem_bytes(c->name);
      }
    }
    if (i == n) break;
    out->kernels++;
    out->kernel_ns += k[i].dur;
    if (ew || fill) {
      out->elementwise++;
      out->elementwise_ns += k[i].dur;
    }
    run = !ew ? 0 : joins ? run + 1 : 1;
  }
}
