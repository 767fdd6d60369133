/* fatbin.S — embeds the device code (kernels.cu, built by nvcc into cudnnsim_kernels.fatbin)
 * in libcudnn.so.9, in a .nv_fatbin section as NVIDIA's libraries keep theirs. The build passes
 * the folder holding the fatbin to the assembler's include path. cudnnsim_fatbin is the fatbin
 * container that handle.c hands to cuModuleLoadData. */
        .section .nv_fatbin, "a"
        .balign 16
        .globl cudnnsim_fatbin
        .hidden cudnnsim_fatbin
        .type cudnnsim_fatbin, @object
cudnnsim_fatbin:
        .incbin "cudnnsim_kernels.fatbin"
        .size cudnnsim_fatbin, . - cudnnsim_fatbin
        .section .note.GNU-stack, "", @progbits
