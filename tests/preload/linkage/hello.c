/* A program that allocates and, given a path, creates that file: `record` must refuse or warn
 * about it depending on how it was built (tests/preload/linkage_test.cpp builds it statically and
 * with AddressSanitizer). */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  for (int i = 0; i < 1000; ++i) {
    void* volatile p = malloc(100 + (size_t)i);
    free(p);
  }
  if (argc > 1) {
    FILE* ran = fopen(argv[1], "w");
    if (!ran) return 1;
    fclose(ran);
  }
  return 0;
}
