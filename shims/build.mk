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

# The fused kernels of kernel-pattern substitution (src/pattern.h): shims/fused/elementwise.cu in
# one fatbin, embedded with .incbin as ag__fused_fatbin, built so that every driver the library
# serves loads it (CUDA 12.0 and later, docs/fused-replacements.md):
#   - PTX for compute_75 (the oldest architecture CUDA 13 supports) declared as ISA version 8.0,
#     the version a CUDA 12.0 driver compiles: nvcc writes its own newest version, 9.0, which
#     only CUDA 13 drivers read, and the kernels use nothing newer than 8.0 has; ptxas, which
#     checks the text against the version it declares, validates it at build time;
#   - SASS for every architecture nvcc lists from sm_75 up, assembled from that PTX by the CUDA 12
#     ptxas when there is one (AG_PTXAS12, installed by tools/setup --cuda12: its cubins are ELF
#     ABI 7 up to sm_90, which 12.x drivers read), else, and for architectures it lacks, by the
#     toolkit's (CUDA 13's cubins are ABI 8, for CUDA 13 drivers; older ones then compile the PTX);
#   - entries left uncompressed (fatbinary --compress=false): drivers before 12.8 cannot
#     decompress the zstd that CUDA 13's fatbinary uses by default.
AG_FUSED_ARCHS ?= $(shell $(NVCC) --list-gpu-arch 2>/dev/null | sed -n 's/^compute_\([0-9]*\)$$/\1/p' | \
                    awk '$$1 >= 75' | sort -n | tr '\n' ' ')
AG_FUSED_PTX_ARCH ?= 75
AG_FUSED_PTX_ISA ?= 8.0
AG_PTXAS ?= $(CUDA_HOME)/bin/ptxas
AG_PTXAS12 ?= $(wildcard build/cuda12/pkgs/nvidia/cuda_nvcc/bin/ptxas)
AG_FATBINARY ?= $(CUDA_HOME)/bin/fatbinary
AG_LIB_OBJS += $(BUILD)/obj/fused-blob.o

$(BUILD)/gen/fused.ptx: shims/fused/elementwise.cu
	@mkdir -p $(dir $@)
	$(NVCC) -ptx -arch=compute_$(AG_FUSED_PTX_ARCH) -o $@.nvcc $<
	sed 's/^\.version [0-9]*\.[0-9]*$$/.version $(AG_FUSED_PTX_ISA)/' $@.nvcc > $@.tmp
	grep -qx '\.version $(AG_FUSED_PTX_ISA)' $@.tmp
	$(AG_PTXAS) -arch=sm_$(AG_FUSED_PTX_ARCH) -o /dev/null $@.tmp
	rm -f $@.nvcc && mv $@.tmp $@

$(BUILD)/gen/fused-sm%.cubin: $(BUILD)/gen/fused.ptx
	$(if $(AG_PTXAS12),$(AG_PTXAS12) -arch=sm_$* -o $@ $< 2>/dev/null || )$(AG_PTXAS) -arch=sm_$* -o $@ $<

$(BUILD)/gen/fused.fatbin: $(BUILD)/gen/fused.ptx $(foreach a,$(AG_FUSED_ARCHS),$(BUILD)/gen/fused-sm$(a).cubin)
	$(AG_FATBINARY) --create=$@ -64 --compress=false \
	    $(foreach a,$(AG_FUSED_ARCHS),--image3=kind=elf,sm=$(a),file=$(BUILD)/gen/fused-sm$(a).cubin) \
	    --image3=kind=ptx,sm=$(AG_FUSED_PTX_ARCH),file=$<

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
