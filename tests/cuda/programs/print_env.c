/* Writes the environment variables `alloclab record` sets for its tracers to the file named by
 * argv[1] (NAME=VALUE, or NAME unset), then allocates a little so a CPU tracer has something. */
#include <stdio.h>
#include <stdlib.h>

static const char* const names[] = {
    "CUDA_INJECTION64_PATH", "ALLOCLAB_CUDA_OUTPUT", "ALLOCLAB_RUN_RANGE",
    "NVTX_INJECTION64_PATH", "LD_PRELOAD",           "ALLOCLAB_OUTPUT",
    "ALLOCLAB_STACKS"};

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  FILE* out = fopen(argv[1], "w");
  if (!out) return 3;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
    const char* value = getenv(names[i]);
    if (value)
      fprintf(out, "%s=%s\n", names[i], value);
    else
      fprintf(out, "%s unset\n", names[i]);
  }
  fclose(out);
  for (int i = 0; i < 10; ++i) free(malloc(1000 + (size_t)i));
  return 0;
}
