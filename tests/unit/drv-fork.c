/* drv-fork.c — the simulated driver and fork: a child forked after cuInit that leaves with
 * exit() is stopped with a message (status 70), since on a GPU the CUDA runtime's exit handlers
 * can deadlock there; one that leaves with _exit() ends normally, and so does exit() in a child
 * forked before cuInit.
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "drv-common.h"

/* Forks a child that leaves with exit(0) (how = 1) or _exit(0) (how = 0), its stderr in `err`;
 * returns its exit status. */
static int child(int how, const char *err) {
  fflush(NULL);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    int fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) _exit(126);
    dup2(fd, 2);
    if (how) exit(0);
    _exit(0);
  }
  int st;
  CHECK(waitpid(pid, &st, 0) == pid);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int err_says(const char *path, const char *what) {
  char line[512] = "";
  FILE *f = fopen(path, "r");
  CHECK(f);
  int found = 0;
  while (fgets(line, sizeof line, f))
    if (strstr(line, what)) found = 1;
  fclose(f);
  return found;
}

int main(void) {
  CHECK_INT(child(1, "before.err"), ==, 0); /* CUDA not initialised yet */
  drv_test_init();
  CHECK_INT(child(0, "after-_exit.err"), ==, 0);
  CHECK(!err_says("after-_exit.err", "sim:"));
  CHECK_INT(child(1, "after-exit.err"), ==, 70);
  CHECK(err_says("after-exit.err", "sim: exit() in a process forked after CUDA was initialised"));
  printf("drv-fork: ok\n");
  return 0;
}
