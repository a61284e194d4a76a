/* Allocation sites whose ranking is known, for `alloclab sites` on a trace recorded with
 * `record --stacks`. Built -O0 with frame pointers, no inlining and exported symbols, so each
 * function keeps its frame and dladdr names it:
 *   sites_new_sizes   300 blocks, each larger than any before: a miss each under exact (and
 *                     best-fit), so it ranks first for misses;
 *   sites_same_size   400 blocks of one size, one at a time: one miss under exact, then hits;
 *   sites_odd_sizes   a 128 KiB block, then 100 requests just above 64 KiB that best-fit serves
 *                     from it: nearly 64 KiB of slack each, so it ranks first for slack;
 *   sites_holder      50 blocks of 64 KiB held until the end: most of what is live at the
 *                     peak. */
#include <stdlib.h>

/* Stores every block where the compiler cannot see it unused. */
void* volatile sites_sink;

void sites_new_sizes(void) {
  for (int i = 0; i < 300; ++i) {
    sites_sink = malloc(5000 + 16 * (size_t)i);
    free(sites_sink);
  }
}

void sites_same_size(void) {
  for (int i = 0; i < 400; ++i) {
    sites_sink = malloc(4096);
    free(sites_sink);
  }
}

void sites_odd_sizes(void) {
  sites_sink = malloc(128 * 1024);
  free(sites_sink);
  for (int i = 0; i < 100; ++i) {
    sites_sink = malloc(64 * 1024 + 1);
    free(sites_sink);
  }
}

void* sites_holder(void) {
  return malloc(64 * 1024);
}

int main(void) {
  void* held[50];
  sites_new_sizes();
  sites_same_size();
  sites_odd_sizes();
  for (int i = 0; i < 50; ++i) held[i] = sites_holder();
  for (int i = 0; i < 50; ++i) free(held[i]);
  return 0;
}
