# The preload library: the engine (src/) and the exported entry points (shims/).
#
# Generated (never committed), into $(BUILD)/gen, which is on the include path:
#   ag_cu_table.h  the driver's table: every prototype in cudaTypedefs.h, classified by
#                  shims/cuda-class.def (tools/gen-cuda-table)
#   exports.txt    every symbol the library exports, from the tables (tools/gen-exports);
#                  tests/cases/shim-exports.sh compares it with `nm -D`
#   exports.map    the version script made from it (anonymous node: the real libcuda has no
#                  symbol versions, and an unversioned definition satisfies versioned references
#                  such as cudaMemcpy@libcudart.so.13)
AG_LIB_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard src/*.c shims/*.c))

# The fused kernels of kernel-pattern substitution (src/pattern.h): shims/fused/elementwise.cu
# compiled by nvcc into one fatbin, with SASS for every architecture nvcc supports from sm_75 up
# and PTX for the newest (future GPUs JIT it), embedded with .incbin as ag__fused_fatbin.
AG_FUSED_ARCHS ?= $(shell $(NVCC) --list-gpu-arch 2>/dev/null | sed -n 's/^compute_\([0-9]*\)$$/\1/p' | \
                    awk '$$1 >= 75' | sort -n | tr '\n' ' ')
AG_FUSED_PTX := $(lastword $(AG_FUSED_ARCHS))
AG_LIB_OBJS += $(BUILD)/obj/fused-blob.o

$(BUILD)/gen/fused.fatbin: shims/fused/elementwise.cu
	@mkdir -p $(dir $@)
	$(NVCC) -fatbin $(foreach a,$(AG_FUSED_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) \
	    -gencode arch=compute_$(AG_FUSED_PTX),code=compute_$(AG_FUSED_PTX) -o $@ $<

$(BUILD)/obj/fused-blob.o: $(BUILD)/gen/fused.fatbin
	@mkdir -p $(dir $@)
	printf '%s\n' '.section .rodata' '.balign 16' '.globl ag__fused_fatbin' \
	    '.hidden ag__fused_fatbin' 'ag__fused_fatbin:' '.incbin "$<"' \
	    '.section .note.GNU-stack,"",@progbits' > $(BUILD)/gen/fused-blob.s
	$(CC) -c -o $@ $(BUILD)/gen/fused-blob.s
AG_ALL += $(BUILD)/libautograph.so
AG_GEN := $(BUILD)/gen/ag_cu_table.h $(BUILD)/gen/exports.txt $(BUILD)/gen/exports.map

$(BUILD)/gen/ag_cu_table.h: tools/gen-cuda-table shims/cuda-class.def $(CUDA_HOME)/include/cudaTypedefs.h \
                            $(CUDA_HOME)/include/cuda.h
	@mkdir -p $(dir $@)
	tools/gen-cuda-table $(CUDA_HOME)/include shims/cuda-class.def > $@.tmp
	mv $@.tmp $@

$(BUILD)/gen/exports.txt: tools/gen-exports shims/cudart.def shims/cudnn.def $(BUILD)/gen/ag_cu_table.h
	tools/gen-exports $(BUILD)/gen > $@.tmp
	mv $@.tmp $@

$(BUILD)/gen/exports.map: $(BUILD)/gen/exports.txt
	{ echo '{'; echo '  global:'; sed 's/.*/    &;/' $<; echo '  local: *;'; echo '};'; } > $@

# The shims include the generated table and the .def files.
$(BUILD)/obj/shims/cuda.o: $(BUILD)/gen/ag_cu_table.h
$(BUILD)/obj/shims/cudart.o: shims/cudart.def
$(BUILD)/obj/shims/cudnn.o: shims/cudnn.def

$(BUILD)/libautograph.so: $(AG_LIB_OBJS) $(BUILD)/gen/exports.map
	$(CC) -shared -Wl,-soname,libautograph.so -Wl,--version-script=$(BUILD)/gen/exports.map \
	    -Wl,-z,defs -o $@ $(AG_LIB_OBJS) $(LDFLAGS) $(AG_LIBS)
