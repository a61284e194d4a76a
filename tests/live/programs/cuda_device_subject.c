/* A real CUDA program for `run --cuda` on a device: rounds of cudaMalloc/cudaFree (runtime,
 * linked as the shared libcudart.so) and of cuMemAlloc/cuMemFree (driver), then a request no
 * device holds. Prints the statuses it got. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>

int main(void) {
  int bad = 0;
  if (cudaFree(NULL) != cudaSuccess) return 2; /* no device: nothing to do */
  for (int i = 0; i < 200; ++i) {
    void* a = NULL;
    if (cudaMalloc(&a, (size_t)(1 + i % 4) << 20) != cudaSuccess || a == NULL) ++bad;
    if ((uintptr_t)a % 256 != 0) ++bad;
    if (cudaMemset(a, 1, 4096) != cudaSuccess) ++bad;
    if (cudaFree(a) != cudaSuccess) ++bad;
  }
  for (int i = 0; i < 100; ++i) {
    CUdeviceptr p = 0;
    if (cuMemAlloc(&p, 1 << 20) != CUDA_SUCCESS || p == 0) ++bad;
    if (cuMemFree(p) != CUDA_SUCCESS) ++bad;
  }
  void* huge = NULL;
  const cudaError_t oom = cudaMalloc(&huge, (size_t)1 << 50);
  printf("huge: status %d\n", (int)oom);
  if (cudaDeviceSynchronize() != cudaSuccess) ++bad;
  printf("bad calls: %d\n", bad);
  return bad == 0 ? 0 : 1;
}
