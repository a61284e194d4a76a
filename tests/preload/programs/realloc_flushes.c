/* Moving reallocs on one thread while another marks without pause: the markers use up the
 * tracer's label ring over and over, and each time ask its writer for a flush, which then lands
 * inside a realloc, between its free(old) and its alloc(new), many times over. */

#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "torture.h"

enum { kRounds = 20000, kSize = 64 * 1024 };

static atomic_int done;
static unsigned long long moved;

static void* reallocs(void* arg) {
  (void)arg;
  for (int round = 0; round < kRounds; ++round) {
    char* p = malloc(kSize);
    /* b, from the top of the heap right after p, keeps p from growing in place. */
    char* b = malloc(4096);
    if (!p || !b) abort();
    memset(p, round, 64);
    uintptr_t before = (uintptr_t)p;
    char* q = realloc(p, 2 * kSize);
    if (!q) abort();
    moved += (uintptr_t)q != before;
    free(b);
    free(q);
  }
  atomic_store(&done, 1);
  return NULL;
}

int main(int argc, char** argv) {
  (void)argc;
  /* Below the mmap threshold, so glibc copies instead of remapping. */
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  pthread_t thread;
  if (pthread_create(&thread, NULL, reallocs, NULL) != 0) return 1;
  unsigned long long marks = 0;
  while (!atomic_load(&done)) {
    alloclab_mark("tick");
    ++marks;
  }
  pthread_join(thread, NULL);
  torture_count(argv[1], "rounds", kRounds);
  torture_count(argv[1], "moved", moved);
  torture_count(argv[1], "marks", marks);
  return 0;
}
