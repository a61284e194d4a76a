/* Opens argv[1] (fake_cuda_user) with RTLD_LOCAL and runs its rounds of cudaMalloc/cudaFree:
 * a program whose CUDA runtime only a library opened in a local scope reaches. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef int (*Rounds)(int);

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  void* library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  void* symbol = library ? dlsym(library, "fake_cuda_user_rounds") : NULL;
  if (!symbol) {
    fprintf(stderr, "%s\n", dlerror());
    return 2;
  }
  Rounds rounds;
  memcpy(&rounds, &symbol, sizeof rounds);
  const int bad = rounds(100);
  printf("bad calls: %d\n", bad);
  return bad == 0 ? 0 : 1;
}
