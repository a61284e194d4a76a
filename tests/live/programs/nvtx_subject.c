/* A program that marks its steps with NVTX ranges only, for `run --cuda --run-range`: argv[1]
 * steps, each a range "step N" (push/pop, start/end, or a domain's, in turn) holding a range
 * "inner" and 1 MiB host blocks (through the live library's strategy) and 1 MiB device blocks
 * (through the fake runtime, fake_cudart.c); before the steps, a range "warmup" that matches no
 * run pattern but allocates too. With argv[2], the path of liballoclab_torch.so, the device
 * blocks come from it instead, opened in a local scope as PyTorch opens it (its strategy and
 * report folder from `run`'s environment). Prints the levels NVTX returned: the injection
 * answers them. */
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

int cudaMalloc(void** out, size_t size);
int cudaFree(void* p);
int cudaSetDevice(int device);

static int bad = 0;

typedef void* (*TorchMalloc)(ssize_t, int, void*);
typedef void (*TorchFree)(void*, ssize_t, int, void*);
static TorchMalloc torch_malloc;
static TorchFree torch_free;

static void* device_block(void) {
  void* p = NULL;
  if (torch_malloc) return torch_malloc((ssize_t)1 << 20, 0, NULL);
  return cudaMalloc(&p, (size_t)1 << 20) == 0 ? p : NULL;
}

static void free_device_block(void* p) {
  if (torch_free)
    torch_free(p, (ssize_t)1 << 20, 0, NULL);
  else
    cudaFree(p);
}

static void work(void) {
  void* host[3];
  void* device[2];
  for (int i = 0; i < 3; ++i) {
    host[i] = malloc((size_t)1 << 20);
    if (!host[i])
      ++bad;
    else
      memset(host[i], i, 64);
  }
  for (int i = 0; i < 2; ++i)
    if (!(device[i] = device_block())) ++bad;
  for (int i = 0; i < 3; ++i) free(host[i]);
  for (int i = 0; i < 2; ++i) free_device_block(device[i]);
}

static nvtxEventAttributes_t named(const char* name) {
  nvtxEventAttributes_t attributes;
  memset(&attributes, 0, sizeof attributes);
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attributes.message.ascii = name;
  return attributes;
}

int main(int argc, char** argv) {
  const int steps = argc > 1 ? atoi(argv[1]) : 6;
  if (argc > 2) {
    void* library = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
    void* p = library ? dlsym(library, "alloclab_torch_malloc") : NULL;
    memcpy(&torch_malloc, &p, sizeof p);
    p = library ? dlsym(library, "alloclab_torch_free") : NULL;
    memcpy(&torch_free, &p, sizeof p);
    if (!torch_malloc || !torch_free) {
      fprintf(stderr, "%s: %s\n", argv[2], dlerror());
      return 2;
    }
  }
  nvtxDomainHandle_t domain = nvtxDomainCreateA("alloclab-test");
  cudaSetDevice(0);
  int warmup_level = nvtxRangePushA("warmup");
  work();
  int warmup_pop = nvtxRangePop();
  int step_levels = 0;
  for (int step = 0; step < steps; ++step) {
    char name[32];
    snprintf(name, sizeof name, "step %d", step);
    const nvtxEventAttributes_t attributes = named(name);
    const nvtxEventAttributes_t inner = named("inner");
    switch (step % 3) {
      case 0:
        step_levels += nvtxRangePushA(name);
        step_levels += nvtxRangePushEx(&inner);
        work();
        nvtxRangePop();
        work();
        nvtxRangePop();
        break;
      case 1: {
        const nvtxRangeId_t id = nvtxRangeStartEx(&attributes);
        const nvtxRangeId_t inner_id = nvtxRangeStartA("step inside a step");
        work();
        nvtxRangeEnd(inner_id);
        work();
        nvtxRangeEnd(id);
        break;
      }
      default:
        step_levels += nvtxDomainRangePushEx(domain, &attributes);
        work();
        work();
        nvtxDomainRangePop(domain);
    }
  }
  int stray_pop = nvtxRangePop();
  printf("levels: warmup %d pop %d steps %d stray pop %d\n", warmup_level, warmup_pop, step_levels,
         stray_pop);
  printf("bad calls: %d\n", bad);
  nvtxDomainDestroy(domain);
  return bad == 0 ? 0 : 1;
}
