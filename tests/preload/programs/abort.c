/* Allocates inside an open run, then aborts: the trace must hold everything before abort(). */
#include <stdlib.h>

#include "torture.h"

int main(int argc, char** argv) {
  (void)argc;
  unsigned long long allocs = 0;
  alloclab_run_begin("work");
  for (int i = 0; i < 5000; ++i) {
    void* p = malloc(200 + i % 100);
    ++allocs;
    if (i % 2) free(p);
  }
  torture_count(argv[1], "allocs", allocs);
  torture_count(argv[1], "frees", allocs / 2);
  abort();
}
