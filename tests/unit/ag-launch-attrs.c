/* ag-launch-attrs — which launches with attributes, cooperative entry points or `extra` buffers
 * may be held (src/launch-attrs.c), what enters their structural hash, and the held copy. */
#include <string.h>

#include "check.h"
#include "launch-attrs.h"
#include "real.h"
#include "stats.h"

static ag_kparam_t params[3] = {{.offset = 0, .size = 8}, {.offset = 8, .size = 4},
                                {.offset = 12, .size = 4}};
static ag_kinfo_t k = {.nparams = 3, .param_bytes = 16, .params = params};

static CUresult fake_launch_ex(const CUlaunchConfig *c, CUfunction f, void **p, void **e) {
  (void)c, (void)f, (void)p, (void)e;
  return CUDA_SUCCESS;
}
static CUresult fake_set_attr(CUgraphNode n, CUkernelNodeAttrID id, const CUkernelNodeAttrValue *v) {
  (void)n, (void)id, (void)v;
  return CUDA_SUCCESS;
}

static ag_launch_t with(CUlaunchAttribute *a, unsigned n, void **args) {
  ag_launch_t l;
  memset(&l, 0, sizeof l);
  l.args = args;
  l.attrs = a;
  l.nattrs = n;
  return l;
}

static CUlaunchAttribute attr(int id) {
  CUlaunchAttribute a;
  memset(&a, 0xA5, sizeof a); /* garbage a program may leave in the value union */
  a.id = (CUlaunchAttributeID)id;
  return a;
}

