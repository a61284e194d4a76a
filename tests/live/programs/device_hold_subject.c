/* Holds many device blocks at once, so that a strategy's own tables grow large: "runtime N"
 * through cudaMalloc/cudaFree (the fake runtime, fake_cudart.c; under `run --cuda`), "torch LIB
 * N SPEC" through liballoclab_torch.so (LIB) as PyTorch calls it. Its own host allocations are
 * the array of N pointers and stdio's buffer. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

int cudaMalloc(void** out, size_t size);
int cudaFree(void* p);
int cudaSetDevice(int device);

typedef int (*Configure)(const char*, const char*, int, char*, size_t);
typedef void* (*Malloc)(ssize_t, int, void*);
typedef void (*Free)(void*, ssize_t, int, void*);

static size_t size_of(int i) {
  return 512 + (size_t)(i % 7) * 512;
}

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  const int torch = strcmp(argv[1], "torch") == 0;
  if (torch && argc < 5) return 2;
  const int n = atoi(argv[torch ? 3 : 2]);
  void** blocks = calloc((size_t)n, sizeof *blocks);
  if (!blocks) return 3;
  Configure configure = NULL;
  Malloc do_malloc = NULL;
  Free do_free = NULL;
  if (torch) {
    void* library = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
    if (!library) {
      fprintf(stderr, "%s\n", dlerror());
      return 2;
    }
    void* p = dlsym(library, "alloclab_torch_configure");
    memcpy(&configure, &p, sizeof p);
    p = dlsym(library, "alloclab_torch_malloc");
    memcpy(&do_malloc, &p, sizeof p);
    p = dlsym(library, "alloclab_torch_free");
    memcpy(&do_free, &p, sizeof p);
    char error[256];
    if (!configure || !do_malloc || !do_free || configure(argv[4], NULL, 0, error, sizeof error))
      return 4;
  }
  cudaSetDevice(0);
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    if (torch)
      blocks[i] = do_malloc((ssize_t)size_of(i), 0, NULL);
    else if (cudaMalloc(&blocks[i], size_of(i)) != 0)
      blocks[i] = NULL;
    if (!blocks[i]) ++bad;
  }
  for (int i = 0; i < n; ++i) {
    if (torch)
      do_free(blocks[i], (ssize_t)size_of(i), 0, NULL);
    else
      cudaFree(blocks[i]);
  }
  free(blocks);
  printf("held %d device blocks, bad calls: %d\n", n, bad);
  return bad == 0 ? 0 : 1;
}
