/* memory.c — allocations, copies and memsets.
 *
 * Device memory is host memory: each device allocation is its own anonymous mapping, unmapped
 * when freed, so a kernel twin that touches freed memory faults instead of reading stale data.
 * Every allocation (device, pinned host, registered host, managed) is tracked so that invalid
 * pointers, out-of-range copies and double frees return CUDA's errors; with unified addressing
 * any tracked pointer is device-accessible, and an untracked one is pageable host memory.
 *
 * Synchronisation follows CUDA's "API synchronization behavior": synchronous copies are queued
 * on the legacy (or per-thread) default stream; they return at once for device-to-device copies
 * and after the source was staged for pageable-to-device copies, and otherwise wait for the copy.
 * Synchronous memsets are asynchronous unless they target pinned host memory. Asynchronous
 * copies from pageable memory stage the source at the call; asynchronous copies to pageable
 * memory stay asynchronous (CUDA says they "might be synchronous": a program may not rely on it).
 */
#include "drv.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static drv_alloc_t *allocs;
static size_t nallocs, cap_allocs;
static unsigned long long next_buffer_id = 1;

/* ---- the allocation table (sorted by base; lock held) ---- */

static size_t lower_bound(uintptr_t p) {
  size_t lo = 0, hi = nallocs;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (allocs[mid].base <= p) lo = mid + 1;
    else hi = mid;
  }
  return lo; /* first index with base > p */
}

const drv_alloc_t *drv_mem_find(uintptr_t p, size_t n) {
  size_t i = lower_bound(p);
  if (i == 0) return NULL;
  const drv_alloc_t *a = &allocs[i - 1];
  if (p >= a->base + a->size && !(a->size == 0 && p == a->base)) return NULL;
  if (n > a->base + a->size - p) return NULL;
  return a;
}

static int overlaps(uintptr_t p, size_t n) {
  size_t i = lower_bound(p);
  if (i > 0 && allocs[i - 1].base + allocs[i - 1].size > p) return 1;
  return i < nallocs && allocs[i].base < p + n;
}

static int track(uintptr_t base, size_t size, int kind, unsigned flags, int dev) {
  if (nallocs == cap_allocs) {
    size_t ncap = cap_allocs ? cap_allocs * 2 : 64;
    drv_alloc_t *g = realloc(allocs, ncap * sizeof *g);
    if (!g) return -1;
    allocs = g;
    cap_allocs = ncap;
  }
  size_t i = lower_bound(base);
  memmove(&allocs[i + 1], &allocs[i], (nallocs - i) * sizeof *allocs);
  allocs[i] = (drv_alloc_t){base, size, kind, flags, next_buffer_id++, dev};
  nallocs++;
  return 0;
}

/* Removes the allocation starting exactly at base of one of the kinds in mask (bit per kind). */
static int untrack(uintptr_t base, unsigned kind_mask, drv_alloc_t *out) {
  size_t i = lower_bound(base);
  if (i == 0 || allocs[i - 1].base != base || !(kind_mask & (1u << allocs[i - 1].kind))) return -1;
  *out = allocs[i - 1];
  memmove(&allocs[i - 1], &allocs[i], (nallocs - i) * sizeof *allocs);
  nallocs--;
  return 0;
}

static size_t page_round(size_t n) { return (n + 4095) & ~(size_t)4095; }

static void *map(size_t n) {
  void *p = mmap(NULL, page_round(n), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

/* ---- allocation API ---- */

/* Device memory is allocated on the device of `on` (the current context when NULL), within that
 * device's own DRV_TOTAL_MEM. */
static CUresult alloc_common(void **out, size_t size, int kind, unsigned flags,
                             struct CUctx_st *on) {
  struct CUctx_st *c;
  CUresult r = drv_ctx(&c);
  if (r) return r;
  if (on) c = on;
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  if (size == 0) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&drv_lock);
  r = drv_capture_unsafe_locked();
  if (!r && kind != DRV_MEM_HOST && size > DRV_TOTAL_MEM - c->used) r = CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_unlock(&drv_lock);
  if (r) return r;
  if ((r = drv_async_error())) return r;
  void *p = map(size);
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&drv_lock);
  if (track((uintptr_t)p, size, kind, flags, c->dev)) r = CUDA_ERROR_OUT_OF_MEMORY;
  else if (kind != DRV_MEM_HOST) c->used += page_round(size);
  pthread_mutex_unlock(&drv_lock);
  if (r) {
    munmap(p, page_round(size));
    return r;
  }
  *out = p;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr *dptr, size_t size) {
  DRV_FAIL("cuMemAlloc", CUDA_ERROR_OUT_OF_MEMORY);
  return alloc_common((void **)dptr, size, DRV_MEM_DEVICE, 0, NULL);
}

CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr *dptr, size_t size, unsigned int flags) {
  DRV_FAIL("cuMemAllocManaged", CUDA_ERROR_OUT_OF_MEMORY);
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) return CUDA_ERROR_INVALID_VALUE;
  return alloc_common((void **)dptr, size, DRV_MEM_MANAGED, flags, NULL);
}

CUresult CUDAAPI cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,
                                    unsigned int elem) {
  DRV_FAIL("cuMemAllocPitch", CUDA_ERROR_OUT_OF_MEMORY);
  if (!pitch || (elem != 4 && elem != 8 && elem != 16) || width == 0 || height == 0)
    return CUDA_ERROR_INVALID_VALUE;
  size_t p = (width + 511) & ~(size_t)511;
  CUresult r = alloc_common((void **)dptr, p * height, DRV_MEM_DEVICE, 0, NULL);
  if (!r) *pitch = p;
  return r;
}

