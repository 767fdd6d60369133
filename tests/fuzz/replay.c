/* replay.c — a plain driver for the fuzz targets: runs LLVMFuzzerTestOneInput once on every
 * file named on the command line (a folder stands for every regular file in it), each copied
 * into a heap buffer of exactly its length so that a sanitizer or valgrind sees any read past
 * the end. Built with any C compiler, without libFuzzer, so CI can replay the committed corpus
 * and regression inputs (tests/cases/rel-fuzz-corpus.sh). Prints one line per folder or file
 * and a total; exits 0 when every input ran (a finding aborts the process instead), 2 when an
 * input cannot be read.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "replay: cannot open %s\n", path);
    return -1;
  }
  size_t cap = 4096, n = 0;
  uint8_t *buf = malloc(cap);
  for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
    n += got;
    if (n == cap) {
      uint8_t *bigger = realloc(buf, cap *= 2);
      if (!bigger) free(buf);
      buf = bigger;
    }
  }
  fclose(f);
  if (!buf) return -1;
  uint8_t *exact = malloc(n ? n : 1); /* exactly n bytes: an overread leaves the block */
  if (!exact) {
    free(buf);
    return -1;
  }
  memcpy(exact, buf, n);
  free(buf);
  LLVMFuzzerTestOneInput(exact, n);
  free(exact);
  return 0;
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv) {
  long total = 0;
  int bad = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      fprintf(stderr, "replay: cannot stat %s\n", argv[i]);
      bad = 1;
      continue;
    }
    if (!S_ISDIR(st.st_mode)) {
      if (run_file(argv[i]) != 0) bad = 1;
      else total++;
      continue;
    }
    DIR *d = opendir(argv[i]);
    if (!d) {
      bad = 1;
      continue;
    }
    char **names = NULL;
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));) {
      if (e->d_name[0] == '.') continue;
      char **more = realloc(names, (n + 1) * sizeof *names);
      if (!more) break;
      names = more;
      names[n] = malloc(strlen(argv[i]) + strlen(e->d_name) + 2);
      if (!names[n]) break;
      sprintf(names[n], "%s/%s", argv[i], e->d_name);
      n++;
    }
    closedir(d);
    /* The same order on every run (an empty folder has no array: qsort wants one). */
    if (n > 1) qsort(names, n, sizeof *names, cmp_names);
    long ran = 0;
    for (size_t j = 0; j < n; j++) {
      if (stat(names[j], &st) == 0 && S_ISREG(st.st_mode)) {
        if (run_file(names[j]) != 0) bad = 1;
        else ran++;
      }
      free(names[j]);
    }
    free(names);
    printf("replay: %s: %ld inputs\n", argv[i], ran);
    total += ran;
  }
  printf("replay: %ld inputs, no finding\n", total);
  return bad ? 2 : 0;
}
