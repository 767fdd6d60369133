# The CPU simulator of the CUDA driver, runtime and cuDNN (see tests/sim/README.md).
#
# Three libraries with the real sonames and version nodes, each from its own folder plus the
# shared helpers in tests/sim/common. Exports are chosen by each library's version script; the
# code is built with default visibility because the CUDA headers declare the API without any.
# The runtime and cuDNN do not link the driver: they dlopen libcuda.so.1 as the real ones do.

SIM_CFLAGS := $(filter-out -fvisibility=hidden,$(AG_CFLAGS)) -Itests/sim
SIM_COMMON := $(patsubst %.c,$(BUILD)/sim/obj/%.o,$(wildcard tests/sim/common/*.c))
SIM_DRV    := $(patsubst %.c,$(BUILD)/sim/obj/%.o,$(wildcard tests/sim/driver/*.c))
SIM_RT     := $(patsubst %.c,$(BUILD)/sim/obj/%.o,$(wildcard tests/sim/runtime/*.c))
SIM_DNN    := $(patsubst %.c,$(BUILD)/sim/obj/%.o,$(wildcard tests/sim/cudnn/*.c))
# The driver parses cubins and fatbins with the library's own parser (src/elf.c).
SIM_ELF    := $(BUILD)/sim/obj/src/elf.o

SIM_LIBS := $(BUILD)/sim/libcuda.so.1 $(BUILD)/sim/libcudart.so.13 $(BUILD)/sim/libcudnn.so.9
AG_ALL   += $(SIM_LIBS)

$(BUILD)/sim/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(SIM_CFLAGS) $(CFLAGS) $(CPPFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/sim/libcuda.so.1: $(SIM_DRV) $(SIM_COMMON) $(SIM_ELF) tests/sim/driver/libcuda.map
	$(CC) -shared -Wl,-soname,libcuda.so.1 -Wl,-Bsymbolic-functions -Wl,--version-script=tests/sim/driver/libcuda.map \
	    -o $@ $(SIM_DRV) $(SIM_COMMON) $(SIM_ELF) $(LDFLAGS) -ldl -lpthread
	ln -sf libcuda.so.1 $(BUILD)/sim/libcuda.so

$(BUILD)/sim/libcudart.so.13: $(SIM_RT) $(SIM_COMMON) tests/sim/runtime/libcudart.map
	$(CC) -shared -Wl,-soname,libcudart.so.13 -Wl,-Bsymbolic-functions -Wl,--version-script=tests/sim/runtime/libcudart.map \
	    -o $@ $(SIM_RT) $(SIM_COMMON) $(LDFLAGS) -ldl -lpthread
	ln -sf libcudart.so.13 $(BUILD)/sim/libcudart.so

# cuDNN's device code: tests/sim/cudnn/kernels.cu → a fatbin (sm_80 cubin + PTX, every entry
# zstd-compressed as in NVIDIA's own libraries) embedded by fatbin.S; the CPU twins are in
# twins.c. -fmad=false and -ffp-contract=off keep every product and sum separately rounded, so
# the twins' bits are those of the documented arithmetic (tests/sim/cudnn/README.md).
SIM_DNN_FATBIN := $(BUILD)/sim/cudnn/cudnnsim_kernels.fatbin
SIM_DNN += $(BUILD)/sim/obj/tests/sim/cudnn/fatbin.o
$(SIM_DNN): SIM_CFLAGS += -ffp-contract=off

$(SIM_DNN_FATBIN): tests/sim/cudnn/kernels.cu tests/sim/cudnn/cudnnsim.h tests/sim/cudnn/rnnsim.h tests/sim/cudnn/opgraph.h tests/sim/common/halfconv.h
	@mkdir -p $(dir $@)
	$(NVCC) -fatbin -Xfatbin -compress-all -fmad=false \
	    -gencode arch=compute_80,code=[sm_80,compute_80] -o $@ $<

$(BUILD)/sim/obj/tests/sim/cudnn/fatbin.o: tests/sim/cudnn/fatbin.S $(SIM_DNN_FATBIN)
	@mkdir -p $(dir $@)
	$(CC) -c -Wa,-I$(BUILD)/sim/cudnn -o $@ $<

$(BUILD)/sim/libcudnn.so.9: $(SIM_DNN) $(SIM_COMMON) tests/sim/cudnn/libcudnn.map
	$(CC) -shared -Wl,-soname,libcudnn.so.9 -Wl,-Bsymbolic-functions -Wl,--version-script=tests/sim/cudnn/libcudnn.map \
	    -o $@ $(SIM_DNN) $(SIM_COMMON) $(LDFLAGS) -ldl -lpthread -lm
	ln -sf libcudnn.so.9 $(BUILD)/sim/libcudnn.so

# cuBLAS and cuBLASLt (tests/sim/cublas): blas_*.c → libcublas.so.13, lt_*.c → libcublasLt.so.13,
# common_*.c and the embedded device code (kernels.cu → fatbin, fatbin.S) into both. Each exports
# every function of the real library; those not simulated are generated stubs (blas_unsupported.c,
# lt_unsupported.c from the .list files by tests/sim/cublas/gen-lists).
SIM_BLAS_COMMON := $(patsubst %.c,$(BUILD)/sim/obj/%.o,$(wildcard tests/sim/cublas/common_*.c)) \
                   $(BUILD)/sim/obj/tests/sim/cublas/fatbin.o
SIM_BLAS := $(patsubst %.c,$(BUILD)/sim/obj/%.o,$(wildcard tests/sim/cublas/blas_*.c))
SIM_LT   := $(patsubst %.c,$(BUILD)/sim/obj/%.o,$(wildcard tests/sim/cublas/lt_*.c))
# cublasLt.h declares cublasLtLoggerForceDisable() without a prototype.
$(SIM_LT): SIM_CFLAGS += -Wno-strict-prototypes
# The twins' sums are those of the fused multiply-adds gemm.h spells out, nothing contracted more.
$(SIM_BLAS_COMMON) $(SIM_BLAS) $(SIM_LT): SIM_CFLAGS += -ffp-contract=off
SIM_LIBS += $(BUILD)/sim/libcublas.so.13 $(BUILD)/sim/libcublasLt.so.13
AG_ALL   += $(BUILD)/sim/libcublas.so.13 $(BUILD)/sim/libcublasLt.so.13
SIM_BLAS_FATBIN := $(BUILD)/sim/cublas/cublassim_kernels.fatbin

$(SIM_BLAS_FATBIN): tests/sim/cublas/kernels.cu tests/sim/cublas/gemm.h tests/sim/common/halfconv.h
	@mkdir -p $(dir $@)
	$(NVCC) -fatbin -Xfatbin -compress-all -fmad=false -Itests/sim \
	    -gencode arch=compute_80,code=[sm_80,compute_80] -o $@ $<

$(BUILD)/sim/obj/tests/sim/cublas/fatbin.o: tests/sim/cublas/fatbin.S $(SIM_BLAS_FATBIN)
	@mkdir -p $(dir $@)
	$(CC) -c -Wa,-I$(BUILD)/sim/cublas -o $@ $<

$(BUILD)/sim/libcublas.so.13: $(SIM_BLAS) $(SIM_BLAS_COMMON) $(SIM_COMMON) tests/sim/cublas/libcublas.map
	$(CC) -shared -Wl,-soname,libcublas.so.13 -Wl,-Bsymbolic-functions -Wl,--version-script=tests/sim/cublas/libcublas.map \
	    -o $@ $(SIM_BLAS) $(SIM_BLAS_COMMON) $(SIM_COMMON) $(LDFLAGS) -ldl -lpthread -lm
	ln -sf libcublas.so.13 $(BUILD)/sim/libcublas.so

$(BUILD)/sim/libcublasLt.so.13: $(SIM_LT) $(SIM_BLAS_COMMON) $(SIM_COMMON) tests/sim/cublas/libcublasLt.map
	$(CC) -shared -Wl,-soname,libcublasLt.so.13 -Wl,-Bsymbolic-functions -Wl,--version-script=tests/sim/cublas/libcublasLt.map \
	    -o $@ $(SIM_LT) $(SIM_BLAS_COMMON) $(SIM_COMMON) $(LDFLAGS) -ldl -lpthread -lm
	ln -sf libcublasLt.so.13 $(BUILD)/sim/libcublasLt.so

# CPU twins of PyTorch's CUDA kernels (tests/sim/torch), preloaded by tools/torch-sim: one generic
# twin, simtw_twin, which the driver calls for kernels without a sim_<name> twin.
SIM_TW := $(patsubst %.c,$(BUILD)/sim/obj/%.o,$(wildcard tests/sim/torch/*.c))
AG_ALL += $(BUILD)/sim/libtorchtwins.so
# The fused optimizers' twins write each of the kernels' fused multiply-adds as fmaf, and no other.
$(BUILD)/sim/obj/tests/sim/torch/fusedopt.o: SIM_CFLAGS += -ffp-contract=off

$(BUILD)/sim/libtorchtwins.so: $(SIM_TW) tests/sim/torch/libtorchtwins.map
	$(CC) -shared -Wl,-soname,libtorchtwins.so -Wl,--version-script=tests/sim/torch/libtorchtwins.map \
	    -o $@ $(SIM_TW) $(LDFLAGS) -lstdc++ -lm -lpthread

# The CUDA 12 runtime, libcudart.so.12 (tests/sim/runtime12/rt12.c says what differs): the
# runtime's sources and tests/sim/runtime12 compiled against the CUDA 12 headers of CUDA12_HOME
# (installed by `tools/setup --cuda12`), built only when those headers are there. CUDA12_HOME
# stays in the default build folder whatever BUILD is, so the sanitizer builds use it too.
CUDA12_HOME ?= build/cuda12/home
ifneq ($(wildcard $(CUDA12_HOME)/include/cuda_runtime_api.h),)
SIM12_CFLAGS := $(filter-out -I$(CUDA_HOME)/include,$(SIM_CFLAGS)) -I$(CUDA12_HOME)/include
SIM_RT12 := $(patsubst %.c,$(BUILD)/sim/obj12/%.o,$(wildcard tests/sim/runtime/*.c tests/sim/runtime12/*.c))
AG_ALL   += $(BUILD)/sim/libcudart.so.12

$(BUILD)/sim/obj12/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(SIM12_CFLAGS) $(CFLAGS) $(CPPFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/sim/libcudart.so.12: $(SIM_RT12) $(SIM_COMMON) tests/sim/runtime12/libcudart.map
	$(CC) -shared -Wl,-soname,libcudart.so.12 -Wl,-Bsymbolic-functions -Wl,--version-script=tests/sim/runtime12/libcudart.map \
	    -o $@ $(SIM_RT12) $(SIM_COMMON) $(LDFLAGS) -ldl -lpthread

-include $(shell find $(BUILD)/sim/obj12 -name '*.d' 2>/dev/null)
endif

# NCCL (tests/sim/nccl): libnccl.so.2 with the real soname, for PyTorch's ProcessGroupNCCL. nccl.c
# is the library (communicators through shared memory, the kernels' CPU twins), kernels.cu its
# device code (kernels named as NCCL's, embedded by fatbin.S), unsupported.c the generated stubs
# of the rest of the real library's exports (from unsupported.list).
SIM_NCCL := $(patsubst %.c,$(BUILD)/sim/obj/%.o,$(wildcard tests/sim/nccl/*.c)) \
            $(BUILD)/sim/obj/tests/sim/nccl/fatbin.o
SIM_NCCL_FATBIN := $(BUILD)/sim/nccl/ncclsim_kernels.fatbin
SIM_LIBS += $(BUILD)/sim/libnccl.so.2
AG_ALL   += $(BUILD)/sim/libnccl.so.2

$(SIM_NCCL_FATBIN): tests/sim/nccl/kernels.cu tests/sim/nccl/ncclsim.h
	@mkdir -p $(dir $@)
	$(NVCC) -fatbin -Xfatbin -compress-all -Itests/sim \
	    -gencode arch=compute_80,code=[sm_80,compute_80] -o $@ $<

$(BUILD)/sim/obj/tests/sim/nccl/fatbin.o: tests/sim/nccl/fatbin.S $(SIM_NCCL_FATBIN)
	@mkdir -p $(dir $@)
	$(CC) -c -Wa,-I$(BUILD)/sim/nccl -o $@ $<

$(BUILD)/sim/libnccl.so.2: $(SIM_NCCL) tests/sim/nccl/libnccl.map
	$(CC) -shared -Wl,-soname,libnccl.so.2 -Wl,-Bsymbolic-functions -Wl,--version-script=tests/sim/nccl/libnccl.map \
	    -o $@ $(SIM_NCCL) $(LDFLAGS) -ldl -lpthread -lm -lrt
	ln -sf libnccl.so.2 $(BUILD)/sim/libnccl.so

# NVRTC (tests/sim/nvrtc): libnvrtc.so.13 with the real soname. It forwards to the toolkit's
# real NVRTC, loaded by this absolute path, and compiles each program for the host as well, so
# that kernels generated at run time run as CPU twins (tests/sim/README.md, "NVRTC"). The
# prelude of those host builds is embedded with .incbin, hence the dependencies below.
SIM_NVRTC := $(BUILD)/sim/obj/tests/sim/nvrtc/nvrtc.o
SIM_LIBS  += $(BUILD)/sim/libnvrtc.so.13
AG_ALL    += $(BUILD)/sim/libnvrtc.so.13
$(SIM_NVRTC): SIM_CFLAGS += -DSIM_NVRTC_REAL='"$(abspath $(CUDA_HOME))/lib64/libnvrtc.so.13"'
$(SIM_NVRTC): tests/sim/nvrtc/prelude.h tests/sim/common/halfconv.h

$(BUILD)/sim/libnvrtc.so.13: $(SIM_NVRTC) tests/sim/nvrtc/libnvrtc.map
	$(CC) -shared -Wl,-soname,libnvrtc.so.13 -Wl,-Bsymbolic-functions -Wl,--version-script=tests/sim/nvrtc/libnvrtc.map \
	    -o $@ $(SIM_NVRTC) $(LDFLAGS) -ldl -lpthread -lstdc++
	ln -sf libnvrtc.so.13 $(BUILD)/sim/libnvrtc.so