int main(void) {
  void *x = NULL;
  int n = 64;
  unsigned v = 7;
  void *args[] = {&x, &n, &v};
  ag__real.cuLaunchKernelEx = fake_launch_ex;
  ag__real.cuGraphKernelNodeSetAttribute = fake_set_attr;

  /* Held: the node-expressible ids; dropped: IGNORE, PSS. */
  int held[] = {CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, CU_LAUNCH_ATTRIBUTE_COOPERATIVE,
                CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
                CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE,
                CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, CU_LAUNCH_ATTRIBUTE_PRIORITY,
                CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP, CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN,
                CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION, CU_LAUNCH_ATTRIBUTE_IGNORE, 16};
  for (size_t i = 0; i < sizeof held / sizeof *held; i++) {
    CUlaunchAttribute a = attr(held[i]);
    ag_launch_t l = with(&a, 1, args);
    CHECK_INT(ag__lattr_reason(&l, &k), ==, 0);
  }
  /* Fallbacks: events, stream-only, launch-only, graph-only, unknown. */
  int fb[] = {CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT, CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT,
              CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY,
              CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
              CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE, 15, 17, 1000};
  for (size_t i = 0; i < sizeof fb / sizeof *fb; i++) {
    CUlaunchAttribute a[2] = {attr(CU_LAUNCH_ATTRIBUTE_PRIORITY), attr(fb[i])};
    ag_launch_t l = with(a, 2, args);
    CHECK_INT(ag__lattr_reason(&l, &k), ==, AG_FB_ATTRIBUTES + 1);
  }

  /* The hash: only the bytes an id means count; values and ids do. */
  CUlaunchAttribute p1 = attr(CU_LAUNCH_ATTRIBUTE_PRIORITY), p2 = p1, p3 = p1;
  p1.value.priority = -1;
  memset(&p2.value, 0x11, sizeof p2.value);
  p2.value.priority = -1;
  p3.value.priority = -2;
  ag_launch_t l1 = with(&p1, 1, args), l2 = with(&p2, 1, args), l3 = with(&p3, 1, args);
  CHECK(ag__lattr_hash(42, &l1) == ag__lattr_hash(42, &l2));
  CHECK(ag__lattr_hash(42, &l1) != ag__lattr_hash(42, &l3));
  CHECK(ag__lattr_hash(42, &l1) != 42);
  /* Dropped entries change nothing; a cooperative entry point is a cooperative attribute. */
  CUlaunchAttribute dropped[2] = {attr(CU_LAUNCH_ATTRIBUTE_IGNORE),
                                  attr(CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)};
  ag_launch_t ld = with(dropped, 2, args);
  CHECK(ag__lattr_hash(42, &ld) == 42);
  CHECK_INT(ag__lattr_bytes(&ld), ==, 0);
  CUlaunchAttribute co = attr(CU_LAUNCH_ATTRIBUTE_COOPERATIVE);
  co.value.cooperative = 1;
  ag_launch_t lc = with(&co, 1, args), le = with(NULL, 0, args);
  le.coop = 1;
  CHECK(ag__lattr_hash(42, &lc) != 42 && ag__lattr_hash(42, &le) != 42);

  /* The held copy: normalised records after the arguments. */
  uint8_t arena[1024];
  ag_held_t h;
  memset(arena, 0, sizeof arena);
  CUlaunchAttribute mix[3] = {p2, dropped[1], co};
  ag_launch_t lm = with(mix, 3, args);
  CHECK_INT(ag__lattr_bytes(&lm), ==, 2 * sizeof(CUlaunchAttribute));
  ag__lattr_hold(&h, &lm, &k, arena, arena, 16);
  CHECK_INT(h.nattrs, ==, 2);
  CHECK_INT(h.aoff, ==, 16);
  const CUlaunchAttribute *r = ag__lattr_of(&h, arena);
  CHECK_INT(r[0].id, ==, CU_LAUNCH_ATTRIBUTE_PRIORITY);
  CHECK_INT(r[0].value.priority, ==, -1);
  CHECK_INT(r[0].value.pad[8], ==, 0); /* the garbage is gone */
  CHECK_INT(r[1].id, ==, CU_LAUNCH_ATTRIBUTE_COOPERATIVE);
  /* Nothing past the two records was written. */
  CHECK_INT(arena[16 + 2 * sizeof(CUlaunchAttribute)], ==, 0);

  /* `extra`: unpacked by the layout; malformed arrays fall back. */
  struct {
    void *x;
    int n;
    unsigned v;
  } buf = {(void *)0x1234, 99, 5};
  size_t size = sizeof buf, small = 8;
  void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                   CU_LAUNCH_PARAM_END};
  ag_launch_t lx = with(NULL, 0, extra);
  lx.extra = 1;
  CHECK_INT(ag__lattr_reason(&lx, &k), ==, 0);
  memset(arena, 0, sizeof arena);
  ag__lattr_hold(&h, &lx, &k, arena, arena, 16);
  CHECK(!memcmp(arena, &buf, sizeof buf));
  CHECK_INT(h.nattrs, ==, 0);
  uint64_t hx = ag__lattr_hash(42, &lx);
  extra[3] = &small;
  CHECK_INT(ag__lattr_reason(&lx, &k), ==, AG_FB_ATTRIBUTES + 1); /* smaller than the layout */
  extra[3] = &size;
  size = 32;
  CHECK(ag__lattr_hash(42, &lx) != hx); /* another declared size, another entry */
  void *odd[] = {(void *)7, &buf, CU_LAUNCH_PARAM_END};
  lx.args = odd;
  CHECK_INT(ag__lattr_reason(&lx, &k), ==, AG_FB_ATTRIBUTES + 1);
  lx.args = NULL; /* kernelParams and extra both given */
  CHECK_INT(ag__lattr_reason(&lx, &k), ==, AG_FB_ATTRIBUTES + 1);

  /* A driver without cuLaunchKernelEx cannot hold attributes: cooperative ones say so. */
  ag__real.cuLaunchKernelEx = NULL;
  CHECK_INT(ag__lattr_reason(&l1, &k), ==, AG_FB_ATTRIBUTES + 1);
  CHECK_INT(ag__lattr_reason(&le, &k), ==, AG_FB_COOPERATIVE + 1);
  CHECK_INT(ag__lattr_reason(&ld, &k), ==, 0); /* nothing kept: an ordinary launch */
  printf("ag-launch-attrs: ok\n");
  return 0;
}
