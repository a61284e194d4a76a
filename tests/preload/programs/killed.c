/* Allocates inside an open run, reports its counters and pid, then waits to be killed with
 * SIGKILL: the trace must still hold every event (the writer flushes within ~100 ms).
 * killed COUNTS_FILE [ALLOCATIONS [PAUSE_AT]]: 20000 allocations unless told (a quarter stay
 * live); with PAUSE_AT, a pause of half a second after that many (the writer catches up). */
#include <stdlib.h>
#include <unistd.h>

#include "torture.h"

int main(int argc, char** argv) {
  unsigned long long allocs = 0;
  const long wanted = argc > 2 ? atol(argv[2]) : 20000;
  const long pause_at = argc > 3 ? atol(argv[3]) : -1;
  alloclab_run_begin("work");
  for (long i = 0; i < wanted; ++i) {
    if (i == pause_at) usleep(500000);
    void* p = malloc(64 + i % 500);
    ++allocs;
    if (i % 4) free(p);
  }
  torture_count(argv[1], "allocs", allocs);
  torture_count(argv[1], "frees", allocs - allocs / 4);
  torture_count(argv[1], "pid", (unsigned long long)getpid());
  for (;;) pause();
}
