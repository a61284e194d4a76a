/* Run markers from C; also runs untraced (the markers are then no-ops). */
#include <stdlib.h>

#include "torture.h"

int main(int argc, char** argv) {
  (void)argc;
  for (int run = 0; run < 3; ++run) {
    alloclab_run_begin(run == 2
                           ? "a-label-longer-than-sixty-three-bytes-is-truncated-by-the-tracer-xyz"
                           : "forward");
    void* p = malloc(100000);
    alloclab_mark("middle");
    free(p);
    alloclab_run_end();
  }
  torture_count(argv[1], "runs", 3);
  return 0;
}
