/* PyTorch's side of liballoclab_torch.so (argv[1]), over the fake runtime (fake_cudart.c):
 * configure it (spec argv[2], reports to argv[3]), then allocate and free as
 * CUDAPluggableAllocator does, on devices 0 and 1 and two streams. Prints what it saw.
 * With `runs MARKED FIRST` after them, it marks runs through the library's exports instead, as
 * the Python markers do (see runs()); MARKED `env` leaves the library unconfigured, to its
 * environment (ALLOCLAB_LIVE_SPEC, _REPORT_DIR, _MARKERS). */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

int cudaSetDevice(int device);
void fake_cuda_counts(void);

typedef void* (*Malloc)(ssize_t, int, void*);
typedef void (*Free)(void*, ssize_t, int, void*);
typedef int (*Configure)(const char*, const char*, int, char*, size_t);
typedef void (*RunBegin)(const char*);
typedef void (*RunEnd)(void);

/* A function's address from dlsym, copied: ISO C has no conversion to a function pointer. */
static void symbol(void* library, const char* name, void* out, size_t size) {
  void* p = dlsym(library, name);
  if (!p) {
    fprintf(stderr, "%s: %s\n", name, dlerror());
    exit(2);
  }
  memcpy(out, &p, size);
}

static Malloc do_malloc;
static Free do_free;

/* `n` blocks of 1 MiB on `device`, each freed before the next is taken. */
static int cycle(int device, int n) {
  int bad = 0;
  cudaSetDevice(device);
  for (int i = 0; i < n; ++i) {
    void* p = do_malloc(1 << 20, device, (void*)0);
    if (!p) ++bad;
    do_free(p, 1 << 20, device, (void*)0);
  }
  return bad;
}

/* Runs of 10 blocks per device: with `marked` "1", runs come from markers only. With
 * `first` "marker", the first run begins before the first allocation (when the library has no
 * cache yet); with "allocation", device 0 allocates 10 blocks before any marker. Then the run
 * "warm-up" (device 0), 10 blocks outside any run, and the runs "step 1" and "step 2" (device
 * 0, then device 1, first used inside "step 1"). */
static int runs(void* library, const char* spec, const char* dir, const char* marked,
                const char* first) {
  Configure configure;
  RunBegin run_begin;
  RunEnd run_end;
  symbol(library, "alloclab_torch_configure", &configure, sizeof configure);
  symbol(library, "alloclab_torch_run_begin", &run_begin, sizeof run_begin);
  symbol(library, "alloclab_torch_run_end", &run_end, sizeof run_end);
  char error[256] = "";
  if (strcmp(marked, "env") != 0 &&
      configure(spec, dir, strcmp(marked, "1") == 0, error, sizeof error) != 0) {
    printf("configure: %s\n", error);
    return 4;
  }
  int bad = 0;
  if (strcmp(first, "allocation") == 0) bad += cycle(0, 10);
  run_begin("warm-up");
  bad += cycle(0, 10);
  run_end();
  bad += cycle(0, 10);
  run_begin("step 1");
  bad += cycle(0, 10) + cycle(1, 10);
  run_begin("step 2"); /* ends "step 1": runs do not nest */
  bad += cycle(0, 10) + cycle(1, 10);
  run_end();
  printf("bad calls: %d\n", bad);
  fake_cuda_counts();
  return bad == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc < 4) return 2;
  void* library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    fprintf(stderr, "%s\n", dlerror());
    return 2;
  }
  symbol(library, "alloclab_torch_malloc", &do_malloc, sizeof do_malloc);
  symbol(library, "alloclab_torch_free", &do_free, sizeof do_free);
  if (argc >= 7 && strcmp(argv[4], "runs") == 0)
    return runs(library, argv[2], argv[3], argv[5], argv[6]);
  Configure configure;
  symbol(library, "alloclab_torch_configure", &configure, sizeof configure);
  char error[256] = "";
  if (configure("no-such-strategy", argv[3], 0, error, sizeof error) == 0) return 3;
  printf("bad spec: %s\n", error);
  if (configure(argv[2], argv[3], 0, error, sizeof error) != 0) {
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
  if (configure(argv[2], argv[3], 0, error, sizeof error) == 0) return 5;
  printf("late configure: %s\n", error);
  printf("bad calls: %d\n", bad);
  fake_cuda_counts();
  return bad == 0 ? 0 : 1;
}
