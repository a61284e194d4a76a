// Calls every allocation API the CUDA tracer records, once each, and prints what it did, one
// line per expected event, so a test can hold the trace against the program's own account:
//   every_api: alloc api=NAME kind=KIND size=BYTES address=0xA stream=0xS pool=0xP
//   every_api: free api=NAME kind=KIND address=0xA
// A failed allocation is expected as an alloc at address 0. The first call is a cudaMalloc on
// purpose: CUDA, and so the tracer, starts inside it. Exits 1 naming the call when one fails
// that should not.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

void check(cudaError_t status, const char* call) {
  if (status == cudaSuccess) return;
  std::fprintf(stderr, "every_api: %s failed: %s\n", call, cudaGetErrorString(status));
  std::exit(1);
}

void check(CUresult status, const char* call) {
  if (status == CUDA_SUCCESS) return;
  const char* why = nullptr;
  cuGetErrorString(status, &why);
  std::fprintf(stderr, "every_api: %s failed: %s\n", call, why ? why : "unknown error");
  std::exit(1);
}

std::uintptr_t bits(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p);
}

void allocated(const char* api, const char* kind, std::uint64_t size, std::uintptr_t address,
               const void* stream = nullptr, const void* pool = nullptr) {
  std::printf(
      "every_api: alloc api=%s kind=%s size=%llu address=0x%llx stream=0x%llx pool=0x%llx\n", api,
      kind, static_cast<unsigned long long>(size), static_cast<unsigned long long>(address),
      static_cast<unsigned long long>(bits(stream)), static_cast<unsigned long long>(bits(pool)));
}

void freed(const char* api, const char* kind, std::uintptr_t address) {
  std::printf("every_api: free api=%s kind=%s address=0x%llx\n", api, kind,
              static_cast<unsigned long long>(address));
}

void runtime_api(cudaStream_t stream, cudaMemPool_t pool) {
  void* p = nullptr;
  check(cudaMalloc(&p, 1000), "cudaMalloc");
  allocated("cudaMalloc", "device", 1000, bits(p));
  check(cudaFree(p), "cudaFree");
  freed("cudaFree", "device", bits(p));

  // A failed allocation: recorded at address 0, and CUDA's error state cleared after it.
  void* none = nullptr;
  const std::uint64_t too_big = std::uint64_t{1} << 52;
  if (cudaMalloc(&none, too_big) == cudaSuccess) {
    std::fprintf(stderr, "every_api: a 4 PiB cudaMalloc succeeded\n");
    std::exit(1);
  }
  cudaGetLastError();
  allocated("cudaMalloc", "device", too_big, 0);

  // A zero-byte request: no event when it succeeds with no address (what CUDA does), else
  // whatever it returned.
  const cudaError_t zero = cudaMalloc(&none, 0);
  cudaGetLastError();
  if (zero != cudaSuccess) {
    allocated("cudaMalloc", "device", 0, 0);
  } else if (none) {
    allocated("cudaMalloc", "device", 0, bits(none));
    check(cudaFree(none), "cudaFree");
    freed("cudaFree", "device", bits(none));
  }
  std::printf("every_api: zero-byte cudaMalloc returned %s and %s\n", cudaGetErrorName(zero),
              none ? "an address" : "no address");

  std::size_t pitch = 0;
  check(cudaMallocPitch(&p, &pitch, 100, 7), "cudaMallocPitch");
  allocated("cudaMallocPitch", "device", pitch * 7, bits(p));
  check(cudaFree(p), "cudaFree");
  freed("cudaFree", "device", bits(p));

  cudaPitchedPtr pitched{};
  check(cudaMalloc3D(&pitched, make_cudaExtent(64, 3, 5)), "cudaMalloc3D");
  allocated("cudaMalloc3D", "device", pitched.pitch * 3 * 5, bits(pitched.ptr));
  check(cudaFree(pitched.ptr), "cudaFree");
  freed("cudaFree", "device", bits(pitched.ptr));

  check(cudaMallocManaged(&p, 3000), "cudaMallocManaged");
  allocated("cudaMallocManaged", "managed", 3000, bits(p));
  check(cudaFree(p), "cudaFree");
  freed("cudaFree", "managed", bits(p));

  check(cudaMallocHost(&p, 4000), "cudaMallocHost");
  allocated("cudaMallocHost", "pinned", 4000, bits(p));
  check(cudaFreeHost(p), "cudaFreeHost");
  freed("cudaFreeHost", "pinned", bits(p));

  check(cudaHostAlloc(&p, 5000, cudaHostAllocMapped), "cudaHostAlloc");
  allocated("cudaHostAlloc", "pinned", 5000, bits(p));
  check(cudaFreeHost(p), "cudaFreeHost");
  freed("cudaFreeHost", "pinned", bits(p));

  check(cudaMallocAsync(&p, 6000, stream), "cudaMallocAsync");
  allocated("cudaMallocAsync", "async-pool", 6000, bits(p), stream);
  check(cudaFreeAsync(p, stream), "cudaFreeAsync");
  freed("cudaFreeAsync", "async-pool", bits(p));

  check(cudaMallocFromPoolAsync(&p, 7000, pool, stream), "cudaMallocFromPoolAsync");
  allocated("cudaMallocFromPoolAsync", "async-pool", 7000, bits(p), stream, pool);
  check(cudaFreeAsync(p, stream), "cudaFreeAsync");
  freed("cudaFreeAsync", "async-pool", bits(p));
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
}

