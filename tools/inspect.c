/* inspect.c — autograph-inspect: lists the CUDA kernels in files and their parameter layouts.
 *
 * Usage: autograph-inspect [--json] [--count] [--no-demangle] FILE…   (see usage() below)
 *
 * Contract: every kernel of every cubin image in each FILE is reported once per architecture
 * image, through the library's own parser (src/elf.c), so what this prints is exactly what the
 * engine and the simulator believe about a kernel. A file is recognised by its content: a fatbin
 * container (one or several back to back), a cubin (ELF, e_machine 190), or a host ELF file
 * (executable, shared library, object) whose .nv_fatbin / __nv_relfatbin sections are walked.
 * Files are mapped read-only, never read whole, so libcublasLt.so.13 (~42k kernels) takes
 * seconds. A file that cannot be read or parsed produces one line on stderr naming the file, the
 * byte offset and the reason; the kernels reported before the problem stay in the output, the
 * other files are still inspected, and the exit status is 1. Exit status 2 is a usage error.
 * The --json output is one array for all files and stays valid JSON whatever fails.
 *
 * Names are demangled in-process with __cxa_demangle from libstdc++ (the same demangler as
 * c++filt): one call per kernel, no helper process to feed and read back 42k names through a
 * pipe, and nothing to find on PATH at run time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf.h"

/* libstdc++'s demangler (<cxxabi.h> is C++ only). */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

#define WRAPPER_MAGIC   0x466243B1u
#define CONTAINER_MAGIC 0xBA55ED50u
#define EM_CUDA_        190

typedef struct opts {
  bool json, count, demangle;
} opts_t;

/* State for the kernels of one file. */
typedef struct run {
  const opts_t *o;
  const char *file;
  FILE *out;
  long kernels;        /* in this file */
  long *total;         /* over all files, for the JSON separators */
  char *dbuf;          /* demangling buffer, grown by __cxa_demangle */
  size_t dlen;
  unsigned arch_count[256];
} run_t;

static void usage(FILE *f) {
  fputs(
      "Usage: autograph-inspect [OPTIONS] FILE...\n"
      "\n"
      "Lists the CUDA kernels in each FILE: architecture, mangled and demangled name, number\n"
      "of parameters, size of the parameter block, and each parameter's offset and size in it,\n"
      "as the libautograph engine sees them. FILE may be\n"
      "  - a host ELF file that carries device code: an executable built by nvcc, a shared\n"
      "    library such as libcublasLt.so.13, an object file (its .nv_fatbin section, or\n"
      "    __nv_relfatbin for relocatable device code);\n"
      "  - a fatbin (nvcc -fatbin output: one fatbin container, or several back to back);\n"
      "  - a cubin (nvcc -cubin output).\n"
      "zstd-compressed entries are decompressed; PTX entries carry no layouts and are skipped.\n"
      "A kernel is listed once per architecture image that contains it.\n"
      "\n"
      "Options:\n"
      "  --json          print one JSON array for all files, one object per kernel per\n"
      "                  architecture image:\n"
      "                    {\"file\": str, \"arch\": int, \"name\": mangled, \"demangled\": str,\n"
      "                     \"param_bytes\": int, \"params\": [{\"offset\": int, \"size\": int}]}\n"
      "                  (\"demangled\" equals \"name\" for names that are not C++-mangled)\n"
      "  --count         print only, per file, the number of kernels and of kernels per arch\n"
      "  --no-demangle   do not demangle names (text output shows the mangled name only)\n"
      "  -h, --help      show this help\n"
      "\n"
      "Text output: for each file a line \"FILE:\", then one line per kernel:\n"
      "  sm_ARCH  NPARAMS  BYTES  OFFSET+SIZE,...  MANGLED  [DEMANGLED]\n"
      "(DEMANGLED is shown when it differs from MANGLED; \"-\" stands for no parameters).\n"
      "\n"
      "Errors: a file that cannot be opened, is not one of the above, or is truncated or\n"
      "corrupt gives one line on stderr, \"autograph-inspect: FILE: offset 0xN: REASON\"; the\n"
      "kernels found before the problem are still listed and the other files still inspected.\n"
      "\n"
      "Exit status: 0 if every file was inspected, 1 if any file failed, 2 on a usage error.\n",
      f);
}

