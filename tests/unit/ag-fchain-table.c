/* ag-fchain-table — when the calibration tables are known (src/fchain.h): a path with nothing
 * at it is known at once, on the caller's thread, so that a graph holding a kernel pattern's
 * original is never built while waiting for a table that does not exist (it would run unfused
 * until the next replay after the reader ended: a count that then depends on thread timing);
 * a folder that exists is read on a thread of its own, the callers told it is pending until the
 * generation moves. Each case in a child process: the table is read once per process. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "config.h"
#include "fchain.h"

static ag_kinfo_t k = {.name = (char *)"_ZN2at6native29vectorized_elementwise_kernelILi4E8k_none_f"};

/* Runs fn in a child; its exit status (0 when every check held). */
static int in_child(void (*fn)(const char *), const char *path) {
  pid_t pid = fork();
  if (pid == 0) {
    fn(path);
    _exit(0);
  }
  int st = 0;
  CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void use(const char *path) {
  ag__config.fuse = AG_FUSE_EXACT;
  snprintf(ag__config.fuse_tables, sizeof ag__config.fuse_tables, "%s", path);
}

/* Nothing at the path: no table, answered on the first call, the generation moved. */
static void missing(const char *path) {
  unsigned threads = 0;
  use(path);
  uint32_t g = ag__fchain_generation();
  CHECK_INT(ag__fchain_block_work(&k, &threads), ==, 0);
  CHECK(ag__fchain_generation() != g);
  CHECK_INT(ag__fchain_block_work(&k, &threads), ==, 0);
}

/* An empty folder: pending on the first call, then read (no table in it) within 10 s. */
static void folder(const char *path) {
  unsigned threads = 0;
  use(path);
  uint32_t g = ag__fchain_generation();
  CHECK_INT(ag__fchain_block_work(&k, &threads), ==, -1);
  for (int i = 0; i < 10000 && ag__fchain_generation() == g; i++) {
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  CHECK(ag__fchain_generation() != g);
  CHECK_INT(ag__fchain_block_work(&k, &threads), ==, 0);
}

int main(void) {
  char dir[] = "/tmp/ag-fchain-table.XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char gone[sizeof dir + 16];
  snprintf(gone, sizeof gone, "%s/none", dir);
  CHECK_INT(in_child(missing, gone), ==, 0);
  CHECK_INT(in_child(folder, dir), ==, 0);
  rmdir(dir);
  printf("ag-fchain-table: ok\n");
  return 0;
}
