# Tests (see tests/README.md for the layout and tests/run-tests for the runner).
#
#   tests/unit/*.c    C unit tests, linked with the engine's objects (src/) and the simulated
#                     driver; run with LD_LIBRARY_PATH=$(BUILD)/sim.
#   tests/unit/*.cu   CUDA C unit tests (nvcc, shared runtime), run on the simulator.
#   tests/progs/*.cu  CUDA C test programs that the preload tests run with and without the library.
#   tests/kernels/*.cu device code built into cubins and fatbins for driver-API and parser tests.
#   tests/probes/*.cu  CUDA C programs that ask a GPU's libraries what the simulator cannot know
#                     (tools/gpu-check reports them); on the simulator they run as a test case.

AG_SRC_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard src/*.c))
UNIT_C   := $(patsubst tests/unit/%.c,$(BUILD)/tests/unit/%,$(wildcard tests/unit/*.c))
UNIT_CU  := $(patsubst tests/unit/%.cu,$(BUILD)/tests/unit/%,$(wildcard tests/unit/*.cu))
PROGS    := $(patsubst tests/progs/%.cu,$(BUILD)/tests/progs/%,$(wildcard tests/progs/*.cu))
KSRC     := $(wildcard tests/kernels/*.cu)
CUBINS   := $(patsubst tests/kernels/%.cu,$(BUILD)/tests/kernels/%.cubin,$(KSRC))
FATBINS  := $(patsubst tests/kernels/%.cu,$(BUILD)/tests/kernels/%.fatbin,$(KSRC)) \
            $(patsubst tests/kernels/%.cu,$(BUILD)/tests/kernels/%.z.fatbin,$(KSRC)) \
            $(patsubst tests/kernels/%.cu,$(BUILD)/tests/kernels/%.lz4.fatbin,$(KSRC)) \
            $(BUILD)/tests/kernels/drv-kernels.sm80.cubin $(BUILD)/tests/kernels/drv-kernels.ptx.fatbin
PROBES   := $(patsubst tests/probes/%.cu,$(BUILD)/tests/probes/%,$(wildcard tests/probes/*.cu))
AG_TEST_ALL += $(UNIT_C) $(UNIT_CU) $(PROGS) $(CUBINS) $(FATBINS) $(PROBES)

$(BUILD)/tests/unit/%: tests/unit/%.c $(AG_SRC_OBJS) $(BUILD)/sim/libcuda.so.1
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -fvisibility=hidden,$(AG_CFLAGS)) -Itests -Itests/sim $(CFLAGS) -rdynamic \
	    -o $@ $< $(AG_SRC_OBJS) -L$(BUILD)/sim -l:libcuda.so.1 $(AG_LIBS) -lm

$(BUILD)/tests/unit/%: tests/unit/%.cu $(wildcard tests/*.h tests/sim/*.h)
	@mkdir -p $(dir $@)
	$(NVCC) $(AG_NVCCFLAGS) $(NVCCFLAGS) -o $@ $< $(AG_NVLIBS) -lpthread

$(BUILD)/tests/progs/%: tests/progs/%.cu $(wildcard tests/*.h tests/sim/*.h)
	@mkdir -p $(dir $@)
	$(NVCC) $(AG_NVCCFLAGS) $(NVCCFLAGS) -o $@ $< $(AG_NVLIBS) -lpthread

$(BUILD)/tests/probes/%: tests/probes/%.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(AG_NVCCFLAGS) $(NVCCFLAGS) -o $@ $< $(AG_NVLIBS)

# Kernel images depend on this file too: a change of their architectures rebuilds them.
# Cubins that tests load on the device are built for the simulated device's architecture
# (tests/sim/driver/drv.h: compute capability 9.0, an H100's or H200's): a driver runs a cubin only
# on the major architecture it was built for, and the simulated one refuses others as a real one
# does. Fatbins carry sm_75 and sm_80 code and compute_80 PTX, which a 9.0 device compiles.
AG_DEV_SM := 90
$(BUILD)/tests/kernels/%.cubin: tests/kernels/%.cu tests/build.mk
	@mkdir -p $(dir $@)
	$(NVCC) -cubin -arch=sm_$(AG_DEV_SM) -o $@ $<

# The parser's tests read this one without loading it, as sm_80 code.
$(BUILD)/tests/kernels/elf-kernels.cubin: tests/kernels/elf-kernels.cu tests/build.mk
	@mkdir -p $(dir $@)
	$(NVCC) -cubin -arch=sm_80 -o $@ $<

# Images a device of compute capability 9.0 must refuse or compile: an sm_80 cubin, and PTX alone.
$(BUILD)/tests/kernels/%.sm80.cubin: tests/kernels/%.cu tests/build.mk
	@mkdir -p $(dir $@)
	$(NVCC) -cubin -arch=sm_80 -o $@ $<

$(BUILD)/tests/kernels/%.ptx.fatbin: tests/kernels/%.cu tests/build.mk
	@mkdir -p $(dir $@)
	$(NVCC) -fatbin -gencode arch=compute_80,code=compute_80 -o $@ $<

$(BUILD)/tests/kernels/%.fatbin: tests/kernels/%.cu tests/build.mk
	@mkdir -p $(dir $@)
	$(NVCC) -fatbin -gencode arch=compute_75,code=sm_75 -gencode arch=compute_80,code=[sm_80,compute_80] -o $@ $<

$(BUILD)/tests/kernels/%.z.fatbin: tests/kernels/%.cu tests/build.mk
	@mkdir -p $(dir $@)
	$(NVCC) -fatbin -Xfatbin -compress-all -gencode arch=compute_75,code=sm_75 -gencode arch=compute_80,code=[sm_80,compute_80] -o $@ $<

# LZ4 entries, as nvcc before 12.8 wrote them (PyTorch 2.5's wheels carry them).
$(BUILD)/tests/kernels/%.lz4.fatbin: tests/kernels/%.cu tests/build.mk
	@mkdir -p $(dir $@)
	$(NVCC) -fatbin -compress-mode=speed -Xfatbin -compress-all -gencode arch=compute_75,code=sm_75 -gencode arch=compute_80,code=[sm_80,compute_80] -o $@ $<

# These test the per-thread default stream entry points (the _ptsz/_ptds exports).
$(BUILD)/tests/progs/ptsz: NVCCFLAGS += --default-stream per-thread
$(BUILD)/tests/unit/rt-ptsz: NVCCFLAGS += --default-stream per-thread
# The kernel-pattern programs declare PyTorch's kernels, whose functors include a lambda.
$(BUILD)/tests/progs/k-fuse: NVCCFLAGS += --extended-lambda
# The programs share tests/progs/prog.h.
$(PROGS): $(wildcard tests/progs/*.h)

# Plugins the module-lifetime programs dlopen (tests/plugins): l-plugin.cu twice, as
# plugin A and plugin B, and l-image.c, which holds the l-image cubin in its read-only data.
PLUGINS := $(BUILD)/tests/plugins/l-plugin-a.so $(BUILD)/tests/plugins/l-plugin-b.so \
           $(BUILD)/tests/plugins/l-image.so
AG_TEST_ALL += $(PLUGINS)
$(BUILD)/tests/plugins/l-plugin-a.so: tests/plugins/l-plugin.cu
	@mkdir -p $(dir $@)
	$(NVCC) -cudart shared -shared -Xcompiler -fPIC $(NVCCFLAGS) -o $@ $<
$(BUILD)/tests/plugins/l-plugin-b.so: tests/plugins/l-plugin.cu
	@mkdir -p $(dir $@)
	$(NVCC) -cudart shared -shared -Xcompiler -fPIC $(NVCCFLAGS) -DPLUGIN_B -o $@ $<
$(BUILD)/tests/plugins/l-image.so: tests/plugins/l-image.c $(BUILD)/tests/kernels/l-image.cubin
	@mkdir -p $(dir $@)
	$(CC) -shared -fPIC $(CFLAGS) $(LDFLAGS) -DL_IMAGE='"$(abspath $(BUILD)/tests/kernels/l-image.cubin)"' -o $@ $<

# The same programs built with the CUDA 12 toolkit (tools/setup --cuda12) into
# $(BUILD)/tests/progs12: linked against libcudart.so.12, with nvcc 12's launch stubs and the 12
# headers (docs/cuda-versions.md). Only when that toolkit is installed; tests/cases/cuda12-*.sh
# skip otherwise. cuDNN is no part of the CUDA toolkit: its headers and link library come from
# CUDA_HOME through $(BUILD)/cuda12-extra, which holds nothing else, so that no CUDA 13 header
# or libcudart can be picked up.
ifneq ($(wildcard $(CUDA12_HOME)/bin/nvcc),)
# nvrtc-run is left out: the CUDA 12 toolkit installed here has no NVRTC, nor the simulator a 12 one.
PROGS12 := $(patsubst tests/progs/%.cu,$(BUILD)/tests/progs12/%,$(filter-out tests/progs/nvrtc-run.cu,$(wildcard tests/progs/*.cu)))
AG_TEST_ALL += $(PROGS12)
CUDA12_EXTRA := $(BUILD)/cuda12-extra

$(CUDA12_EXTRA)/.stamp:
	@mkdir -p $(CUDA12_EXTRA)/include $(CUDA12_EXTRA)/lib
	ln -sf $(abspath $(wildcard $(CUDA_HOME)/include/cudnn*.h)) $(CUDA12_EXTRA)/include/
	ln -sf $(abspath $(CUDA_HOME)/lib64/libcudnn.so) $(CUDA12_EXTRA)/lib/libcudnn.so
	ln -sf $(abspath $(CUDA_HOME)/lib64/stubs/libcuda.so) $(CUDA12_EXTRA)/lib/libcuda.so
	touch $@

$(BUILD)/tests/progs12/%: tests/progs/%.cu $(wildcard tests/*.h tests/sim/*.h tests/progs/*.h) $(CUDA12_EXTRA)/.stamp
	@mkdir -p $(dir $@)
	$(CUDA12_HOME)/bin/nvcc $(AG_NVCCFLAGS) -I$(CUDA12_EXTRA)/include $(NVCCFLAGS) -o $@ $< \
	    -L$(CUDA12_EXTRA)/lib -Xlinker --as-needed -lcudnn -lcuda -lpthread
$(BUILD)/tests/progs12/ptsz: NVCCFLAGS += --default-stream per-thread
$(BUILD)/tests/progs12/k-fuse: NVCCFLAGS += --extended-lambda
endif

# The calibration table of the wheel's elementwise kernels (tools/calibrate-elementwise,
# docs/fused-replacements.md): which operation each computes and where its scalars sit. Needs
# `tools/setup --torch`.
.PHONY: calibrate
calibrate: all $(BUILD)/autograph-inspect
	mkdir -p $(BUILD)/calibration
	BUILD=$(BUILD) tools/torch-sim python tools/calibrate-elementwise \
	    --json $(BUILD)/calibration/elementwise-torch-$$($(BUILD)/torch-venv/bin/python -c 'import importlib.metadata as m; print(m.version("torch"))').json

# What of PyTorch the simulator runs (tests/torch/coverage.py, docs/pytorch-on-the-simulator.md):
# the wheel's kernel families with and without a twin, and the catalogue of operations in
# float32, float16 and bfloat16 against the CPU, its table also in $(BUILD)/torch-coverage.md (as
# the docs show it). Needs `tools/setup --torch`.
.PHONY: torch-coverage
torch-coverage: all $(BUILD)/autograph-inspect
	BUILD=$(BUILD) tools/torch-sim python tests/torch/coverage.py --markdown $(BUILD)/torch-coverage.md

# The program that generates kernels at run time links NVRTC (the simulated one on the simulator)
# and hands the toolkit's include folder to it, for cuda_fp16.h. Its host reference computes
# every product and sum separately rounded, as the kernels compiled with --fmad=false do.
$(BUILD)/tests/progs/nvrtc-run: AG_NVLIBS += -lnvrtc
$(BUILD)/tests/progs/nvrtc-run: NVCCFLAGS += -Xcompiler -ffp-contract=off \
    -DNVRTC_RUN_CUDA_INCLUDE='"$(abspath $(CUDA_HOME))/include"'

# The fused-kernel generator's check against PyTorch (tests/cases/torch-fusegen.sh): a C program
# with the generator's objects, the simulated driver and the simulated NVRTC.
FUSEGEN_CHECK := $(BUILD)/tests/torch/fusegen-check
AG_TEST_ALL += $(FUSEGEN_CHECK)
$(FUSEGEN_CHECK): tests/torch/fusegen-check.c $(AG_SRC_OBJS) $(BUILD)/sim/libcuda.so.1 $(BUILD)/sim/libnvrtc.so.13
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -fvisibility=hidden,$(AG_CFLAGS)) $(CFLAGS) \
	    -o $@ $< $(AG_SRC_OBJS) -L$(BUILD)/sim -l:libcuda.so.1 -l:libnvrtc.so.13 $(AG_LIBS) -lm
