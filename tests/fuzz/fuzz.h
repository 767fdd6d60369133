/* fuzz.h — the one entry point every fuzz target in tests/fuzz defines.
 *
 * Each target is a file tests/fuzz/fuzz-<name>.c defining LLVMFuzzerTestOneInput, built two
 * ways by tests/fuzz/build.mk: with clang's libFuzzer (`make fuzz`, coverage-guided, bounded
 * time) and with the plain driver tests/fuzz/replay.c (any compiler, no libFuzzer), which feeds
 * it every file of a corpus so CI can replay the committed seeds and regression inputs. A target
 * must accept any bytes: it returns 0, and a crash, sanitizer report or failed assertion is a
 * finding. Targets share no state between inputs.
 */
#ifndef AG_FUZZ_H
#define AG_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A broken property of the code under test: report it and stop, so the fuzzer keeps the input. */
#define FUZZ_ASSERT(cond)                                                                  \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      fprintf(stderr, "%s:%d: fuzz assertion failed: %s\n", __FILE__, __LINE__, #cond);  \
      abort();                                                                             \
    }                                                                                      \
  } while (0)

#endif
