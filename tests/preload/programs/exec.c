/* exec: allocates in a run "before", then replaces itself with a new image of this program
 * (with execl: "inplace"; with execveat: "inplace-at"; with the raw system call through
 * syscall(): "inplace-syscall") or forks a child that does ("spawn").
 * The new image allocates in a run "image". The exec follows the last allocation at once: only
 * a flush before exec saves those events. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "torture.h"

static void image(const char* counts) {
  unsigned long long allocs = 0;
  alloclab_run_begin("image");
  for (int i = 0; i < 3000; ++i) free(torture_keep(malloc(300 + i % 200))), ++allocs;
  alloclab_run_end();
  torture_count(counts, "image_allocs", allocs);
}

int main(int argc, char** argv) {
  if (argc > 2 && strcmp(argv[2], "image") == 0) {
    image(argv[1]);
    return 0;
  }
  /* syscall() is interposed too (for its exec): everything else must behave as glibc's. */
  if (syscall(SYS_getpid) != getpid()) return 2;
  errno = 0;
  if (syscall(-1L) != -1 || errno != ENOSYS) return 3;
  const int spawn = argc > 2 && strcmp(argv[2], "spawn") == 0;
  unsigned long long allocs = 0;
  alloclab_run_begin("before");
  for (int i = 0; i < 5000; ++i) free(torture_keep(malloc(100 + i % 100))), ++allocs;
  alloclab_run_end();
  torture_count(argv[1], "before_allocs", allocs);
  if (argc > 2 && strcmp(argv[2], "inplace-at") == 0) {
    char* const args[] = {argv[0], argv[1], (char*)"image", NULL};
    extern char** environ;
    execveat(AT_FDCWD, "/proc/self/exe", args, environ, 0);
    return 1;
  }
  if (argc > 2 && strcmp(argv[2], "inplace-syscall") == 0) {
    char* const args[] = {argv[0], argv[1], (char*)"image", NULL};
    extern char** environ;
    syscall(SYS_execve, "/proc/self/exe", args, environ);
    return 1;
  }
  if (!spawn) {
    execl("/proc/self/exe", argv[0], argv[1], "image", (char*)NULL);
    return 1;
  }
  pid_t pid = fork();
  if (pid == 0) {
    free(torture_keep(malloc(4242))); /* the forked child's own event, before exec */
    execl("/proc/self/exe", argv[0], argv[1], "image", (char*)NULL);
    _exit(1);
  }
  int status;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
