/* A program that marks its steps with NVTX ranges only, for `run --cuda --run-range`: argv[1]
 * steps, each a range "step N" (push/pop, start/end, or a domain's, in turn) holding a range
 * "inner" and 1 MiB host blocks (through the live library's strategy) and 1 MiB device blocks
 * (through the fake runtime, fake_cudart.c); before the steps, a range "warmup" that matches no
 * run pattern but allocates too. Prints the levels NVTX returned: the injection answers them. */
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cudaMalloc(void** out, size_t size);
int cudaFree(void* p);
int cudaSetDevice(int device);

static int bad = 0;

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
    if (cudaMalloc(&device[i], (size_t)1 << 20) != 0) ++bad;
  for (int i = 0; i < 3; ++i) free(host[i]);
  for (int i = 0; i < 2; ++i) cudaFree(device[i]);
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
