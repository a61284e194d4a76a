/* Closes every file descriptor mid-run (the tracer's too), reopens low ones, keeps going. */

#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "torture.h"

int main(int argc, char** argv) {
  (void)argc;
  unsigned long long allocs = 0;
  alloclab_run_begin("work");
  for (int i = 0; i < 1000; ++i) free(malloc(64 + i)), ++allocs;
  struct timespec pause = {0, 150 * 1000 * 1000}; /* let the writer write once */
  nanosleep(&pause, NULL);
  struct rlimit limit;
  getrlimit(RLIMIT_NOFILE, &limit);
  for (int fd = 0; fd < (int)limit.rlim_cur && fd < 65536; ++fd) close(fd);
  /* Reuse low numbers, as a daemon would: none of them may receive trace bytes. */
  for (int i = 0; i < 4; ++i) open("/dev/null", O_RDONLY);
  for (int i = 0; i < 1000; ++i) free(malloc(64 + i)), ++allocs;
  nanosleep(&pause, NULL);
  for (int i = 0; i < 1000; ++i) free(malloc(64 + i)), ++allocs;
  alloclab_run_end();
  torture_count(argv[1], "allocs", allocs);
  torture_count(argv[1], "frees", allocs);
  return 0;
}
