/* fatbin.S — embeds the device code (kernels.cu, built by nvcc into cublassim_kernels.fatbin) in
 * libcublas.so.13 and libcublasLt.so.13, in a .nv_fatbin section as NVIDIA's libraries keep
 * theirs. cublassim_fatbin is the fatbin container common_drv.c hands to cuModuleLoadData. */
        .section .nv_fatbin, "a"
        .balign 16
        .globl cublassim_fatbin
        .hidden cublassim_fatbin
        .type cublassim_fatbin, @object
cublassim_fatbin:
        .incbin "cublassim_kernels.fatbin"
        .size cublassim_fatbin, . - cublassim_fatbin
        .section .note.GNU-stack, "", @progbits