/* ---- output ------------------------------------------------------------------------------- */

static void json_string(FILE *f, const char *s) {
  putc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\') {
      putc('\\', f);
      putc(*p, f);
    } else if (*p < 0x20 || *p >= 0x7f) {
      /* Names are ASCII in practice; anything else is escaped rather than trusted to be UTF-8. */
      fprintf(f, "\\u%04x", *p);
    } else {
      putc(*p, f);
    }
  }
  putc('"', f);
}

/* The demangled name, or `name` itself when it is not a C++ name (extern "C" kernels). */
static const char *demangled(run_t *r, const char *name) {
  if (!r->o->demangle || strncmp(name, "_Z", 2) != 0) return name;
  int status = 0;
  char *d = __cxa_demangle(name, r->dbuf, &r->dlen, &status);
  if (status != 0 || !d) return name;
  r->dbuf = d; /* it may have grown the buffer with realloc */
  return d;
}

static int on_kernel(const ag_kernel_desc_t *k, void *ctx) {
  run_t *r = ctx;
  FILE *f = r->out;
  r->kernels++;
  if (k->arch > 0 && k->arch < 256) r->arch_count[k->arch]++;
  if (r->o->count) return 0;
  const char *dn = demangled(r, k->name);
  if (r->o->json) {
    fputs((*r->total)++ ? ",\n " : "\n ", f);
    fputs("{\"file\": ", f);
    json_string(f, r->file);
    fprintf(f, ", \"arch\": %d, \"name\": ", k->arch);
    json_string(f, k->name);
    fputs(", \"demangled\": ", f);
    json_string(f, dn);
    fprintf(f, ", \"param_bytes\": %u, \"params\": [", k->param_bytes);
    for (uint32_t i = 0; i < k->nparams; i++)
      fprintf(f, "%s{\"offset\": %u, \"size\": %u}", i ? ", " : "", k->params[i].offset,
              k->params[i].size);
    fputs("]}", f);
    return 0;
  }
  fprintf(f, "  sm_%-3d %3u %6u  ", k->arch, k->nparams, k->param_bytes);
  if (!k->nparams) fputc('-', f);
  for (uint32_t i = 0; i < k->nparams; i++)
    fprintf(f, "%s%u+%u", i ? "," : "", k->params[i].offset, k->params[i].size);
  fprintf(f, "  %s", k->name);
  if (dn != k->name) fprintf(f, "  %s", dn);
  fputc('\n', f);
  return 0;
}

/* ---- one file ----------------------------------------------------------------------------- */

static void report(const char *file, size_t offset, const char *msg) {
  fflush(stdout); /* keep stdout and stderr in order when both go to a terminal */
  fprintf(stderr, "autograph-inspect: %s: offset 0x%zx: ", file, offset);
  /* A message may quote a name read from the corrupt input itself: keep the line printable. */
  for (const unsigned char *p = (const unsigned char *)msg; *p; p++)
    if (*p < 0x20 || *p >= 0x7f) fprintf(stderr, "\\x%02x", *p);
    else fputc(*p, stderr);
  fputc('\n', stderr);
}

/* Walks one mapped file. Returns 0, or -AG_E… with *err filled in. */
static int walk(const uint8_t *p, size_t n, run_t *r, ag_image_err_t *err) {
  uint32_t magic = 0;
  memcpy(&magic, p, n < 4 ? n : 4);
  if (n >= 4 && magic == WRAPPER_MAGIC) {
    /* A wrapper holds a pointer into a process's memory, not the data: never follow it. */
    err->offset = 0;
    snprintf(err->msg, sizeof(err->msg), "fatbin wrapper (it points into a process's memory; "
                                         "inspect the fatbin or the host file instead)");
    return -AG_EUNSUP;
  }
  /* A CUDA ELF is a cubin; any other ELF is a host file that may carry fatbins. */
  if (n >= 4 && !memcmp(p, ELFMAG, SELFMAG) &&
      (n < offsetof(Elf64_Ehdr, e_machine) + 2 ||
       p[offsetof(Elf64_Ehdr, e_machine)] != EM_CUDA_ ||
       p[offsetof(Elf64_Ehdr, e_machine) + 1] != 0)) {
    if (n < sizeof(Elf64_Ehdr)) {
      err->offset = 0;
      snprintf(err->msg, sizeof(err->msg), "truncated ELF header (%zu bytes)", n);
      return -AG_ETRUNC;
    }
    return ag__elf_fatbins(p, n, on_kernel, r, err);
  }
  int rc = ag__image_kernels(p, n, on_kernel, r, err);
  if (rc == -AG_EINVAL && n >= 4) /* the parser's message does not know about host files */
    snprintf(err->msg, sizeof(err->msg),
             "not a fatbin, cubin or ELF file (starts with 0x%08x)", magic);
  return rc;
}

