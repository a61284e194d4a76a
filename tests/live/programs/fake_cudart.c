/* A stand-in for the CUDA runtime (built as libcudart.so in a folder of its own), so that
 * `run --cuda` and the PyTorch allocator can be tested end to end without a device: the device
 * calls alloclab's libraries make, with host memory as "device" memory. Two devices, each with
 * FAKE_CUDA_DEVICE_BYTES (default 64 MiB) of memory; cudaMalloc fails as the real one does
 * (cudaErrorMemoryAllocation, and the sticky last error). Every call is counted, and
 * fake_cuda_counts() prints the counts. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
enum { kSuccess = 0, kInvalidValue = 1, kMemoryAllocation = 2, kInvalidDevice = 101 };
enum { kDevices = 2, kMaxBlocks = 4096 };

struct Block {
  void* p;
  size_t size;
  int device;
};
static struct Block blocks[kMaxBlocks];
static size_t in_use[kDevices];
static __thread int current;
static int last_error;
static long mallocs, frees, null_frees, unknown_frees;

static size_t device_bytes(void) {
  const char* env = getenv("FAKE_CUDA_DEVICE_BYTES");
  return env ? (size_t)strtoull(env, NULL, 10) : (size_t)64 << 20;
}

EXPORT int cudaGetDevice(int* device) {
  *device = current;
  return kSuccess;
}
EXPORT int cudaSetDevice(int device) {
  if (device < 0 || device >= kDevices) return last_error = kInvalidDevice;
  current = device;
  return kSuccess;
}
EXPORT int cudaGetLastError(void) {
  const int e = last_error;
  last_error = kSuccess;
  return e;
}
EXPORT int cudaMalloc(void** out, size_t size) {
  ++mallocs;
  *out = NULL;
  if (size == 0) return kSuccess;
  if (size > device_bytes() - in_use[current]) return last_error = kMemoryAllocation;
  for (int i = 0; i < kMaxBlocks; ++i) {
    if (blocks[i].p) continue;
    void* p = aligned_alloc(512, (size + 511) / 512 * 512);
    if (!p) return last_error = kMemoryAllocation;
    blocks[i] = (struct Block){p, size, current};
    in_use[current] += size;
    *out = p;
    return kSuccess;
  }
  return last_error = kMemoryAllocation;
}
EXPORT int cudaFree(void* p) {
  ++frees;
  if (!p) {
    ++null_frees; /* context creation */
    return kSuccess;
  }
  for (int i = 0; i < kMaxBlocks; ++i) {
    if (blocks[i].p != p) continue;
    in_use[blocks[i].device] -= blocks[i].size;
    free(p);
    blocks[i].p = NULL;
    return kSuccess;
  }
  ++unknown_frees;
  return last_error = kInvalidValue;
}
EXPORT int cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  *total = device_bytes();
  *free_bytes = device_bytes() - in_use[current];
  return kSuccess;
}
EXPORT void fake_cuda_counts(void) {
  printf("fake cuda: mallocs=%ld frees=%ld null_frees=%ld unknown_frees=%ld in_use=%zu,%zu\n",
         mallocs, frees, null_frees, unknown_frees, in_use[0], in_use[1]);
}
