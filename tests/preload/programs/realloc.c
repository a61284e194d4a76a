/* realloc chains that grow in place and move, realloc(NULL, n), realloc(p, 0), reallocarray,
 * many moving reallocs across the tracer's buffer boundaries and across its flushes, and big
 * blocks shrunk in place. */

#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "torture.h"

/* A block of a size class of its own, allocated and freed at once. */
static unsigned long long separate(void) {
  void* volatile s = malloc(1);
  if (!s) abort();
  free(s);
  return 1;
}

static unsigned long long allocs, frees, in_place, moved, shrunk_in_place;

/* A successful realloc of the block that was at `before`: one free and one alloc. */
static void count_realloc(uintptr_t before, const char* q) {
  ++allocs, ++frees;
  if ((uintptr_t)q == before)
    ++in_place;
  else
    ++moved;
}

int main(int argc, char** argv) {
  (void)argc;
  alloclab_run_begin("work");
  for (int chain = 0; chain < 50; ++chain) {
    /* Keeps the blocker below, which may get the address of the block the chain before freed
     * last, from looking like a realloc of it. */
    alloclab_mark("chain start");
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
      count_realloc(before, q);
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

  /* Many reallocs that must move (the next chunk is in use), so that some moved realloc's
   * alloc(new), which takes two adjacent slots of the tracer's buffer, meets the end of a
   * buffer. About thirteen slots per round and buffers of 65,536 slots: the boundary falls on
   * every position of the round within a few buffers. A small block allocated and freed at once
   * keeps neighbouring events of two steps from looking like a realloc (markers would do, but
   * this many would wait for the writer to empty the tracer's label ring). */
  alloclab_run_begin("work");
  for (int round = 0; round < 150000; ++round) {
    char* p = malloc(64);
    char* b = malloc(64);
    if (!p || !b) return 1;
    allocs += 2;
    allocs += separate(), frees += 1;
    uintptr_t before = (uintptr_t)p;
    char* q = realloc(p, 4096);
    if (!q) return 1;
    count_realloc(before, q);
    q[4095] = 1;
    allocs += separate(), frees += 1;
    free(b);
    free(q);
    frees += 2;
    allocs += separate(), frees += 1;
  }
  alloclab_run_end();

  /* Slow moving reallocs: 16 MiB copied into fresh pages, some milliseconds each, so the tracer's
   * periodic flush (every ~100 ms) lands inside several of them, between the realloc's free(old)
   * and its alloc(new). Below the mmap threshold, so glibc copies instead of remapping. */
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  alloclab_run_begin("work");
  for (int round = 0; round < 60; ++round) {
    /* b, from the top of the heap right after p, keeps p from growing in place. */
    char* p = malloc(16 << 20);
    char* b = malloc(1 << 20);
    if (!p || !b) return 1;
    allocs += 2;
    allocs += separate(), frees += 1;
    memset(p, round, 16 << 20);
    uintptr_t before = (uintptr_t)p;
    char* q = realloc(p, 24 << 20);
    if (!q) return 1;
    count_realloc(before, q);
    allocs += separate(), frees += 1;
    free(b);
    free(q);
    frees += 2;
    allocs += separate(), frees += 1;
  }
  alloclab_run_end();

  /* Big blocks shrunk: glibc splits the chunk and keeps its address (the mmap threshold set above
   * keeps 1 MiB on the heap). */
  alloclab_run_begin("work");
  for (int round = 0; round < 100; ++round) {
    char* p = malloc(1 << 20);
    if (!p) return 1;
    ++allocs;
    allocs += separate(), frees += 1;
    uintptr_t before = (uintptr_t)p;
    char* q = realloc(p, 4096);
    if (!q) return 1;
    count_realloc(before, q);
    if ((uintptr_t)q == before) ++shrunk_in_place;
    allocs += separate(), frees += 1;
    free(q);
    ++frees;
    allocs += separate(), frees += 1;
  }
  alloclab_run_end();
  torture_count(argv[1], "allocs", allocs);
  torture_count(argv[1], "frees", frees);
  torture_count(argv[1], "in_place", in_place);
  torture_count(argv[1], "moved", moved);
  torture_count(argv[1], "shrunk_in_place", shrunk_in_place);
  return 0;
}
