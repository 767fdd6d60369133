/* ptx.c — the kernels of a PTX text image, for the simulated cuModuleLoadData and friends.
 *
 * The real driver accepts NUL-terminated PTX text wherever it accepts a cubin and compiles it
 * for the device when it is loaded. The simulated device runs CPU twins, so it only needs each
 * kernel's name and parameter layout, which the `.entry` declarations give:
 *   .visible .entry name(.param .u64 name_param_0, .param .align 8 .b8 name_param_1[16], …)
 * Each parameter sits at the next multiple of its alignment (`.align N`, else its element
 * size), as in the parameter bank of a compiled kernel. Text that does not begin (after blank
 * lines and comments) with a `.version` directive is not PTX.
 */
#include "drv.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static const char *skip_space(const char *p) {
  for (;;) {
    while (*p && isspace((unsigned char)*p)) p++;
    if (p[0] == '/' && p[1] == '/') {
      while (*p && *p != '\n') p++;
    } else if (p[0] == '/' && p[1] == '*') {
      const char *e = strstr(p + 2, "*/");
      if (!e) return p + strlen(p);
      p = e + 2;
    } else {
      return p;
    }
  }
}

int drv_is_ptx(const void *image) {
  const char *p = skip_space(image);
  return strncmp(p, ".version", 8) == 0 && isspace((unsigned char)p[8]);
}

static size_t ident(const char *p) {
  size_t n = 0;
  while (isalnum((unsigned char)p[n]) || p[n] == '_' || p[n] == '$' || p[n] == '.') n++;
  return n;
}

static uint32_t type_size(const char *t, size_t n) {
  /* .u8 .s8 .b8 … .f64: the digits after the one-letter kind. */
  if (n < 3 || t[0] != '.') return 0;
  if (!strchr("usbf", t[1])) return 0;
  long bits = strtol(t + 2, NULL, 10);
  return bits == 8 || bits == 16 || bits == 32 || bits == 64 ? (uint32_t)bits / 8 : 0;
}

/* Parses one parameter list starting after '('; fills params, returns 0 or -AG_ECORRUPT. */
static int parse_params(const char **pp, ag_kparam_t *params, uint32_t *np, uint32_t *bytes) {
  const char *p = *pp;
  uint32_t n = 0, off = 0;
  for (;;) {
    p = skip_space(p);
    if (*p == ')') break;
    if (strncmp(p, ".param", 6) != 0 || n == 256) return -AG_ECORRUPT;
    p += 6;
    uint32_t align = 0, size = 0, count = 1;
    for (;;) { /* directives: .align N, the type, state-space qualifiers (.ptr .global) */
      p = skip_space(p);
      if (*p != '.') break;
      size_t len = ident(p);
      if (len == 6 && !strncmp(p, ".align", 6)) {
        p = skip_space(p + len);
        align = (uint32_t)strtoul(p, (char **)&p, 10);
        continue;
      }
      uint32_t s = type_size(p, len);
      if (s && !size) size = s;
      p += len;
    }
    size_t len = ident(p); /* the parameter's name */
    if (!len || !size) return -AG_ECORRUPT;
    p = skip_space(p + len);
    if (*p == '[') {
      count = (uint32_t)strtoul(p + 1, (char **)&p, 10);
      if (*p != ']' || !count) return -AG_ECORRUPT;
      p = skip_space(p + 1);
    }
    if (!align) align = size;
    if (align & (align - 1)) return -AG_ECORRUPT;
    off = (off + align - 1) & ~(align - 1);
    params[n].offset = off, params[n].size = size * count;
    off += size * count;
    n++;
    if (*p == ',') p++;
  }
  *pp = p + 1;
  *np = n, *bytes = off;
  return 0;
}

int drv_ptx_kernels(const void *image, ag_kernel_cb cb, void *ctx) {
  const char *p = image;
  int arch = 0, r;
  const char *t = strstr(p, ".target sm_");
  if (t) arch = (int)strtol(t + 11, NULL, 10);
  while ((p = strstr(p, ".entry")) != NULL) {
    if (!isspace((unsigned char)p[6])) {
      p += 6;
      continue;
    }
    p = skip_space(p + 6);
    size_t len = ident(p);
    if (!len || len > 1023) return -AG_ECORRUPT;
    char name[1024];
    memcpy(name, p, len);
    name[len] = 0;
    p = skip_space(p + len);
    uint32_t n = 0, bytes = 0;
    ag_kparam_t *mine = malloc(256 * sizeof *mine);
    if (!mine) return -AG_ENOMEM;
    if (*p == '(') {
      p++;
      if ((r = parse_params(&p, mine, &n, &bytes))) {
        free(mine);
        return r;
      }
    }
    ag_kernel_desc_t d = {name, arch, n, mine, bytes};
    r = cb(&d, ctx);
    free(mine);
    if (r) return r;
  }
  return 0;
}
