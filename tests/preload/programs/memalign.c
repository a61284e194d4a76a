/* The memalign family: every function, several alignments; counts per alignment. */

#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>

#include "torture.h"

int main(int argc, char** argv) {
  (void)argc;
  unsigned long long allocs = 0, a64 = 0, a4096 = 0, a256 = 0, bad = 0;
  void* keep[64];
  int kept = 0;
  alloclab_run_begin("work");
  for (int i = 0; i < 10; ++i) {
    void* p;
    if (posix_memalign(&p, 64, 1000 + i) == 0) keep[kept++] = p, ++allocs, ++a64;
    p = aligned_alloc(256, 512);
    if (p) keep[kept++] = p, ++allocs, ++a256;
    p = memalign(4096, 100);
    if (p) keep[kept++] = p, ++allocs, ++a4096;
    p = valloc(300);
    if (p) keep[kept++] = p, ++allocs, ++a4096;
    p = pvalloc(5000);
    if (p) keep[kept++] = p, ++allocs, ++a4096;
  }
  for (int i = 0; i < kept; ++i) {
    if ((uintptr_t)keep[i] % 64) ++bad;
    free(keep[i]);
  }
  alloclab_run_end();
  torture_count(argv[1], "allocs", allocs);
  torture_count(argv[1], "frees", allocs);
  torture_count(argv[1], "align64", a64);
  torture_count(argv[1], "align256", a256);
  torture_count(argv[1], "align4096", a4096);
  torture_count(argv[1], "misaligned", bad);
  return 0;
}
