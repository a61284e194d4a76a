/* Sets RLIMIT_FSIZE to LIMIT bytes (the trace's header is already written), then allocates:
 * the tracer's writes fail (EFBIG, and SIGXFSZ, whose default action would kill the program)
 * while the program runs on. With "fork", a forked child also runs and exits (under
 * --follow-fork its tracer cannot even write its file's header). */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "torture.h"

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  struct rlimit limit;
  getrlimit(RLIMIT_FSIZE, &limit);
  const rlim_t unlimited = limit.rlim_cur;
  limit.rlim_cur = (rlim_t)strtoull(argv[2], NULL, 10);
  setrlimit(RLIMIT_FSIZE, &limit);
  unsigned long long allocs = 0, children_ok = 0;
  alloclab_run_begin("work");
  for (int round = 0; round < 40; ++round) {
    for (int i = 0; i < 5000; ++i) free(torture_keep(malloc(100 + (i * 7919) % 900))), ++allocs;
    usleep(round == 0 ? 300000 : 5000); /* the first round surely reaches the file */
  }
  if (argc > 3 && strcmp(argv[3], "fork") == 0) {
    pid_t pid = fork();
    if (pid == 0) {
      for (int i = 0; i < 1000; ++i) free(torture_keep(malloc(64)));
      exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    children_ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  alloclab_run_end();
  limit.rlim_cur = unlimited; /* the counters must reach their file */
  setrlimit(RLIMIT_FSIZE, &limit);
  torture_count(argv[1], "allocs", allocs);
  torture_count(argv[1], "children_ok", children_ok);
  return 0;
}
