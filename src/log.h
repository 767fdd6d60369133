/* log.h — the one logging function.
 *
 * Lines go to stderr prefixed "autograph: ", filtered by AUTOGRAPH_LOG (ag__config.log_level)
 * and capped in volume: after AG_LOG_MAX lines one last line says that further messages are
 * suppressed. errno is preserved. Safe to call from any thread and before initialisation.
 */
#ifndef AG_LOG_H
#define AG_LOG_H

#define AG_LOG_MAX 100

void ag__log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Formats a line exactly as ag__log would print it (without the cap), for tests.
 * Returns its length. */
int ag__log_format(char *buf, int size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Writes all n bytes to fd, retrying short writes and EINTR. Returns 0, or -1 with errno set
 * (a non-blocking descriptor that would block counts as a failure: output never waits). The
 * stats report, the dump and the trace write their files through it. */
#include <stddef.h>
int ag__write_all(int fd, const void *p, size_t n);

#endif
