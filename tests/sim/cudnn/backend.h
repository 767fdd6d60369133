/* backend.h — the descriptor store of the simulated cuDNN's backend API, shared by backend.c
 * (descriptors, attributes, finalization, the convolution graphs, execution) and opgraph.c (every
 * other operation graph: compiled for the interpreter of opgraph.h).
 *
 * A descriptor keeps each attribute set on it (typed, the last value of each) and, once
 * finalized, what later steps need by value. The readers below answer 0 or NULL when an
 * attribute is absent or of another type or count.
 */
#ifndef CUDNNSIM_BACKEND_H
#define CUDNNSIM_BACKEND_H

#include "dnn.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Descriptor types and attributes of cuDNN releases newer than this toolkit's headers, which
 * cudnn_frontend sets for attention: the diagonal band mask (the causal mask of a score
 * modifier), the softmax-statistics node of the fused forward attention, and the fused forward
 * attention's score modifier. Their numbers are those the frontend passes. */
#define BK_OPERATION_BAND_MASK_DESCRIPTOR ((cudnnBackendDescriptorType_t)44)
#define BK_OPERATION_SDPA_STATS_DESCRIPTOR ((cudnnBackendDescriptorType_t)45)
#define BK_ATTR_BAND_MASK_X ((cudnnBackendAttributeName_t)3000)
#define BK_ATTR_BAND_MASK_FILL ((cudnnBackendAttributeName_t)3005) /* by value: masked scores */
#define BK_ATTR_BAND_MASK_Y ((cudnnBackendAttributeName_t)3006)
#define BK_ATTR_BAND_MASK_COMPARISON ((cudnnBackendAttributeName_t)3007) /* a pointwise mode */
#define BK_ATTR_SDPA_STATS_X ((cudnnBackendAttributeName_t)3100)
#define BK_ATTR_SDPA_STATS_Y ((cudnnBackendAttributeName_t)3101)
#define BK_ATTR_SDPA_STATS_STATS ((cudnnBackendAttributeName_t)3102)
#define BK_ATTR_SDPA_FWD_SCORE_GRAPH ((cudnnBackendAttributeName_t)2811)
#define BK_ATTR_SDPA_FWD_SCORE_IN_UID ((cudnnBackendAttributeName_t)2812)
#define BK_ATTR_SDPA_FWD_SCORE_OUT_UID ((cudnnBackendAttributeName_t)2813)
#define BK_ATTR_SDPA_FWD_SOFTMAX_STATS ((cudnnBackendAttributeName_t)2814)
#define BK_ATTR_RESHAPE_MODE ((cudnnBackendAttributeName_t)2202)
#define BK_TYPE_RESHAPE_MODE ((cudnnBackendAttributeType_t)31) /* the reshape's mode, an enum */

#define DNN_MAGIC_BACKEND 0x626b6e64u
#define BK_MAX_ATTRS 24
#define BK_MAX_PACK 32

typedef struct og_build og_build_t; /* opgraph.c */


typedef struct {
  cudnnBackendAttributeName_t name;
  cudnnBackendAttributeType_t type;
  int64_t count;
  void *data;
} bk_attr_t;

/* A tensor as finalized. */
typedef struct {
  int64_t uid;
  cudnnDataType_t dtype;
  int nbdims;
  int64_t dims[CUDNN_DIM_MAX], strides[CUDNN_DIM_MAX];
  int virt, byval; /* an intermediate of a graph; a scalar passed by its host pointer */
} bk_tensor_t;

/* A convolution descriptor as finalized (2 spatial dimensions). */
typedef struct {
  cudnnDataType_t compute;
  cudnnConvolutionMode_t mode;
  int64_t pre[2], post[2], stride[2], dil[2];
} bk_convp_t;

typedef enum { BK_FWD, BK_BWD_DATA, BK_BWD_FILTER } bk_kind_t;

/* A convolution operation as finalized: x the image, w the filter, y the forward output (for
 * the backward operations dx, dw and dy are in these places). */
typedef struct {
  bk_kind_t kind;
  float alpha, beta;
  bk_tensor_t x, w, y;
  cudnnsim_conv_t p;
} bk_op_t;

typedef struct bk_desc {
  unsigned magic;
  cudnnBackendDescriptorType_t type;
  int finalized;
  int nattrs;
  bk_attr_t attrs[BK_MAX_ATTRS];
  /* Compiled at finalization (or filled by cuDNN for descriptors it returns). */
  bk_tensor_t tensor;      /* TENSOR */
  bk_convp_t conv;         /* CONVOLUTION */
  bk_op_t op;              /* operations, OPERATIONGRAPH, ENGINE, ENGINECFG, ENGINEHEUR, plan */
  cudnnHandle_t handle;    /* OPERATIONGRAPH, EXECUTION_PLAN */
  /* Graphs other than one convolution (opgraph.c), compiled at the graph's finalization and
   * carried like op: the interpreter's description, each tensor's uid, the workspace it needs. */
  int is_og;
  og_graph_t og;
  int64_t og_uid[OG_MAX_T];
  int64_t og_ws;
  og_build_t *ogb; /* an operation of those graphs, compiled at its finalization */
  int owns;        /* a copy kept by SetAttribute: the descriptors it names are its own copies */
  int64_t engine;          /* ENGINE, ENGINECFG, EXECUTION_PLAN: the global index */
  int npack;               /* VARIANT_PACK */
  int64_t uids[BK_MAX_PACK];
  void *ptrs[BK_MAX_PACK];
  void *workspace;
} bk_desc_t;

