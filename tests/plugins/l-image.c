/* l-image.c — a plugin whose read-only data holds a cubin (tests/kernels/l-image.cu, embedded
 * at build time from the path in L_IMAGE). tests/progs/l-images.cu passes l_image() to
 * cuModuleLoadData and then dlcloses the plugin: legal, since the driver keeps its own copy of
 * an image, and afterwards the image's pages are no longer mapped.
 */
#ifndef L_IMAGE
#error "build with -DL_IMAGE='\"path/to/l-image.cubin\"'"
#endif

__asm__(".section .rodata\n"
        ".balign 64\n"
        "l_image_bytes:\n"
        ".incbin \"" L_IMAGE "\"\n"
        ".previous\n");

extern const unsigned char l_image_bytes[];

__attribute__((visibility("default"))) const void *l_image(void);
const void *l_image(void) { return l_image_bytes; }
