/* A library that uses the fake runtime (fake_cudart.c), opened by local_cuda_subject in a local
 * scope as Python opens PyTorch's: the runtime it reaches is not in the global scope. */
#include <stdint.h>
#include <stdio.h>

int cudaMalloc(void** out, size_t size);
int cudaFree(void* p);
void fake_cuda_counts(void);

__attribute__((visibility("default"))) int fake_cuda_user_rounds(int rounds) {
  int bad = 0;
  for (int i = 0; i < rounds; ++i) {
    void* p = NULL;
    if (cudaMalloc(&p, (size_t)1 << 20) != 0 || p == NULL) ++bad;
    if (cudaFree(p) != 0) ++bad;
  }
  fake_cuda_counts();
  return bad;
}
