/* registry.c — host stub → (device name, fatbin) map (see registry.h).
 *
 * A small chained hash table under one mutex: registration happens in constructors and lookups
 * once per kernel (the engine caches results), so contention does not matter. The mutex is
 * reinitialised in a forked child, where it may have been held by a thread that no longer
 * exists.
 */
#include "registry.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct fn_entry {
  struct fn_entry *next;
  const void *stub;
  void **handle;
  char *name;
} fn_entry_t;

typedef struct bin_entry {
  struct bin_entry *next;
  void **handle;
  const void *fatbin;
} bin_entry_t;

#define NBUCKETS 1024
static fn_entry_t *fns[NBUCKETS];
static bin_entry_t *bins;
static size_t nfns;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static size_t bucket(const void *p) {
  uintptr_t x = (uintptr_t)p;
  x ^= x >> 17;
  x *= 0x9E3779B97F4A7C15ull;
  return (size_t)(x >> 40) % NBUCKETS;
}

int ag__registry_fatbin(void **handle, const void *fatbin) {
  bin_entry_t *b = malloc(sizeof *b);
  if (!b) return -AG_ENOMEM;
  b->handle = handle;
  b->fatbin = fatbin;
  pthread_mutex_lock(&lock);
  b->next = bins;
  bins = b;
  pthread_mutex_unlock(&lock);
  return 0;
}

int ag__registry_function(void **handle, const void *stub, const char *device_name) {
  fn_entry_t *e;
  if (!stub || !device_name) return -AG_EINVAL;
  if (!(e = malloc(sizeof *e))) return -AG_ENOMEM;
  if (!(e->name = strdup(device_name))) {
    free(e);
    return -AG_ENOMEM;
  }
  e->stub = stub;
  e->handle = handle;
  pthread_mutex_lock(&lock);
  size_t h = bucket(stub);
  e->next = fns[h];
  fns[h] = e;
  nfns++;
  pthread_mutex_unlock(&lock);
  return 0;
}

const void *ag__registry_unregister(void **handle) {
  const void *fatbin = NULL;
  pthread_mutex_lock(&lock);
  for (size_t h = 0; h < NBUCKETS; h++) {
    for (fn_entry_t **pp = &fns[h]; *pp;) {
      fn_entry_t *e = *pp;
      if (e->handle == handle) {
        *pp = e->next;
        free(e->name);
        free(e);
        nfns--;
      } else {
        pp = &e->next;
      }
    }
  }
  for (bin_entry_t **pp = &bins; *pp;) {
    bin_entry_t *b = *pp;
    if (b->handle == handle) {
      *pp = b->next;
      fatbin = b->fatbin;
      free(b);
    } else {
      pp = &b->next;
    }
  }
  pthread_mutex_unlock(&lock);
  return fatbin;
}

int ag__registry_lookup(const void *stub, char *name, size_t size, const void **fatbin) {
  int r = -AG_ENOENT;
  pthread_mutex_lock(&lock);
  for (fn_entry_t *e = fns[bucket(stub)]; e; e = e->next) {
    if (e->stub != stub) continue;
    if (name && size) {
      strncpy(name, e->name, size - 1);
      name[size - 1] = 0;
    }
    if (fatbin) {
      *fatbin = NULL;
      for (bin_entry_t *b = bins; b; b = b->next)
        if (b->handle == e->handle) *fatbin = b->fatbin;
    }
    r = 0;
    break;
  }
  pthread_mutex_unlock(&lock);
  return r;
}

int ag__registry_fatbin_of(const char *name, const void **fatbin) {
  int r = -AG_ENOENT;
  pthread_mutex_lock(&lock);
  for (size_t h = 0; h < NBUCKETS && r; h++)
    for (fn_entry_t *e = fns[h]; e && r; e = e->next) {
      if (strcmp(e->name, name)) continue;
      for (bin_entry_t *b = bins; b; b = b->next)
        if (b->handle == e->handle) *fatbin = b->fatbin, r = 0;
    }
  pthread_mutex_unlock(&lock);
  return r;
}

size_t ag__registry_count(void) {
  pthread_mutex_lock(&lock);
  size_t n = nfns;
  pthread_mutex_unlock(&lock);
  return n;
}

void ag__registry_atfork_child(void) { pthread_mutex_init(&lock, NULL); }
