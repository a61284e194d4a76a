/* Allocates inside an open run, reports its counters and pid, then waits to be killed with
 * SIGKILL: the trace must still hold every event (the writer flushes within ~100 ms). */
#include <stdlib.h>
#include <unistd.h>

#include "torture.h"

int main(int argc, char** argv) {
  (void)argc;
  unsigned long long allocs = 0;
  alloclab_run_begin("work");
  for (int i = 0; i < 20000; ++i) {
    void* p = malloc(64 + i % 500);
    ++allocs;
    if (i % 4) free(p);
  }
  torture_count(argv[1], "allocs", allocs);
  torture_count(argv[1], "frees", allocs - allocs / 4);
  torture_count(argv[1], "pid", (unsigned long long)getpid());
  for (;;) pause();
}