/* Inspects one file. Returns 0 or 1 (failed). */
static int inspect(const char *file, const opts_t *o, long *total, FILE *out) {
  run_t r = {.o = o, .file = file, .out = out, .total = total};
  int fd = open(file, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0) {
    fflush(stdout);
    fprintf(stderr, "autograph-inspect: %s: %s\n", file, strerror(errno));
    if (fd >= 0) close(fd);
    return 1;
  }
  if (!S_ISREG(st.st_mode) || st.st_size == 0) {
    fflush(stdout);
    fprintf(stderr, "autograph-inspect: %s: %s\n", file,
            S_ISREG(st.st_mode) ? "empty file" : "not a regular file");
    close(fd);
    return 1;
  }
  size_t n = (size_t)st.st_size;
  void *m = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (m == MAP_FAILED) {
    fflush(stdout);
    fprintf(stderr, "autograph-inspect: %s: mmap: %s\n", file, strerror(errno));
    return 1;
  }
  /* The whole file is read front to back, decompressing as it goes. */
  madvise(m, n, MADV_SEQUENTIAL);
  if (!o->json && !o->count) fprintf(out, "%s:\n", file);
  ag_image_err_t err = {0};
  int rc = walk(m, n, &r, &err);
  munmap(m, n);
  free(r.dbuf);
  if (rc == -AG_ENOENT) {
    /* A host file without device code is a valid answer (no kernels), not a failure. */
    fflush(stdout);
    fprintf(stderr, "autograph-inspect: %s: no CUDA device code\n", file);
    rc = 0;
  }
  if (o->count) {
    fprintf(out, "%s: %ld kernels", file, r.kernels);
    const char *sep = " (";
    for (int a = 0; a < 256; a++)
      if (r.arch_count[a]) {
        fprintf(out, "%ssm_%d: %u", sep, a, r.arch_count[a]);
        sep = ", ";
      }
    fputs(*sep == ',' ? ")\n" : "\n", out);
  }
  if (rc) {
    report(file, err.offset, err.msg[0] ? err.msg : "cannot be parsed");
    return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  opts_t o = {.demangle = true};
  int first = argc;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--")) { first = i + 1; break; }
    if (a[0] != '-' || !a[1]) { first = i; break; }
    if (!strcmp(a, "--json")) o.json = true;
    else if (!strcmp(a, "--count")) o.count = true;
    else if (!strcmp(a, "--no-demangle")) o.demangle = false;
    else if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
    else {
      fprintf(stderr, "autograph-inspect: unknown option %s (see --help)\n", a);
      return 2;
    }
  }
  if (o.json && o.count) {
    fputs("autograph-inspect: --json and --count exclude each other\n", stderr);
    return 2;
  }
  if (first >= argc) {
    usage(stderr);
    return 2;
  }
  /* Large output (a whole cuBLASLt) goes out in big writes. */
  static char obuf[1 << 16];
  setvbuf(stdout, obuf, _IOFBF, sizeof(obuf));
  long total = 0;
  int status = 0;
  if (o.json) fputc('[', stdout);
  for (int i = first; i < argc; i++) status |= inspect(argv[i], &o, &total, stdout);
  if (o.json) fputs(total ? "\n]\n" : "]\n", stdout);
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "autograph-inspect: writing the output: %s\n", strerror(errno));
    return 1;
  }
  return status;
}
