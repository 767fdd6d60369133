# libautograph — build, test and install.
#
# Variables (override on the command line, e.g. `make CUDA_HOME=/opt/cuda`):
#   CC         C compiler for the library, the simulator and the C tests (default: cc)
#   CUDA_HOME  CUDA toolkit: headers and nvcc (default: /usr/local/cuda). The library is built
#              against the headers only and links neither libcudart nor libcuda.
#   NVCC       CUDA compiler for the test programs (default: $(CUDA_HOME)/bin/nvcc)
#   CFLAGS     optimisation and debug flags (default: -O2 -g); warnings and ABI flags are added
#   PREFIX     install prefix (default: /usr/local); DESTDIR is honoured
#   BUILD      output folder (default: build)
#   TEST_JOBS  tests run at once by `make test` (default: the number of CPUs)
#
# Targets:
#   all        build/libautograph.so and the CPU simulator in build/sim/
#   test       everything, then the whole test suite (tests/run-tests)
#   clean      remove $(BUILD)
#
# The build is split into fragments, one per part of the tree, included below; each names its
# sources by wildcard, so adding a file needs no edit here.

CC        ?= cc
CUDA_HOME ?= /usr/local/cuda
NVCC      ?= $(CUDA_HOME)/bin/nvcc
PREFIX    ?= /usr/local
BUILD     ?= build
CFLAGS    ?= -O2 -g
TEST_JOBS ?= $(shell nproc 2>/dev/null || echo 1)

# Flags every C file gets, whatever CFLAGS says.
AG_CFLAGS := -std=gnu11 -Wall -Wextra -Werror -Wstrict-prototypes -fPIC \
             -fvisibility=hidden -ftls-model=initial-exec \
             -I$(CUDA_HOME)/include -Isrc -I$(BUILD)/gen
AG_LIBS   := -ldl -lpthread

# nvcc flags for test programs: the shared runtime (so build/sim can stand in for it) and
# exported host symbols (so the simulator finds each kernel's CPU twin, sim_<name>).
NVCCFLAGS ?= -O2 -g
AG_NVCCFLAGS := -cudart shared -Xcompiler -rdynamic -Itests -Itests/sim -Isrc
AG_NVLIBS := -L$(CUDA_HOME)/lib64 -L$(CUDA_HOME)/lib64/stubs -Xlinker --as-needed -lcudnn -lcuda

.PHONY: all test clean
all:

include shims/build.mk
include tests/sim/build.mk
include tests/build.mk
# Optional fragments: benchmarks, tools (inspector, launcher, install), sanitizer and analysis
# targets.
-include tests/bench/build.mk tools/build.mk tests/check.mk tests/fuzz/build.mk examples/build.mk
# The NVTX recording tool the NVTX test loads.
-include tests/nvtx/build.mk
# Differential testing: generated programs, their plugins, `make difftest`.
-include tests/difftest/build.mk

all: $(AG_ALL)

test: all $(AG_TEST_ALL)
	AG_TEST_JOBS=$(TEST_JOBS) BUILD=$(BUILD) CUDA_HOME=$(CUDA_HOME) tests/run-tests

clean:
	rm -rf $(BUILD)

# Generic compile rule for C files anywhere in the tree.
$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(AG_CFLAGS) $(CFLAGS) $(CPPFLAGS) -MMD -MP -c -o $@ $<

-include $(shell find $(BUILD)/obj $(BUILD)/sim/obj -name '*.d' 2>/dev/null)
