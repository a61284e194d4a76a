#include "alloclab/strategies/upstream/cuda.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <limits>
#include <string>

#include "alloclab/strategies/upstream/registry.hpp"

namespace alloclab {
namespace {

cudaStream_t as_stream(void* stream) {
  return static_cast<cudaStream_t>(stream);
}

void* as_pointer(std::uint64_t address) {
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(address));
}

[[noreturn]] void fail(const char* call, cudaError_t error) {
  cudaGetLastError();  // clear a sticky error, if this one is
  throw UpstreamError(std::string("cuda: ") + call + " failed: " + cudaGetErrorString(error));
}

}  // namespace

std::optional<std::string> CudaUpstream::unavailable() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    cudaGetLastError();
    return std::string("cuda: no CUDA device available (cudaGetDeviceCount: ") +
           cudaGetErrorString(error) + ")";
  }
  if (count == 0)
    return std::string("cuda: no CUDA device available (cudaGetDeviceCount: 0 devices)");
  return std::nullopt;
}

CudaUpstream::CudaUpstream(Kind kind, const Options& options) : kind_(kind) {
  if (std::optional<std::string> why = unavailable()) throw UpstreamError(*why);
  cudaError_t error = cudaGetDevice(&device_);
  if (error != cudaSuccess) fail("cudaGetDevice", error);
  // Create the context now, not inside the first timed call.
  error = cudaFree(nullptr);
  if (error != cudaSuccess) fail("cudaFree(nullptr) (context creation)", error);
  if (kind_ == Kind::host) return;
  cudaStream_t stream = nullptr;
  error = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  if (error != cudaSuccess) fail("cudaStreamCreateWithFlags", error);
  stream_ = stream;
  if (kind_ != Kind::async) return;
  cudaMemPool_t pool = nullptr;
  error = cudaDeviceGetDefaultMemPool(&pool, device_);
  if (error == cudaSuccess) {
    std::uint64_t threshold = options.release_threshold;  // the attribute is a cuuint64_t
    error = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold);
  }
  if (error != cudaSuccess) {
    cudaStreamDestroy(stream);
    stream_ = nullptr;
    fail("setting the memory pool's release threshold", error);
  }
}

CudaUpstream::~CudaUpstream() {
  if (stream_ == nullptr) return;
  cudaStreamSynchronize(as_stream(stream_));
  cudaStreamDestroy(as_stream(stream_));
  cudaGetLastError();
}

std::optional<Block> CudaUpstream::allocate(std::uint64_t bytes) {
  if (bytes > std::numeric_limits<std::size_t>::max()) return std::nullopt;
  const auto size = static_cast<std::size_t>(std::max<std::uint64_t>(bytes, 1));
  void* p = nullptr;
  cudaError_t error = cudaSuccess;
  switch (kind_) {
    case Kind::device:
      error = cudaMalloc(&p, size);
      break;
    case Kind::async:
      error = cudaMallocAsync(&p, size, as_stream(stream_));
      if (error == cudaSuccess) error = cudaStreamSynchronize(as_stream(stream_));
      break;
    case Kind::host:
      error = cudaMallocHost(&p, size);
      break;
  }
  if (error != cudaSuccess || p == nullptr) {
    cudaGetLastError();  // out of memory (or worse): a failed allocation, never a crash
    return std::nullopt;
  }
  return Block{reinterpret_cast<std::uintptr_t>(p), bytes};
}

void CudaUpstream::deallocate(const Block& block) {
  cudaError_t error = cudaSuccess;
  switch (kind_) {
    case Kind::device:
      error = cudaFree(as_pointer(block.address));
      break;
    case Kind::async:
      error = cudaFreeAsync(as_pointer(block.address), as_stream(stream_));
      break;
    case Kind::host:
      error = cudaFreeHost(as_pointer(block.address));
      break;
  }
  if (error != cudaSuccess) cudaGetLastError();
}

void CudaUpstream::touch(std::uint64_t address, std::uint64_t bytes) {
  if (kind_ == Kind::host) {
    touch_host_pages(address, bytes);
    return;
  }
  if (bytes == 0) return;
  if (cudaMemsetAsync(as_pointer(address), 1, static_cast<std::size_t>(bytes),
                      as_stream(stream_)) != cudaSuccess ||
      cudaStreamSynchronize(as_stream(stream_)) != cudaSuccess)
    cudaGetLastError();
}

}  // namespace alloclab