CUresult CUDAAPI cuMemAllocHost_v2(void **pp, size_t size) {
  DRV_FAIL("cuMemAllocHost", CUDA_ERROR_OUT_OF_MEMORY);
  return alloc_common(pp, size, DRV_MEM_HOST, 0, NULL);
}

CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t size, unsigned int flags) {
  DRV_FAIL("cuMemHostAlloc", CUDA_ERROR_OUT_OF_MEMORY);
  if (flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
                          CU_MEMHOSTALLOC_WRITECOMBINED))
    return CUDA_ERROR_INVALID_VALUE;
  return alloc_common(pp, size, DRV_MEM_HOST, flags, NULL);
}

/* Frees wait for all device work, as cuMemFree does: the memory may still be in use. */
static CUresult free_common(uintptr_t p, unsigned kind_mask) {
  CUresult r = drv_ctx(NULL);
  if (r) return r;
  if (!p) return CUDA_SUCCESS;
  drv_alloc_t a;
  pthread_mutex_lock(&drv_lock);
  r = drv_capture_unsafe_locked();
  if (!r) {
    drv_sync_all_locked();
    if (untrack(p, kind_mask, &a)) r = CUDA_ERROR_INVALID_VALUE;
    else if (a.kind != DRV_MEM_HOST) drv_ctxs[a.dev].used -= page_round(a.size);
  }
  pthread_mutex_unlock(&drv_lock);
  if (r) return r;
  munmap((void *)a.base, page_round(a.size));
  return drv_async_error();
}

CUresult CUDAAPI cuMemFree_v2(CUdeviceptr p) {
  DRV_FAIL("cuMemFree", CUDA_ERROR_INVALID_VALUE);
  return free_common(p, 1u << DRV_MEM_DEVICE | 1u << DRV_MEM_MANAGED);
}

CUresult CUDAAPI cuMemFreeHost(void *p) {
  DRV_FAIL("cuMemFreeHost", CUDA_ERROR_INVALID_VALUE);
  if (!p) return drv_ctx(NULL);
  return free_common((uintptr_t)p, 1u << DRV_MEM_HOST);
}

CUresult CUDAAPI cuMemHostRegister_v2(void *p, size_t size, unsigned int flags) {
  DRV_FAIL("cuMemHostRegister", CUDA_ERROR_OUT_OF_MEMORY);
  struct CUctx_st *c;
  CUresult r = drv_ctx(&c);
  if (r) return r;
  if (!p || size == 0 || (flags & ~(unsigned)(CU_MEMHOSTREGISTER_PORTABLE |
                                               CU_MEMHOSTREGISTER_DEVICEMAP |
                                               CU_MEMHOSTREGISTER_IOMEMORY |
                                               CU_MEMHOSTREGISTER_READ_ONLY)))
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&drv_lock);
  r = drv_capture_unsafe_locked();
  if (!r && overlaps((uintptr_t)p, size)) r = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  if (!r && track((uintptr_t)p, size, DRV_MEM_REGISTERED, flags, c->dev)) r = CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_unlock(&drv_lock);
  return r;
}

#undef cuMemHostRegister
CUresult CUDAAPI cuMemHostRegister(void *p, size_t size, unsigned int flags) {
  return cuMemHostRegister_v2(p, size, flags);
}

CUresult CUDAAPI cuMemHostUnregister(void *p) {
  DRV_FAIL("cuMemHostUnregister", CUDA_ERROR_INVALID_VALUE);
  CUresult r = drv_ctx(NULL);
  if (r) return r;
  drv_alloc_t a;
  pthread_mutex_lock(&drv_lock);
  r = drv_capture_unsafe_locked();
  if (!r) {
    drv_sync_all_locked();
    if (!p || untrack((uintptr_t)p, 1u << DRV_MEM_REGISTERED, &a))
      r = CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  }
  pthread_mutex_unlock(&drv_lock);
  return r;
}

/* Device symbols: without this, the runtime's copies to and from a symbol would see pageable
 * host memory, and a copy from it would be staged (read) at the call instead of in stream
 * order. */
int simctl_symbol_track(const void *p, size_t n) {
  int r = -1;
  if (!p || n == 0) return -1;
  pthread_mutex_lock(&drv_lock);
  if (!overlaps((uintptr_t)p, n)) r = track((uintptr_t)p, n, DRV_MEM_SYMBOL, 0, 0);
  pthread_mutex_unlock(&drv_lock);
  return r;
}

void simctl_symbol_untrack(const void *p) {
  drv_alloc_t a;
  pthread_mutex_lock(&drv_lock);
  untrack((uintptr_t)p, 1u << DRV_MEM_SYMBOL, &a);
  pthread_mutex_unlock(&drv_lock);
}

CUresult CUDAAPI cuMemHostGetDevicePointer_v2(CUdeviceptr *d, void *p, unsigned int flags) {
  DRV_FAIL("cuMemHostGetDevicePointer", CUDA_ERROR_INVALID_VALUE);
  CUresult r = drv_ctx(NULL);
  if (r) return r;
  if (!d || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&drv_lock);
  const drv_alloc_t *a = drv_mem_find((uintptr_t)p, 1);
  if (!a || (a->kind != DRV_MEM_HOST && a->kind != DRV_MEM_REGISTERED)) r = CUDA_ERROR_INVALID_VALUE;
  else *d = (CUdeviceptr)p;
  pthread_mutex_unlock(&drv_lock);
  return r;
}

