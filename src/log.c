/* log.c — the one logging function (see log.h).
 *
 * Writes with a single write(2) per line so lines from several threads do not interleave, and
 * never allocates, so it may be called from inside allocator or loader callbacks.
 */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "config.h"

static int lines; /* atomically incremented; lines emitted so far */

static int vformat(char *buf, int size, const char *fmt, va_list ap) {
  int n = snprintf(buf, (size_t)size, "autograph: ");
  n += vsnprintf(buf + n, (size_t)(size - n), fmt, ap);
  if (n > size - 2) n = size - 2;
  buf[n++] = '\n';
  buf[n] = 0;
  return n;
}

int ag__log_format(char *buf, int size, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vformat(buf, size, fmt, ap);
  va_end(ap);
  return n;
}

void ag__log(int level, const char *fmt, ...) {
  char buf[512];
  int saved = errno, n, seq;
  va_list ap;

  if (level > ag__config.log_level) return;
  seq = __atomic_fetch_add(&lines, 1, __ATOMIC_RELAXED);
  if (seq > AG_LOG_MAX) goto out;
  if (seq == AG_LOG_MAX) {
    n = ag__log_format(buf, sizeof buf, "further messages suppressed");
  } else {
    va_start(ap, fmt);
    n = vformat(buf, sizeof buf, fmt, ap);
    va_end(ap);
  }
  if (write(2, buf, (size_t)n) < 0) { /* nowhere to report it */
  }
out:
  errno = saved;
}

int ag__write_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n) {
    ssize_t w = write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    c += w, n -= (size_t)w;
  }
  return 0;
}