void driver_api(CUstream stream, CUmemoryPool pool) {
  CUdeviceptr d = 0;
  check(cuMemAlloc(&d, 8000), "cuMemAlloc");
  allocated("cuMemAlloc", "device", 8000, d);
  check(cuMemFree(d), "cuMemFree");
  freed("cuMemFree", "device", d);

  std::size_t pitch = 0;
  check(cuMemAllocPitch(&d, &pitch, 200, 9, 4), "cuMemAllocPitch");
  allocated("cuMemAllocPitch", "device", pitch * 9, d);
  check(cuMemFree(d), "cuMemFree");
  freed("cuMemFree", "device", d);

  check(cuMemAllocManaged(&d, 9000, CU_MEM_ATTACH_GLOBAL), "cuMemAllocManaged");
  allocated("cuMemAllocManaged", "managed", 9000, d);
  check(cuMemFree(d), "cuMemFree");
  freed("cuMemFree", "managed", d);

  void* h = nullptr;
  check(cuMemAllocHost(&h, 10000), "cuMemAllocHost");
  allocated("cuMemAllocHost", "pinned", 10000, bits(h));
  check(cuMemFreeHost(h), "cuMemFreeHost");
  freed("cuMemFreeHost", "pinned", bits(h));

  check(cuMemHostAlloc(&h, 11000, CU_MEMHOSTALLOC_PORTABLE), "cuMemHostAlloc");
  allocated("cuMemHostAlloc", "pinned", 11000, bits(h));
  check(cuMemFreeHost(h), "cuMemFreeHost");
  freed("cuMemFreeHost", "pinned", bits(h));

  check(cuMemAllocAsync(&d, 12000, stream), "cuMemAllocAsync");
  allocated("cuMemAllocAsync", "async-pool", 12000, d, stream);
  check(cuMemFreeAsync(d, stream), "cuMemFreeAsync");
  freed("cuMemFreeAsync", "async-pool", d);

  check(cuMemAllocFromPoolAsync(&d, 13000, pool, stream), "cuMemAllocFromPoolAsync");
  allocated("cuMemAllocFromPoolAsync", "async-pool", 13000, d, stream, pool);
  check(cuMemFreeAsync(d, stream), "cuMemFreeAsync");
  freed("cuMemFreeAsync", "async-pool", d);
  check(cuStreamSynchronize(stream), "cuStreamSynchronize");
}

// A virtual-memory allocator: two physical chunks mapped side by side into one reserved range,
// released while still mapped (the mapping keeps them), then unmapped by one call.
void virtual_memory_api(int device) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  std::size_t granularity = 0;
  check(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
        "cuMemGetAllocationGranularity");
  CUmemGenericAllocationHandle first = 0, second = 0;
  check(cuMemCreate(&first, granularity, &prop, 0), "cuMemCreate");
  check(cuMemCreate(&second, granularity, &prop, 0), "cuMemCreate");
  CUdeviceptr base = 0;
  check(cuMemAddressReserve(&base, 2 * granularity, 0, 0, 0), "cuMemAddressReserve");
  check(cuMemMap(base, granularity, 0, first, 0), "cuMemMap");
  allocated("cuMemMap", "vmm", granularity, base);
  check(cuMemMap(base + granularity, granularity, 0, second, 0), "cuMemMap");
  allocated("cuMemMap", "vmm", granularity, base + granularity);
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  check(cuMemSetAccess(base, 2 * granularity, &access, 1), "cuMemSetAccess");
  check(cuMemRelease(first), "cuMemRelease");
  check(cuMemRelease(second), "cuMemRelease");
  check(cuMemUnmap(base, 2 * granularity), "cuMemUnmap");
  freed("cuMemUnmap", "vmm", base);
  freed("cuMemUnmap", "vmm", base + granularity);
  check(cuMemAddressFree(base, 2 * granularity), "cuMemAddressFree");
}

}  // namespace

int main() {
  void* first = nullptr;
  check(cudaMalloc(&first, 512), "cudaMalloc");
  allocated("cudaMalloc", "device", 512, bits(first));
  check(cudaFree(first), "cudaFree");
  freed("cudaFree", "device", bits(first));

  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t pool = nullptr;
  check(cudaMemPoolCreate(&pool, &props), "cudaMemPoolCreate");

  runtime_api(stream, pool);
  driver_api(stream, pool);
  virtual_memory_api(device);

  check(cudaMemPoolDestroy(pool), "cudaMemPoolDestroy");
  check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  std::fflush(stdout);
  return 0;
}
