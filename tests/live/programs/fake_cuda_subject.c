/* A "CUDA" program for `run --cuda` over the fake runtime (fake_cudart.c): cudaFree(0), then
 * rounds of cudaMalloc/cudaFree on devices 0 and 1 (each device's rounds one marked run with
 * "markers" as the second argument), a request no device can hold, and a free of a pointer the
 * runtime never gave. Prints the statuses it got and the runtime's counts. */
#include <alloclab/markers.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cudaMalloc(void** out, size_t size);
int cudaFree(void* p);
int cudaSetDevice(int device);
int cudaGetLastError(void);
void fake_cuda_counts(void);

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 100;
  const int markers = argc > 2 && strcmp(argv[2], "markers") == 0;
  int bad = 0;
  if (cudaFree(NULL) != 0) ++bad;
  for (int device = 0; device < 2; ++device) {
    if (cudaSetDevice(device) != 0) ++bad;
    if (markers) alloclab_run_begin(device == 0 ? "device 0" : "device 1");
    for (int i = 0; i < rounds; ++i) {
      void* a = NULL;
      void* b = NULL;
      if (cudaMalloc(&a, (size_t)(1 + device) << 20) != 0 || a == NULL) ++bad;
      if (cudaMalloc(&b, 1000 + (size_t)i) != 0 || b == NULL) ++bad;
      if ((uintptr_t)a % 256 != 0 || (uintptr_t)b % 256 != 0) ++bad;
      if (cudaFree(b) != 0 || cudaFree(a) != 0) ++bad;
    }
    if (markers) alloclab_run_end();
  }
  void* huge = (void*)1;
  const int oom = cudaMalloc(&huge, (size_t)1 << 40);
  printf("huge: status %d, pointer %s, last error %d\n", oom, huge ? "set" : "null",
         cudaGetLastError());
  int local = 0;
  printf("foreign free: status %d\n", cudaFree(&local));
  cudaGetLastError();
  printf("bad calls: %d\n", bad);
  fake_cuda_counts();
  return bad == 0 ? 0 : 1;
}