CUresult CUDAAPI cuMemHostGetFlags(unsigned int *flags, void *p) {
  DRV_FAIL("cuMemHostGetFlags", CUDA_ERROR_INVALID_VALUE);
  CUresult r = drv_ctx(NULL);
  if (r) return r;
  if (!flags) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&drv_lock);
  const drv_alloc_t *a = drv_mem_find((uintptr_t)p, 1);
  if (!a || a->kind != DRV_MEM_HOST) r = CUDA_ERROR_INVALID_VALUE;
  else *flags = a->flags;
  pthread_mutex_unlock(&drv_lock);
  return r;
}

CUresult CUDAAPI cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
  DRV_FAIL("cuMemGetInfo", CUDA_ERROR_INVALID_VALUE);
  struct CUctx_st *c;
  CUresult r = drv_ctx(&c);
  if (r) return r;
  if (!free_bytes || !total) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&drv_lock);
  *free_bytes = DRV_TOTAL_MEM - c->used;
  *total = DRV_TOTAL_MEM;
  pthread_mutex_unlock(&drv_lock);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr p) {
  DRV_FAIL("cuMemGetAddressRange", CUDA_ERROR_INVALID_VALUE);
  CUresult r = drv_ctx(NULL);
  if (r) return r;
  pthread_mutex_lock(&drv_lock);
  const drv_alloc_t *a = drv_mem_find(p, 1);
  if (!a || a->kind == DRV_MEM_HOST || a->kind == DRV_MEM_REGISTERED) r = CUDA_ERROR_NOT_FOUND;
  else {
    if (base) *base = a->base;
    if (size) *size = a->size;
  }
  pthread_mutex_unlock(&drv_lock);
  return r;
}

/* One attribute of the allocation at p (a may be NULL: unknown pointer). */
static CUresult pointer_attr(void *data, CUpointer_attribute attr, const drv_alloc_t *a,
                             CUdeviceptr p, int lenient) {
  if (!a && !lenient) return CUDA_ERROR_INVALID_VALUE;
  int dev = a && (a->kind == DRV_MEM_DEVICE || a->kind == DRV_MEM_MANAGED || a->kind == DRV_MEM_SYMBOL);
  switch (attr) {
  case CU_POINTER_ATTRIBUTE_CONTEXT: *(CUcontext *)data = a ? &drv_ctxs[a->dev] : NULL; break;
  case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    *(unsigned *)data = !a ? 0 : dev ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
    break;
  case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: *(CUdeviceptr *)data = a ? p : 0; break;
  case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    if (a && (a->kind == DRV_MEM_DEVICE || a->kind == DRV_MEM_SYMBOL)) {
      if (!lenient) return CUDA_ERROR_INVALID_VALUE;
      *(void **)data = NULL;
    } else {
      *(void **)data = a ? (void *)p : NULL;
    }
    break;
  case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS: *(int *)data = 1; break;
  case CU_POINTER_ATTRIBUTE_BUFFER_ID: *(unsigned long long *)data = a ? a->id : 0; break;
  case CU_POINTER_ATTRIBUTE_IS_MANAGED: *(int *)data = a && a->kind == DRV_MEM_MANAGED; break;
  case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data = a ? a->dev : -2; break;
  case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE: *(int *)data = a && a->kind == DRV_MEM_DEVICE; break;
  case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *(CUdeviceptr *)data = a ? a->base : 0; break;
  case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t *)data = a ? a->size : 0; break;
  case CU_POINTER_ATTRIBUTE_MAPPED: *(int *)data = a != NULL; break;
  case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES: *(unsigned long long *)data = 0; break;
  case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: *(CUmemoryPool *)data = NULL; break;
  default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuPointerGetAttribute(void *data, CUpointer_attribute attr, CUdeviceptr p) {
  DRV_FAIL("cuPointerGetAttribute", CUDA_ERROR_INVALID_VALUE);
  CUresult r = drv_ctx(NULL);
  if (r) return r;
  if (!data) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&drv_lock);
  r = pointer_attr(data, attr, drv_mem_find(p, 1), p, 0);
  pthread_mutex_unlock(&drv_lock);
  return r;
}

/* Unlike cuPointerGetAttribute, an unknown pointer is not an error here (CUDA documents zeros). */
CUresult CUDAAPI cuPointerGetAttributes(unsigned int n, CUpointer_attribute *attrs, void **data,
                                        CUdeviceptr p) {
  DRV_FAIL("cuPointerGetAttributes", CUDA_ERROR_INVALID_VALUE);
  CUresult r = drv_ctx(NULL);
  if (r) return r;
  if (!attrs || !data) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&drv_lock);
  const drv_alloc_t *a = drv_mem_find(p, 1);
  for (unsigned i = 0; i < n && !r; i++)
    if (data[i]) r = pointer_attr(data[i], attrs[i], a, p, 1);
  pthread_mutex_unlock(&drv_lock);
  return r;
}

/* ---- copy and memset primitives ---- */

void drv_copy_run(const drv_copy_t *c) {
  for (size_t z = 0; z < c->depth; z++)
    for (size_t y = 0; y < c->height; y++)
      memmove(c->dst + (z * c->dheight + y) * c->dpitch, c->src + (z * c->sheight + y) * c->spitch,
              c->width);
}

