# The benchmark (`make bench`; see tools/bench and docs-bench.md). Not part of `make test`:
# it times things, and no test may depend on timing.
#
#   tests/bench/*.cu  benchmark programs, built like the test programs (nvcc, shared runtime,
#                     exported CPU twins) into $(BUILD)/tests/bench/NAME
#
# `make bench` builds the library, the simulator and the programs, then runs tools/bench, which
# prints the tables on stdout. BENCH_ARGS passes options to it (e.g. BENCH_ARGS=--quick).

BENCH_PROGS := $(patsubst tests/bench/%.cu,$(BUILD)/tests/bench/%,$(wildcard tests/bench/*.cu))
BENCH_ARGS ?=

.PHONY: bench bench-build
bench-build: $(BUILD)/libautograph.so $(SIM_LIBS) $(BENCH_PROGS)

bench: bench-build
	tools/bench --build $(BUILD) $(BENCH_ARGS)

# The cost probe also runs in the test suite (tests/cases/bench-launch-costs.sh: that it runs
# and agrees with itself, not its figures) and in tools/gpu-check (its figures).
AG_TEST_ALL += $(BUILD)/tests/bench/launch-costs

$(BUILD)/tests/bench/%: tests/bench/%.cu $(wildcard tests/*.h tests/sim/*.h)
	@mkdir -p $(dir $@)
	$(NVCC) $(AG_NVCCFLAGS) $(NVCCFLAGS) -o $@ $< $(AG_NVLIBS) -lpthread

# What reading images at load costs: the library's kinfo.c timed on the fatbins of a
# large host library (libcublasLt.so.13). Run by hand: $(BUILD)/tests/bench/image-load [LIB].
BENCH_IMAGE_LOAD := $(BUILD)/tests/bench/image-load
bench-build: $(BENCH_IMAGE_LOAD)
$(BENCH_IMAGE_LOAD): tests/bench/image-load.c $(AG_SRC_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -fvisibility=hidden,$(AG_CFLAGS)) $(CFLAGS) -o $@ $< $(AG_SRC_OBJS) $(AG_LIBS) -lm
