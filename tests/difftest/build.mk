# Differential testing (tests/difftest, docs/difftest.md): the generator's plugins, the
# programs of the fixed seeds the test case runs (generated here, so that make -j builds them in
# parallel), and the checked-in regression programs.
#
#   make difftest N=200 [START=1000] [HOSTILE=none|all|flag,attr,…] [CONFIGS=…]
#        generates, builds and runs N programs (seeds START…START+N-1) with and without the
#        library; every failure prints its seed and the command that reproduces it.

DT_CI_SEEDS := $(shell cat tests/difftest/ci-seeds 2>/dev/null)
DT_NVCCFLAGS = $(AG_NVCCFLAGS) -O1 --extended-lambda -Itests/progs -Itests/difftest -diag-suppress 177
DT_DEPS := tests/difftest/dt.h tests/progs/prog.h tests/progs/fused-twins.h tests/sim/sim_kernel.h
DT_PLUGINS := $(BUILD)/tests/difftest/libdt-plugin-a.so $(BUILD)/tests/difftest/libdt-plugin-b.so
DT_CI_PROGS := $(patsubst %,$(BUILD)/tests/difftest/ci/seed%,$(DT_CI_SEEDS))
DT_REGRESS := $(patsubst tests/difftest/regress/%.cu,$(BUILD)/tests/difftest/regress/%,$(wildcard tests/difftest/regress/*.cu))
AG_TEST_ALL += $(DT_PLUGINS) $(DT_CI_PROGS) $(DT_REGRESS)

$(BUILD)/tests/difftest/libdt-plugin-%.so: tests/difftest/plugin.cu tests/progs/prog.h
	@mkdir -p $(dir $@)
	$(NVCC) $(AG_NVCCFLAGS) -O1 -Itests/progs -shared -Xcompiler -fPIC,-falign-functions=64 \
	    $(if $(filter b,$*),-DDT_PLUGIN_B) -o $@ $< $(AG_NVLIBS)

$(BUILD)/tests/difftest/ci/seed%.cu: tests/difftest/gen.py
	@mkdir -p $(dir $@)
	python3 tests/difftest/gen.py --seed $* --hostile none -o $@

$(BUILD)/tests/difftest/ci/seed%: $(BUILD)/tests/difftest/ci/seed%.cu $(DT_DEPS)
	$(NVCC) $(DT_NVCCFLAGS) -o $@ $< $(AG_NVLIBS) -lpthread -ldl

$(BUILD)/tests/difftest/regress/%: tests/difftest/regress/%.cu $(DT_DEPS)
	@mkdir -p $(dir $@)
	$(NVCC) $(DT_NVCCFLAGS) -o $@ $< $(AG_NVLIBS) -lpthread -ldl

.PRECIOUS: $(BUILD)/tests/difftest/ci/seed%.cu
.PHONY: difftest
N ?= 50
START ?= 1000
HOSTILE ?= none
CONFIGS ?= default,repeats1,short,long,fuse,seed7,fail
difftest: $(AG_ALL) $(DT_PLUGINS) $(CUBINS)
	BUILD=$(BUILD) CUDA_HOME=$(CUDA_HOME) NVCC=$(NVCC) python3 tests/difftest/difftest.py \
	    --count $(N) --start $(START) --hostile $(HOSTILE) --configs $(CONFIGS) --jobs 2