void drv_set_run(const drv_set_t *m) {
  for (size_t y = 0; y < m->height; y++) {
    char *row = m->dst + y * m->pitch;
    if (m->elem == 1) {
      memset(row, (int)(m->value & 0xff), m->width);
    } else if (m->elem == 2) {
      uint16_t v = (uint16_t)m->value;
      for (size_t i = 0; i < m->width; i++) memcpy(row + 2 * i, &v, 2);
    } else {
      uint32_t v = m->value;
      for (size_t i = 0; i < m->width; i++) memcpy(row + 4 * i, &v, 4);
    }
  }
}

static size_t extent(size_t pitch, size_t height, size_t width, size_t rows, size_t depth) {
  if (!width || !rows || !depth) return 0;
  return ((depth - 1) * height + (rows - 1)) * pitch + width;
}

/* Checks one side of a copy (lock held): device memory must lie in one allocation. */
static CUresult side(CUmemorytype t, const void *host, CUdeviceptr dev, size_t off, size_t n,
                     char **out) {
  uintptr_t p;
  switch (t) {
  case CU_MEMORYTYPE_HOST: p = (uintptr_t)host; break;
  case CU_MEMORYTYPE_DEVICE:
  case CU_MEMORYTYPE_UNIFIED: p = dev; break;
  default: return CUDA_ERROR_INVALID_VALUE; /* CUDA arrays are not simulated */
  }
  if (!p) return n ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
  p += off;
  if (t == CU_MEMORYTYPE_DEVICE && n && !drv_mem_find(p, n)) return CUDA_ERROR_INVALID_VALUE;
  if (t != CU_MEMORYTYPE_DEVICE && n) {
    /* A host or unified pointer inside a tracked allocation must fit in it. */
    size_t i = lower_bound(p);
    if (i > 0 && allocs[i - 1].base + allocs[i - 1].size > p && !drv_mem_find(p, n))
      return CUDA_ERROR_INVALID_VALUE;
  }
  *out = (char *)p;
  return CUDA_SUCCESS;
}

CUresult drv_copy_from3d(const CUDA_MEMCPY3D *p, drv_copy_t *c) {
  memset(c, 0, sizeof *c);
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  size_t w = p->WidthInBytes, h = p->Height ? p->Height : 1, d = p->Depth ? p->Depth : 1;
  size_t sp = p->srcPitch ? p->srcPitch : w, dp = p->dstPitch ? p->dstPitch : w;
  size_t sh = p->srcHeight ? p->srcHeight : h, dh = p->dstHeight ? p->dstHeight : h;
  if ((h > 1 || d > 1) && (sp < w || dp < w)) return CUDA_ERROR_INVALID_VALUE;
  if (d > 1 && (sh < h || dh < h)) return CUDA_ERROR_INVALID_VALUE;
  size_t soff = p->srcXInBytes + (p->srcY + p->srcZ * sh) * sp;
  size_t doff = p->dstXInBytes + (p->dstY + p->dstZ * dh) * dp;
  char *src, *dst;
  CUresult r = side(p->srcMemoryType, p->srcHost, p->srcDevice, soff, extent(sp, sh, w, h, d), &src);
  if (!r) r = side(p->dstMemoryType, p->dstHost, p->dstDevice, doff, extent(dp, dh, w, h, d), &dst);
  if (r) return r;
  *c = (drv_copy_t){.dst = dst, .src = src, .dpitch = dp, .dheight = dh, .spitch = sp,
                    .sheight = sh, .width = w, .height = h, .depth = d};
  return CUDA_SUCCESS;
}

