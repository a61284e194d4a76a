/* Allocations from two distinct call sites, for `record --stacks`: stacks_site_one makes 40
 * blocks of 100 bytes, stacks_site_two 25 of 3000, each inside a run "sites". Built -O0 with
 * frame pointers and exported symbols (-rdynamic) so the functions keep their frames and
 * dladdr can name them; once with debug information (torture_stacks) and once without
 * (torture_stacks_nodebug). Writes site_one= and site_two= to the counters file (argv[1]), and
 * site_two_line=, the source line of stacks_site_two's call to malloc. */
#include <stdlib.h>

#include "torture.h"

void* stacks_site_one(void) {
  return torture_keep(malloc(100));
}

static const int site_two_line = __LINE__ + 2; /* the malloc below */
void* stacks_site_two(void) {
  return torture_keep(malloc(3000));
}

int main(int argc, char** argv) {
  void* blocks[65];
  int n = 0;
  alloclab_run_begin("sites");
  for (int i = 0; i < 40; ++i) blocks[n++] = stacks_site_one();
  for (int i = 0; i < 25; ++i) blocks[n++] = stacks_site_two();
  alloclab_run_end();
  for (int i = 0; i < n; ++i) free(blocks[i]);
  if (argc > 1) {
    torture_count(argv[1], "site_one", 40);
    torture_count(argv[1], "site_two", 25);
    torture_count(argv[1], "site_two_line", site_two_line);
  }
  return 0;
}
