/* Every way an anonymous mapping stops being mapped, as allocators and runtimes do it, inside a
 * run; at its end nothing mapped in it is left. Counts the mapping events the trace must hold
 * (docs/recording.md: a part that stays mapped is a block of its own), and where the pieces
 * should be:
 *   - jemalloc's alignment: map twice the size, unmap the unaligned head and tail, later the rest
 *   - a PROT_NONE reservation (address space, not memory: never an allocation itself) with
 *     pages mapped over it with MAP_FIXED (GPU runtimes, JITs), a hole punched into it, then
 *     the whole reservation unmapped in one call
 *   - a reservation committed and decommitted with mprotect, and a mapping made PROT_NONE and
 *     accessible again
 *   - mremap that grows and moves, and one that shrinks in place; a reservation it grows,
 *     committed afterwards
 *   - two adjacent mappings unmapped in one call
 * mappings COUNTS_FILE [ROUNDS] (default 50) */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "torture.h"

static unsigned long long maps, unmaps;

static char* map(size_t bytes) {
  char* p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) exit(1);
  ++maps;
  p[0] = 1;
  return p;
}

static void unmap_all_of(char* p, size_t bytes, unsigned recorded_mappings) {
  if (munmap(p, bytes) != 0) exit(1);
  unmaps += recorded_mappings;
}

int main(int argc, char** argv) {
  const int rounds = argc > 2 ? atoi(argv[2]) : 50;
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  const size_t chunk = 2u << 20;
  alloclab_run_begin("work");
  for (int round = 0; round < rounds; ++round) {
    /* Alignment by trimming: each trim frees the block and allocates what stays. */
    char* raw = map(2 * chunk);
    char* aligned = (char*)(((uintptr_t)raw + chunk - 1) & ~(uintptr_t)(chunk - 1));
    if (aligned > raw) {
      if (munmap(raw, (size_t)(aligned - raw)) != 0) return 1;
      ++unmaps, ++maps;
    }
    if (aligned + chunk < raw + 2 * chunk) {
      if (munmap(aligned + chunk, (size_t)(raw + 2 * chunk - (aligned + chunk))) != 0) return 1;
      ++unmaps, ++maps;
    }
    aligned[chunk - 1] = 1;

    /* A reservation, four pages mapped over its start: only the new mapping is a block. */
    char* reserve = mmap(NULL, 16 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (reserve == MAP_FAILED) return 1;
    char* inside = mmap(reserve, 4 * page, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (inside != reserve) return 1;
    ++maps;
    inside[0] = 1;
    /* A hole in the reserved pages: nothing to record. */
    if (munmap(reserve + 8 * page, 2 * page) != 0) return 1;
    /* All sixteen pages at once: the four-page mapping. */
    unmap_all_of(reserve, 16 * page, 1);

    /* Committed with mprotect: pages 2-5 of a reservation, then pages 8-9. Decommitting page 3
     * frees the first block and allocates pages 2 and 4-5, which stay. */
    char* arena = mmap(NULL, 16 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (arena == MAP_FAILED) return 1;
    if (mprotect(arena + 2 * page, 4 * page, PROT_READ | PROT_WRITE) != 0) return 1;
    ++maps;
    arena[2 * page] = 1;
    if (mprotect(arena + 8 * page, 2 * page, PROT_READ | PROT_WRITE) != 0) return 1;
    ++maps;
    if (mprotect(arena + 3 * page, page, PROT_NONE) != 0) return 1;
    ++unmaps, maps += 2;
    /* Read-only is still accessible: nothing changes. */
    if (mprotect(arena + 8 * page, 2 * page, PROT_READ) != 0) return 1;
    unmap_all_of(arena, 16 * page, 3);

    /* A mapping made PROT_NONE (freed: a reservation now) and accessible again (allocated). */
    char* guard = map(4 * page);
    if (mprotect(guard, 4 * page, PROT_NONE) != 0) return 1;
    ++unmaps;
    if (mprotect(guard, 4 * page, PROT_READ | PROT_WRITE) != 0) return 1;
    ++maps;
    guard[0] = 1;
    unmap_all_of(guard, 4 * page, 1);

    /* mremap: grow (and perhaps move), then shrink in place. */
    char* grow = map(page);
    grow = mremap(grow, page, 64 * page, MREMAP_MAYMOVE);
    if (grow == MAP_FAILED) return 1;
    ++unmaps, ++maps;
    grow[64 * page - 1] = 1;
    if (mremap(grow, 64 * page, 8 * page, 0) != grow) return 1;
    ++unmaps, ++maps;
    unmap_all_of(grow, 8 * page, 1);

    /* A reservation that mremap grows (in place or moved) stays one: pages committed where it
     * ended up are an allocation. */
    char* heap = mmap(NULL, 4 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (heap == MAP_FAILED) return 1;
    heap = mremap(heap, 4 * page, 32 * page, MREMAP_MAYMOVE);
    if (heap == MAP_FAILED) return 1;
    if (mprotect(heap + 16 * page, 4 * page, PROT_READ | PROT_WRITE) != 0) return 1;
    ++maps;
    heap[16 * page] = 1;
    unmap_all_of(heap, 32 * page, 1);

    /* Two mappings side by side (one MAP_FIXED into the other's reservation), one munmap. */
    char* pair = map(8 * page);
    if (mmap(pair + 4 * page, 4 * page, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != pair + 4 * page)
      return 1;
    ++unmaps, maps += 2; /* the first is freed, its lower half stays, the new one */
    unmap_all_of(pair, 8 * page, 2);

    unmap_all_of(aligned, chunk, 1);
  }
  alloclab_run_end();
  torture_count(argv[1], "maps", maps);
  torture_count(argv[1], "unmaps", unmaps);
  return 0;
}