CUresult drv_set_check(const drv_set_t *m) {
  if (m->width == 0 || m->height == 0) return CUDA_SUCCESS;
  if (((uintptr_t)m->dst | m->pitch) % m->elem) return CUDA_ERROR_INVALID_VALUE;
  if (m->height > 1 && m->pitch < m->width * m->elem) return CUDA_ERROR_INVALID_VALUE;
  size_t n = (m->height - 1) * m->pitch + m->width * m->elem;
  return drv_mem_find((uintptr_t)m->dst, n) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- queuing copies and memsets ---- */

enum { SYNC_NONE, SYNC_API };

static void copy_op_run(drv_op_t *op) { drv_copy_run(op->arg); }
static void set_op_run(drv_op_t *op) { drv_set_run(op->arg); }
static void copy_op_fini(drv_op_t *op) {
  drv_copy_t *c = op->arg;
  free(c->staging);
  free(c);
}
static void set_op_fini(drv_op_t *op) { free(op->arg); }

static CUresult fill_copy(struct CUgraphNode_st *n, void *arg) {
  n->u.c = *(drv_copy_t *)arg;
  return CUDA_SUCCESS;
}

static CUresult fill_set(struct CUgraphNode_st *n, void *arg) {
  n->u.m = *(drv_set_t *)arg;
  return CUDA_SUCCESS;
}

static int pageable(const void *p) { return p && !drv_mem_find((uintptr_t)p, 1); }
static int is_device(const void *p) {
  const drv_alloc_t *a = drv_mem_find((uintptr_t)p, 1);
  return a && (a->kind == DRV_MEM_DEVICE || a->kind == DRV_MEM_MANAGED || a->kind == DRV_MEM_SYMBOL);
}

/* Copies a pageable source aside so the caller may reuse its buffer at once. */
static int stage(drv_copy_t *c) {
  size_t row = c->width, n = row * c->height * c->depth;
  char *buf = malloc(n ? n : 1);
  if (!buf) return -1;
  drv_copy_t to = *c;
  to.dst = buf;
  to.dpitch = row;
  to.dheight = c->height;
  drv_copy_run(&to);
  c->staging = buf;
  c->src = buf;
  c->spitch = row;
  c->sheight = c->height;
  return 0;
}

/* Validation has been done by the caller (lock held on entry, released on return). */
static CUresult queue_copy_locked(drv_stream_t *s, const drv_copy_t *in, int sync) {
  CUresult r;
  if (s->cap) {
    drv_capture_node(s, CU_GRAPH_NODE_TYPE_MEMCPY, fill_copy, (void *)in, &r);
    pthread_mutex_unlock(&drv_lock);
    return r;
  }
  if (in->width == 0 || in->height == 0 || in->depth == 0) {
    pthread_mutex_unlock(&drv_lock);
    return CUDA_SUCCESS;
  }
  int src_pageable = pageable(in->src), dst_pageable = pageable(in->dst);
  int d2d = is_device(in->src) && is_device(in->dst);
  drv_copy_t *c = malloc(sizeof *c);
  drv_op_t *op = c ? drv_op_new(copy_op_run, copy_op_fini, c) : NULL;
  if (!op) {
    free(c);
    pthread_mutex_unlock(&drv_lock);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  op->kind = DRV_OP_MEMOP;
  *c = *in;
  int staged = src_pageable && !dst_pageable;
  if (staged && stage(c)) {
    drv_op_free(op);
    pthread_mutex_unlock(&drv_lock);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  r = drv_submit_locked(s, op);
  if (!r && sync == SYNC_API && !d2d && !staged) drv_sync_stream_locked(s);
  pthread_mutex_unlock(&drv_lock);
  return r;
}

/* The common path of every copy API: stream, capture rules, sticky errors, validation. */
static CUresult copy_api(int ptds, CUstream h, int sync, const CUDA_MEMCPY3D *p) {
  drv_stream_t *s;
  CUresult r = drv_stream(h, ptds, &s);
  if (r) return r;
  if ((r = drv_async_error())) return r;
  drv_copy_t c;
  pthread_mutex_lock(&drv_lock);
  if (sync) r = drv_capture_unsafe_locked();
  if (!r && s->cap && s->cap->invalidated) r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  if (!r) r = drv_copy_from3d(p, &c);
  if (r) {
    pthread_mutex_unlock(&drv_lock);
    return r;
  }
  return queue_copy_locked(s, &c, sync);
}

static CUDA_MEMCPY3D linear(CUmemorytype dt, CUdeviceptr d, void *dh, CUmemorytype st,
                            CUdeviceptr s, const void *sh, size_t n) {
  CUDA_MEMCPY3D p = {0};
  p.dstMemoryType = dt;
  p.dstDevice = d;
  p.dstHost = dh;
  p.srcMemoryType = st;
  p.srcDevice = s;
  p.srcHost = sh;
  p.WidthInBytes = n;
  p.Height = p.Depth = 1;
  return p;
}

static CUDA_MEMCPY3D from2d(const CUDA_MEMCPY2D *q) {
  CUDA_MEMCPY3D p = {0};
  p.srcXInBytes = q->srcXInBytes;
  p.srcY = q->srcY;
  p.srcMemoryType = q->srcMemoryType;
  p.srcHost = q->srcHost;
  p.srcDevice = q->srcDevice;
  p.srcArray = q->srcArray;
  p.srcPitch = q->srcPitch;
  p.dstXInBytes = q->dstXInBytes;
  p.dstY = q->dstY;
  p.dstMemoryType = q->dstMemoryType;
  p.dstHost = q->dstHost;
  p.dstDevice = q->dstDevice;
  p.dstArray = q->dstArray;
  p.dstPitch = q->dstPitch;
  p.WidthInBytes = q->WidthInBytes;
  p.Height = q->Height;
  p.Depth = 1;
  return p;
}

#define U CU_MEMORYTYPE_UNIFIED
#define D CU_MEMORYTYPE_DEVICE
#define H CU_MEMORYTYPE_HOST

static CUresult memcpy_u(int ptds, CUdeviceptr d, CUdeviceptr s, size_t n) {
  DRV_FAIL("cuMemcpy", CUDA_ERROR_INVALID_VALUE);
  CUDA_MEMCPY3D p = linear(U, d, NULL, U, s, NULL, n);
  return copy_api(ptds, NULL, SYNC_API, &p);
}
DRV_BOTH(memcpy_u, cuMemcpy, cuMemcpy_ptds, (CUdeviceptr d, CUdeviceptr s, size_t n), (d, s, n))

static CUresult memcpy_u_async(int ptds, CUdeviceptr d, CUdeviceptr s, size_t n, CUstream h) {
  DRV_FAIL("cuMemcpyAsync", CUDA_ERROR_INVALID_VALUE);
  CUDA_MEMCPY3D p = linear(U, d, NULL, U, s, NULL, n);
  return copy_api(ptds, h, SYNC_NONE, &p);
}
DRV_BOTH(memcpy_u_async, cuMemcpyAsync, cuMemcpyAsync_ptsz,
         (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream h), (d, s, n, h))

static CUresult memcpy_peer(int ptds, CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc,
                            size_t n) {
  DRV_FAIL("cuMemcpyPeer", CUDA_ERROR_INVALID_VALUE);
  if (!drv_valid_ctx(dc) || !drv_valid_ctx(sc)) return CUDA_ERROR_INVALID_CONTEXT;
  CUDA_MEMCPY3D p = linear(D, d, NULL, D, s, NULL, n);
  return copy_api(ptds, NULL, SYNC_API, &p);
}
DRV_BOTH(memcpy_peer, cuMemcpyPeer, cuMemcpyPeer_ptds,
         (CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n), (d, dc, s, sc, n))

static CUresult memcpy_peer_async(int ptds, CUdeviceptr d, CUcontext dc, CUdeviceptr s,
                                  CUcontext sc, size_t n, CUstream h) {
  DRV_FAIL("cuMemcpyPeerAsync", CUDA_ERROR_INVALID_VALUE);
  if (!drv_valid_ctx(dc) || !drv_valid_ctx(sc)) return CUDA_ERROR_INVALID_CONTEXT;
  CUDA_MEMCPY3D p = linear(D, d, NULL, D, s, NULL, n);
  return copy_api(ptds, h, SYNC_NONE, &p);
}
DRV_BOTH(memcpy_peer_async, cuMemcpyPeerAsync, cuMemcpyPeerAsync_ptsz,
         (CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n, CUstream h),
         (d, dc, s, sc, n, h))

static CUresult memcpy_htod(int ptds, CUdeviceptr d, const void *s, size_t n) {
  DRV_FAIL("cuMemcpyHtoD", CUDA_ERROR_INVALID_VALUE);
  CUDA_MEMCPY3D p = linear(D, d, NULL, H, 0, s, n);
  return copy_api(ptds, NULL, SYNC_API, &p);
}
DRV_BOTH(memcpy_htod, cuMemcpyHtoD_v2, cuMemcpyHtoD_v2_ptds,
         (CUdeviceptr d, const void *s, size_t n), (d, s, n))

static CUresult memcpy_dtoh(int ptds, void *d, CUdeviceptr s, size_t n) {
  DRV_FAIL("cuMemcpyDtoH", CUDA_ERROR_INVALID_VALUE);
  CUDA_MEMCPY3D p = linear(H, 0, d, D, s, NULL, n);
  return copy_api(ptds, NULL, SYNC_API, &p);
}
DRV_BOTH(memcpy_dtoh, cuMemcpyDtoH_v2, cuMemcpyDtoH_v2_ptds, (void *d, CUdeviceptr s, size_t n),
         (d, s, n))

static CUresult memcpy_dtod(int ptds, CUdeviceptr d, CUdeviceptr s, size_t n) {
  DRV_FAIL("cuMemcpyDtoD", CUDA_ERROR_INVALID_VALUE);
  CUDA_MEMCPY3D p = linear(D, d, NULL, D, s, NULL, n);
  return copy_api(ptds, NULL, SYNC_API, &p);
}
DRV_BOTH(memcpy_dtod, cuMemcpyDtoD_v2, cuMemcpyDtoD_v2_ptds, (CUdeviceptr d, CUdeviceptr s, size_t n),
         (d, s, n))

static CUresult memcpy_htod_async(int ptds, CUdeviceptr d, const void *s, size_t n, CUstream h) {
  DRV_FAIL("cuMemcpyHtoDAsync", CUDA_ERROR_INVALID_VALUE);
  CUDA_MEMCPY3D p = linear(D, d, NULL, H, 0, s, n);
  return copy_api(ptds, h, SYNC_NONE, &p);
}
DRV_BOTH(memcpy_htod_async, cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync_v2_ptsz,
         (CUdeviceptr d, const void *s, size_t n, CUstream h), (d, s, n, h))

static CUresult memcpy_dtoh_async(int ptds, void *d, CUdeviceptr s, size_t n, CUstream h) {
  DRV_FAIL("cuMemcpyDtoHAsync", CUDA_ERROR_INVALID_VALUE);
  CUDA_MEMCPY3D p = linear(H, 0, d, D, s, NULL, n);
  return copy_api(ptds, h, SYNC_NONE, &p);
}
DRV_BOTH(memcpy_dtoh_async, cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync_v2_ptsz,
         (void *d, CUdeviceptr s, size_t n, CUstream h), (d, s, n, h))

static CUresult memcpy_dtod_async(int ptds, CUdeviceptr d, CUdeviceptr s, size_t n, CUstream h) {
  DRV_FAIL("cuMemcpyDtoDAsync", CUDA_ERROR_INVALID_VALUE);
  CUDA_MEMCPY3D p = linear(D, d, NULL, D, s, NULL, n);
  return copy_api(ptds, h, SYNC_NONE, &p);
}
DRV_BOTH(memcpy_dtod_async, cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync_v2_ptsz,
         (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream h), (d, s, n, h))

static CUresult memcpy_2d(int ptds, const CUDA_MEMCPY2D *q) {
  DRV_FAIL("cuMemcpy2D", CUDA_ERROR_INVALID_VALUE);
  if (!q) return CUDA_ERROR_INVALID_VALUE;
  CUDA_MEMCPY3D p = from2d(q);
  return copy_api(ptds, NULL, SYNC_API, &p);
}
DRV_BOTH(memcpy_2d, cuMemcpy2D_v2, cuMemcpy2D_v2_ptds, (const CUDA_MEMCPY2D *q), (q))

static CUresult memcpy_2d_unaligned(int ptds, const CUDA_MEMCPY2D *q) {
  DRV_FAIL("cuMemcpy2DUnaligned", CUDA_ERROR_INVALID_VALUE);
  if (!q) return CUDA_ERROR_INVALID_VALUE;
  CUDA_MEMCPY3D p = from2d(q);
  return copy_api(ptds, NULL, SYNC_API, &p);
}
DRV_BOTH(memcpy_2d_unaligned, cuMemcpy2DUnaligned_v2, cuMemcpy2DUnaligned_v2_ptds,
         (const CUDA_MEMCPY2D *q), (q))

static CUresult memcpy_2d_async(int ptds, const CUDA_MEMCPY2D *q, CUstream h) {
  DRV_FAIL("cuMemcpy2DAsync", CUDA_ERROR_INVALID_VALUE);
  if (!q) return CUDA_ERROR_INVALID_VALUE;
  CUDA_MEMCPY3D p = from2d(q);
  return copy_api(ptds, h, SYNC_NONE, &p);
}
DRV_BOTH(memcpy_2d_async, cuMemcpy2DAsync_v2, cuMemcpy2DAsync_v2_ptsz,
         (const CUDA_MEMCPY2D *q, CUstream h), (q, h))

static CUresult memcpy_3d(int ptds, const CUDA_MEMCPY3D *p) {
  DRV_FAIL("cuMemcpy3D", CUDA_ERROR_INVALID_VALUE);
  return copy_api(ptds, NULL, SYNC_API, p);
}
DRV_BOTH(memcpy_3d, cuMemcpy3D_v2, cuMemcpy3D_v2_ptds, (const CUDA_MEMCPY3D *p), (p))

static CUresult memcpy_3d_async(int ptds, const CUDA_MEMCPY3D *p, CUstream h) {
  DRV_FAIL("cuMemcpy3DAsync", CUDA_ERROR_INVALID_VALUE);
  return copy_api(ptds, h, SYNC_NONE, p);
}
DRV_BOTH(memcpy_3d_async, cuMemcpy3DAsync_v2, cuMemcpy3DAsync_v2_ptsz,
         (const CUDA_MEMCPY3D *p, CUstream h), (p, h))

/* ---- memsets ---- */

static CUresult set_api(int ptds, CUstream h, int sync, drv_set_t m) {
  drv_stream_t *s;
  CUresult r = drv_stream(h, ptds, &s);
  if (r) return r;
  if ((r = drv_async_error())) return r;
  pthread_mutex_lock(&drv_lock);
  if (sync) r = drv_capture_unsafe_locked();
  if (!r && s->cap && s->cap->invalidated) r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  if (!r) r = drv_set_check(&m);
  if (!r && s->cap) {
    drv_capture_node(s, CU_GRAPH_NODE_TYPE_MEMSET, fill_set, &m, &r);
  } else if (!r && m.width && m.height) {
    const drv_alloc_t *a = drv_mem_find((uintptr_t)m.dst, 1);
    int host_target = a->kind == DRV_MEM_HOST || a->kind == DRV_MEM_REGISTERED;
    drv_set_t *copy = malloc(sizeof *copy);
    drv_op_t *op = copy ? drv_op_new(set_op_run, set_op_fini, copy) : NULL;
    if (!op) {
      free(copy);
      r = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
      *copy = m;
      op->kind = DRV_OP_MEMOP;
      r = drv_submit_locked(s, op);
      if (!r && sync && host_target) drv_sync_stream_locked(s);
    }
  }
  pthread_mutex_unlock(&drv_lock);
  return r;
}

static drv_set_t set_desc(CUdeviceptr d, size_t pitch, unsigned v, unsigned elem, size_t w,
                          size_t h) {
  return (drv_set_t){.dst = (char *)d, .pitch = pitch ? pitch : w * elem, .width = w,
                     .height = h, .value = v, .elem = elem};
}

#define DRV_MEMSET(fn, api, elem, T, sync, flavour)                                          \
  static CUresult fn(int ptds, CUdeviceptr d, T v, size_t n MEMSET_STREAM_##flavour) {      \
    DRV_FAIL(api, CUDA_ERROR_INVALID_VALUE);                                                 \
    return set_api(ptds, MEMSET_HANDLE_##flavour, sync, set_desc(d, 0, v, elem, n, 1));    \
  }
#define DRV_MEMSET2D(fn, api, elem, T, sync, flavour)                                        \
  static CUresult fn(int ptds, CUdeviceptr d, size_t pitch, T v, size_t w,                  \
                     size_t h MEMSET_STREAM_##flavour) {                                     \
    DRV_FAIL(api, CUDA_ERROR_INVALID_VALUE);                                                 \
    return set_api(ptds, MEMSET_HANDLE_##flavour, sync, set_desc(d, pitch, v, elem, w, h)); \
  }
#define MEMSET_STREAM_SYNC
#define MEMSET_HANDLE_SYNC NULL
#define MEMSET_STREAM_ASYNC , CUstream hs
#define MEMSET_HANDLE_ASYNC hs

DRV_MEMSET(memset_d8, "cuMemsetD8", 1, unsigned char, 1, SYNC)
DRV_MEMSET(memset_d16, "cuMemsetD16", 2, unsigned short, 1, SYNC)
DRV_MEMSET(memset_d32, "cuMemsetD32", 4, unsigned int, 1, SYNC)
DRV_MEMSET(memset_d8_async, "cuMemsetD8Async", 1, unsigned char, 0, ASYNC)
DRV_MEMSET(memset_d16_async, "cuMemsetD16Async", 2, unsigned short, 0, ASYNC)
DRV_MEMSET(memset_d32_async, "cuMemsetD32Async", 4, unsigned int, 0, ASYNC)
DRV_MEMSET2D(memset_2d8, "cuMemsetD2D8", 1, unsigned char, 1, SYNC)
DRV_MEMSET2D(memset_2d16, "cuMemsetD2D16", 2, unsigned short, 1, SYNC)
DRV_MEMSET2D(memset_2d32, "cuMemsetD2D32", 4, unsigned int, 1, SYNC)
DRV_MEMSET2D(memset_2d8_async, "cuMemsetD2D8Async", 1, unsigned char, 0, ASYNC)
DRV_MEMSET2D(memset_2d16_async, "cuMemsetD2D16Async", 2, unsigned short, 0, ASYNC)
DRV_MEMSET2D(memset_2d32_async, "cuMemsetD2D32Async", 4, unsigned int, 0, ASYNC)

DRV_BOTH(memset_d8, cuMemsetD8_v2, cuMemsetD8_v2_ptds, (CUdeviceptr d, unsigned char v, size_t n),
         (d, v, n))
DRV_BOTH(memset_d16, cuMemsetD16_v2, cuMemsetD16_v2_ptds,
         (CUdeviceptr d, unsigned short v, size_t n), (d, v, n))
DRV_BOTH(memset_d32, cuMemsetD32_v2, cuMemsetD32_v2_ptds, (CUdeviceptr d, unsigned int v, size_t n),
         (d, v, n))
DRV_BOTH(memset_d8_async, cuMemsetD8Async, cuMemsetD8Async_ptsz,
         (CUdeviceptr d, unsigned char v, size_t n, CUstream s), (d, v, n, s))
DRV_BOTH(memset_d16_async, cuMemsetD16Async, cuMemsetD16Async_ptsz,
         (CUdeviceptr d, unsigned short v, size_t n, CUstream s), (d, v, n, s))
DRV_BOTH(memset_d32_async, cuMemsetD32Async, cuMemsetD32Async_ptsz,
         (CUdeviceptr d, unsigned int v, size_t n, CUstream s), (d, v, n, s))
DRV_BOTH(memset_2d8, cuMemsetD2D8_v2, cuMemsetD2D8_v2_ptds,
         (CUdeviceptr d, size_t p, unsigned char v, size_t w, size_t h), (d, p, v, w, h))
DRV_BOTH(memset_2d16, cuMemsetD2D16_v2, cuMemsetD2D16_v2_ptds,
         (CUdeviceptr d, size_t p, unsigned short v, size_t w, size_t h), (d, p, v, w, h))
DRV_BOTH(memset_2d32, cuMemsetD2D32_v2, cuMemsetD2D32_v2_ptds,
         (CUdeviceptr d, size_t p, unsigned int v, size_t w, size_t h), (d, p, v, w, h))
DRV_BOTH(memset_2d8_async, cuMemsetD2D8Async, cuMemsetD2D8Async_ptsz,
         (CUdeviceptr d, size_t p, unsigned char v, size_t w, size_t h, CUstream s),
         (d, p, v, w, h, s))
DRV_BOTH(memset_2d16_async, cuMemsetD2D16Async, cuMemsetD2D16Async_ptsz,
         (CUdeviceptr d, size_t p, unsigned short v, size_t w, size_t h, CUstream s),
         (d, p, v, w, h, s))
DRV_BOTH(memset_2d32_async, cuMemsetD2D32Async, cuMemsetD2D32Async_ptsz,
         (CUdeviceptr d, size_t p, unsigned int v, size_t w, size_t h, CUstream s),
         (d, p, v, w, h, s))

/* ---- stream-ordered allocation ---- */

/* The address is valid at once (CUDA only promises it in stream order); the free happens when
 * the stream reaches it. Not capturable here. */
static CUresult mem_alloc_async(int ptds, CUdeviceptr *d, size_t n, CUstream h) {
  DRV_FAIL("cuMemAllocAsync", CUDA_ERROR_OUT_OF_MEMORY);
  drv_stream_t *s;
  CUresult r = drv_stream(h, ptds, &s);
  if (r) return r;
  pthread_mutex_lock(&drv_lock);
  if (s->cap) {
    drv_capture_invalidate(s->cap);
    r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  pthread_mutex_unlock(&drv_lock);
  if (r) return r;
  return alloc_common((void **)d, n, DRV_MEM_DEVICE, 0, s->ctx);
}
DRV_BOTH(mem_alloc_async, cuMemAllocAsync, cuMemAllocAsync_ptsz,
         (CUdeviceptr *d, size_t n, CUstream h), (d, n, h))

static void free_op_run(drv_op_t *op) {
  drv_alloc_t a;
  pthread_mutex_lock(&drv_lock);
  int bad = untrack((uintptr_t)op->arg, 1u << DRV_MEM_DEVICE, &a);
  if (!bad) drv_ctxs[a.dev].used -= page_round(a.size);
  pthread_mutex_unlock(&drv_lock);
  if (!bad) munmap((void *)a.base, page_round(a.size));
}

static CUresult mem_free_async(int ptds, CUdeviceptr d, CUstream h) {
  DRV_FAIL("cuMemFreeAsync", CUDA_ERROR_INVALID_VALUE);
  drv_stream_t *s;
  CUresult r = drv_stream(h, ptds, &s);
  if (r) return r;
  pthread_mutex_lock(&drv_lock);
  const drv_alloc_t *a = drv_mem_find(d, 1);
  if (s->cap) {
    drv_capture_invalidate(s->cap);
    r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  } else if (!a || a->base != d || a->kind != DRV_MEM_DEVICE) {
    r = CUDA_ERROR_INVALID_VALUE;
  } else {
    drv_op_t *op = drv_op_new(free_op_run, NULL, (void *)d);
    r = op ? drv_submit_locked(s, op) : CUDA_ERROR_OUT_OF_MEMORY;
  }
  pthread_mutex_unlock(&drv_lock);
  return r;
}
DRV_BOTH(mem_free_async, cuMemFreeAsync, cuMemFreeAsync_ptsz, (CUdeviceptr d, CUstream h), (d, h))
