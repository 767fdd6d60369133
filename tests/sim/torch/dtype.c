/* dtype.c — the element types of PyTorch's kernels on the CPU: sizes, names, loads, stores and
 * the conversions of static_cast (c10::Half and c10::BFloat16 round to nearest even, as their
 * constructors from float do; floating to integer truncates toward zero).
 */
#include <math.h>
#include <string.h>

#include "common/halfconv.h"
#include "twins.h"

size_t simtw_dt_size(simtw_dt_t dt) {
  switch (dt) {
    case DT_U8: case DT_I8: case DT_BOOL: return 1;
    case DT_I16: case DT_F16: case DT_BF16: case DT_U16: return 2;
    case DT_I32: case DT_F32: case DT_U32: return 4;
    case DT_I64: case DT_F64: return 8;
    default: return 0;
  }
}

int simtw_dt_is_float(simtw_dt_t dt) {
  return dt == DT_F16 || dt == DT_F32 || dt == DT_F64 || dt == DT_BF16;
}

simtw_dt_t simtw_dt_parse(const char *s, const char **end) {
  static const struct {
    const char *name;
    simtw_dt_t dt;
  } names[] = {
      {"float", DT_F32}, {"double", DT_F64}, {"c10::Half", DT_F16}, {"c10::BFloat16", DT_BF16},
      {"long", DT_I64}, {"int", DT_I32}, {"short", DT_I16}, {"signed char", DT_I8},
      {"unsigned char", DT_U8}, {"bool", DT_BOOL}, {"unsigned int", DT_U32}, {"unsigned short", DT_U16},
  };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    size_t n = strlen(names[i].name);
    if (strncmp(s, names[i].name, n) == 0 && (!s[n] || strchr(",)> ", s[n]))) {
      if (end) *end = s + n;
      return names[i].dt;
    }
  }
  return DT_NONE;
}

const char *simtw_dt_float_then(const char *s, const char *rest, int *dt) {
  const char *e;
  if (!s) return NULL;
  simtw_dt_t t = simtw_dt_parse(s, &e);
  if (t != DT_F32 && t != DT_F16 && t != DT_BF16) return NULL;
  *dt = t;
  return strncmp(e, rest, strlen(rest)) == 0 ? e + strlen(rest) : NULL;
}

simtw_val_t simtw_fval(double f) { return (simtw_val_t){.f = f, .is_f = 1, .raw_dt = 0}; }
simtw_val_t simtw_ival(int64_t i) { return (simtw_val_t){.i = i, .is_f = 0, .raw_dt = 0}; }

/* A float16 or bfloat16 element of bits v, its bits kept. */
static simtw_val_t half_val(simtw_dt_t dt, uint16_t v) {
  simtw_val_t r = simtw_fval(dt == DT_F16 ? simh_half_to_float(v) : simh_bf16_to_float(v));
  r.raw = v, r.raw_dt = dt;
  return r;
}

simtw_val_t simtw_load(simtw_dt_t dt, const void *p) {
  switch (dt) {
    case DT_U8: return simtw_ival(*(const uint8_t *)p);
    case DT_I8: return simtw_ival(*(const int8_t *)p);
    case DT_BOOL: return simtw_ival(*(const uint8_t *)p != 0);
    case DT_I16: { int16_t v; memcpy(&v, p, 2); return simtw_ival(v); }
    case DT_I32: { int32_t v; memcpy(&v, p, 4); return simtw_ival(v); }
    case DT_U32: { uint32_t v; memcpy(&v, p, 4); return simtw_ival(v); }
    case DT_U16: { uint16_t v; memcpy(&v, p, 2); return simtw_ival(v); }
    case DT_I64: { int64_t v; memcpy(&v, p, 8); return simtw_ival(v); }
    case DT_F16: { uint16_t v; memcpy(&v, p, 2); return half_val(DT_F16, v); }
    case DT_BF16: { uint16_t v; memcpy(&v, p, 2); return half_val(DT_BF16, v); }
    case DT_F32: { float v; memcpy(&v, p, 4); return simtw_fval(v); }
    case DT_F64: { double v; memcpy(&v, p, 8); return simtw_fval(v); }
    default: return simtw_ival(0);
  }
}

simtw_val_t simtw_cast(simtw_val_t v, simtw_dt_t dt) {
  if (v.is_f && v.raw_dt && v.raw_dt == dt) return v; /* to its own type: the same bits */
  if (simtw_dt_is_float(dt)) {
    /* From an integer: one rounding, to the target (through float for half and bfloat16, as
     * c10's constructors take a float). */
    float f32 = v.is_f ? (float)v.f : (float)v.i;
    switch (dt) {
      case DT_F64: return simtw_fval(v.is_f ? v.f : (double)v.i);
      case DT_F32: return simtw_fval(f32);
      case DT_F16: return simtw_fval(simh_half_to_float(simh_float_to_half(f32)));
      default: return simtw_fval(simh_bf16_to_float(simh_float_to_bf16(f32)));
    }
  }
  if (dt == DT_BOOL) return simtw_ival(v.is_f ? v.f != 0.0 : v.i != 0);
  int64_t n = v.is_f ? (isnan(v.f) ? 0 : (int64_t)v.f) : v.i;
  switch (dt) {
    case DT_U8: return simtw_ival((uint8_t)n);
    case DT_I8: return simtw_ival((int8_t)n);
    case DT_I16: return simtw_ival((int16_t)n);
    case DT_I32: return simtw_ival((int32_t)n);
    case DT_U32: return simtw_ival((uint32_t)n);
    case DT_U16: return simtw_ival((uint16_t)n);
    default: return simtw_ival(n);
  }
}

void simtw_store(simtw_dt_t dt, void *p, simtw_val_t v) {
  v = simtw_cast(v, dt);
  switch (dt) {
    case DT_U8: case DT_I8: case DT_BOOL: *(uint8_t *)p = (uint8_t)v.i; break;
    case DT_I16: case DT_U16: { uint16_t x = (uint16_t)v.i; memcpy(p, &x, 2); break; }
    case DT_I32: case DT_U32: { uint32_t x = (uint32_t)v.i; memcpy(p, &x, 4); break; }
    case DT_I64: memcpy(p, &v.i, 8); break;
    case DT_F16: { uint16_t x = v.raw_dt == DT_F16 ? v.raw : simh_float_to_half((float)v.f); memcpy(p, &x, 2); break; }
    case DT_BF16: { uint16_t x = v.raw_dt == DT_BF16 ? v.raw : simh_float_to_bf16((float)v.f); memcpy(p, &x, 2); break; }
    case DT_F32: { float x = (float)v.f; memcpy(p, &x, 4); break; }
    case DT_F64: memcpy(p, &v.f, 8); break;
    default: break;
  }
}
