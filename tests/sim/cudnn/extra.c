/* extra.c — cuDNN functions outside the simulated operations that programs built against the real
 * libcudnn.so.9 call when something fails. Every other function the real library exports and the
 * simulator does not simulate is a generated stub in unsupported.c (from unsupported.list).
 */
#include <stddef.h>
#include <string.h>

void cudnnGetLastErrorString(char *message, size_t max_size);

/* The simulator keeps no error log: the message is empty, as the real one is when nothing failed. */
void cudnnGetLastErrorString(char *message, size_t max_size) {
  if (message && max_size) message[0] = '\0';
}
