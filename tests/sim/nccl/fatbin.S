/* fatbin.S — embeds the device code (kernels.cu, built by nvcc into ncclsim_kernels.fatbin) in
 * libnccl.so.2, in a .nv_fatbin section as NVIDIA's libraries keep theirs. ncclsim_fatbin is the
 * fatbin container nccl.c hands to cuModuleLoadData. */
        .section .nv_fatbin, "a"
        .balign 16
        .globl ncclsim_fatbin
        .hidden ncclsim_fatbin
        .type ncclsim_fatbin, @object
ncclsim_fatbin:
        .incbin "ncclsim_kernels.fatbin"
        .size ncclsim_fatbin, . - ncclsim_fatbin
        .section .note.GNU-stack, "", @progbits
