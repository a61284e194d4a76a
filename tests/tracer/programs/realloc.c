/* realloc chains that grow in place and move, realloc(NULL, n), realloc(p, 0), reallocarray. */

#include <stdint.h>
#include <stdlib.h>

#include "torture.h"

int main(int argc, char** argv) {
  (void)argc;
  unsigned long long allocs = 0, frees = 0, in_place = 0, moved = 0;
  alloclab_run_begin("work");
  for (int chain = 0; chain < 50; ++chain) {
    /* A block that blocks growth now and then, so some steps must move. Allocated first and
     * freed first, so no two neighbouring events of the chain look like a realloc. */
    void* blocker = chain % 2 ? malloc(24) : NULL;
    if (blocker) ++allocs;
    char* p = realloc(NULL, 8); /* a malloc */
    ++allocs;
    for (size_t size = 16; size < 300000; size = size * 3 / 2 + 8) {
      uintptr_t before = (uintptr_t)p;
      char* q = chain % 3 == 0 ? reallocarray(p, size, 1) : realloc(p, size);
      if (!q) return 1;
      ++allocs, ++frees;
      if ((uintptr_t)q == before)
        ++in_place;
      else
        ++moved;
      q[size - 1] = 1;
      p = q;
    }
    alloclab_mark("chain end"); /* keeps the frees below from looking like a realloc */
    if (blocker) free(blocker), ++frees;
    if (chain % 5 == 0) {
      /* glibc: realloc(p, 0) frees p and returns NULL */
      void* r = realloc(p, 0);
      if (r) free(r);
      ++frees;
    } else {
      free(p);
      ++frees;
    }
  }
  alloclab_run_end();
  torture_count(argv[1], "allocs", allocs);
  torture_count(argv[1], "frees", frees);
  torture_count(argv[1], "in_place", in_place);
  torture_count(argv[1], "moved", moved);
  return 0;
}