static inline bk_desc_t *bk(cudnnBackendDescriptor_t d) {
  bk_desc_t *b = (bk_desc_t *)d;
  return b && b->magic == DNN_MAGIC_BACKEND ? b : NULL;
}

static inline bk_attr_t *attr_find(bk_desc_t *b, cudnnBackendAttributeName_t name) {
  for (int i = 0; i < b->nattrs; i++)
    if (b->attrs[i].name == name) return &b->attrs[i];
  return NULL;
}


/* ---- Reading stored attributes ---- */

/* One int64 attribute (INT64); *v unchanged and 0 returned when absent or of another type. */
static inline int get_i64(bk_desc_t *b, cudnnBackendAttributeName_t name, int64_t *v) {
  bk_attr_t *a = attr_find(b, name);
  if (!a || a->type != CUDNN_TYPE_INT64 || a->count != 1) return 0;
  memcpy(v, a->data, sizeof *v);
  return 1;
}

static inline int get_enum(bk_desc_t *b, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                    int *v) {
  bk_attr_t *a = attr_find(b, name);
  if (!a || a->type != type || a->count != 1) return 0;
  memcpy(v, a->data, sizeof *v);
  return 1;
}

static inline int get_bool(bk_desc_t *b, cudnnBackendAttributeName_t name, int *v) {
  bk_attr_t *a = attr_find(b, name);
  if (!a || a->type != CUDNN_TYPE_BOOLEAN || a->count != 1) return 0;
  *v = *(bool *)a->data;
  return 1;
}

/* A descriptor-valued attribute of exactly `count` elements; NULL when absent. */
static inline bk_desc_t *get_desc(bk_desc_t *b, cudnnBackendAttributeName_t name, int64_t idx) {
  bk_attr_t *a = attr_find(b, name);
  if (!a || a->type != CUDNN_TYPE_BACKEND_DESCRIPTOR || idx >= a->count) return NULL;
  return bk(((cudnnBackendDescriptor_t *)a->data)[idx]);
}

/* A scaling factor, set as FLOAT or DOUBLE; 1 for alpha and 0 for beta when absent. */
static inline float get_scale(bk_desc_t *b, cudnnBackendAttributeName_t name, float dflt) {
  bk_attr_t *a = attr_find(b, name);
  if (!a || a->count != 1) return dflt;
  if (a->type == CUDNN_TYPE_FLOAT) return *(float *)a->data;
  if (a->type == CUDNN_TYPE_DOUBLE) return (float)*(double *)a->data;
  return dflt;
}

/* An int64 array of exactly n elements into v. */
static inline int get_i64s(bk_desc_t *b, cudnnBackendAttributeName_t name, int n, int64_t *v) {
  bk_attr_t *a = attr_find(b, name);
  if (!a || a->type != CUDNN_TYPE_INT64 || a->count != n) return 0;
  memcpy(v, a->data, sizeof(int64_t) * (size_t)n);
  return 1;
}


/* The pointer of tensor uid in variant pack p; NULL when absent. */
void *bk_pack_ptr(const bk_desc_t *p, int64_t uid);

/* Compiles operation d (of a type opgraph.c interprets) at its finalization into d->ogb, with
 * its tensors by value, so that the graph holding it does not need the descriptors it names.
 * Returns the statuses og_compile does. */
cudnnStatus_t og_compile_op(bk_desc_t *d);

/* Frees d->ogb; makes dst->ogb a copy of src's (returns -1 when out of memory). */
void og_free_op(bk_desc_t *d);
int og_copy_op(bk_desc_t *dst, const bk_desc_t *src);

/* Compiles graph b's operations (ops, a descriptor array) for the interpreter: b->og, og_uid,
 * og_ws. Returns SUCCESS, BAD_PARAM (inconsistent), BAD_PARAM_NOT_FINALIZED or a NOT_SUPPORTED
 * status for a graph outside the interpreter's subset. */
cudnnStatus_t og_compile(bk_desc_t *b, const bk_attr_t *ops);

/* Launches plan's compiled graph with pack's pointers, by-value scalars and workspace on the
 * handle's stream. */
cudnnStatus_t og_execute(cudnnHandle_t handle, const bk_desc_t *plan, const bk_desc_t *pack);

#endif
