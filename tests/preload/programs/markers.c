/* Run markers from C; also runs untraced (the markers are then no-ops). With the argument
 * "flood": 100,000 marks with labels of their own, as fast as the program can, inside one run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "torture.h"

int main(int argc, char** argv) {
  if (argc > 2 && strcmp(argv[2], "flood") == 0) {
    alloclab_run_begin("flood");
    for (int i = 0; i < 100000; ++i) {
      char label[32];
      snprintf(label, sizeof label, "m%d", i);
      alloclab_mark(label);
    }
    alloclab_run_end();
    torture_count(argv[1], "marks", 100000);
    return 0;
  }
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
