# Differential testing (tests/difftest, docs/difftest.md): the generator's plugins, the
# programs of the fixed seeds the test case runs (generated here, so that make -j builds them in
# parallel), and the checked-in regression programs.
#
#   make difftest N=200 [START=1000] [HOSTILE=none|all|flag,attr,…] [CONFIGS=…]
#        generates, builds and runs N programs (seeds START…START+N-1) with and without the
#        library; every failure prints its seed and the command that reproduces it.

# tests/difftest/ci-seeds names the programs the test case generates: HOSTILE-SEED, e.g.
# none-3 (ordinary moves only) or modules+reset-12 (gen.py --hostile modules,reset --seed 12;
# nvcc does not take commas in file names).
DT_COMMA := ,
DT_CI_SEEDS := $(shell grep -v '^\#' tests/difftest/ci-seeds 2>/dev/null)
DT_NVCCFLAGS = $(AG_NVCCFLAGS) $(NVCCFLAGS) --extended-lambda -Itests/progs -Itests/difftest -diag-suppress 177
DT_DEPS := tests/difftest/dt.h tests/progs/prog.h tests/progs/fused-twins.h tests/sim/sim_kernel.h
DT_PLUGINS := $(BUILD)/tests/difftest/libdt-plugin-a.so $(BUILD)/tests/difftest/libdt-plugin-b.so
DT_CI_PROGS := $(patsubst %,$(BUILD)/tests/difftest/ci/%,$(DT_CI_SEEDS))
DT_REGRESS := $(patsubst tests/difftest/regress/%.cu,$(BUILD)/tests/difftest/regress/%,$(wildcard tests/difftest/regress/*.cu))
AG_TEST_ALL += $(DT_PLUGINS) $(DT_CI_PROGS) $(DT_REGRESS)

$(BUILD)/tests/difftest/libdt-plugin-%.so: tests/difftest/plugin.cu tests/progs/prog.h
	@mkdir -p $(dir $@)
	$(NVCC) $(AG_NVCCFLAGS) $(NVCCFLAGS) -Itests/progs -shared -Xcompiler -fPIC -Xcompiler -falign-functions=64 \
	    $(if $(filter b,$*),-DDT_PLUGIN_B) -o $@ $< $(AG_NVLIBS)

$(BUILD)/tests/difftest/ci/%.cu: tests/difftest/gen.py tests/difftest/ci-seeds
	@mkdir -p $(dir $@)
	python3 tests/difftest/gen.py --hostile $(subst +,$(DT_COMMA),$(firstword $(subst -, ,$*))) --seed $(lastword $(subst -, ,$*)) -o $@

$(BUILD)/tests/difftest/ci/%: $(BUILD)/tests/difftest/ci/%.cu $(DT_DEPS)
	$(NVCC) $(DT_NVCCFLAGS) -o $@ $< $(AG_NVLIBS) -lpthread -ldl

$(BUILD)/tests/difftest/regress/%: tests/difftest/regress/%.cu $(DT_DEPS)
	@mkdir -p $(dir $@)
	$(NVCC) $(DT_NVCCFLAGS) -o $@ $< $(AG_NVLIBS) -lpthread -ldl

.PRECIOUS: $(BUILD)/tests/difftest/ci/%.cu
.PHONY: difftest
N ?= 50
START ?= 1000
HOSTILE ?= none
CONFIGS ?= default,repeats1,short,long,fuse,seed7,fail
difftest: $(AG_ALL) $(DT_PLUGINS) $(DT_IMAGE) $(CUBINS)
	BUILD=$(BUILD) CUDA_HOME=$(CUDA_HOME) NVCC=$(NVCC) python3 tests/difftest/difftest.py \
	    --count $(N) --start $(START) --hostile $(HOSTILE) --configs $(CONFIGS) --jobs 2

# A shared object whose data is tests/kernels/dt-mod.cu's cubin: a program loads the module from
# it with cuModuleLoadData and dlcloses it.
DT_IMAGE := $(BUILD)/tests/difftest/libdt-image.so
AG_TEST_ALL += $(DT_IMAGE)
$(DT_IMAGE): $(BUILD)/tests/kernels/dt-mod.cubin
	@mkdir -p $(dir $@)
	python3 -c 'import sys; d = open(sys.argv[1], "rb").read(); print("__attribute__((aligned(8), visibility(\"default\"))) const unsigned char dt_image[] = {" + ",".join(map(str, d)) + "};")' $< >$(@:.so=.c)
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -fPIC -o $@ $(@:.so=.c)
