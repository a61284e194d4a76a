/* PyTorch's side of liballoclab_torch.so (argv[1]), over the fake runtime (fake_cudart.c):
 * configure it (spec argv[2], reports to argv[3]), then allocate and free as
 * CUDAPluggableAllocator does, on devices 0 and 1 and two streams. Prints what it saw. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

int cudaSetDevice(int device);
void fake_cuda_counts(void);

typedef int (*Configure)(const char*, const char*, char*, size_t);
typedef void* (*Malloc)(ssize_t, int, void*);
typedef void (*Free)(void*, ssize_t, int, void*);

/* A function's address from dlsym, copied: ISO C has no conversion to a function pointer. */
static void symbol(void* library, const char* name, void* out, size_t size) {
  void* p = dlsym(library, name);
  if (!p) {
    fprintf(stderr, "%s: %s\n", name, dlerror());
    exit(2);
  }
  memcpy(out, &p, size);
}

int main(int argc, char** argv) {
  if (argc < 4) return 2;
  void* library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    fprintf(stderr, "%s\n", dlerror());
    return 2;
  }
  Configure configure;
  Malloc do_malloc;
  Free do_free;
  symbol(library, "alloclab_torch_configure", &configure, sizeof configure);
  symbol(library, "alloclab_torch_malloc", &do_malloc, sizeof do_malloc);
  symbol(library, "alloclab_torch_free", &do_free, sizeof do_free);
  char error[256] = "";
  if (configure("no-such-strategy", argv[3], error, sizeof error) == 0) return 3;
  printf("bad spec: %s\n", error);
  if (configure(argv[2], argv[3], error, sizeof error) != 0) {
    printf("configure: %s\n", error);
    return 4;
  }
  void* streams[2] = {(void*)0, (void*)0x1234};
  int bad = 0;
  for (int device = 0; device < 2; ++device) {
    cudaSetDevice(device);
    for (int i = 0; i < 50; ++i) {
      void* p = do_malloc(1 << 20, device, streams[i % 2]);
      if (!p || (uintptr_t)p % 256 != 0) ++bad;
      do_free(p, 1 << 20, device, streams[i % 2]);
    }
  }
  cudaSetDevice(0);
  void* huge = do_malloc((ssize_t)1 << 40, 0, streams[0]);
  printf("huge: %s\n", huge ? "set" : "null");
  if (configure(argv[2], argv[3], error, sizeof error) == 0) return 5;
  printf("late configure: %s\n", error);
  printf("bad calls: %d\n", bad);
  fake_cuda_counts();
  return bad == 0 ? 0 : 1;
}
