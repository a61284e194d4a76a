#pragma once
// CudaUpstream: the CUDA runtime's allocators under a strategy (real replay), built only when
// ALLOCLAB_CUDA is ON (ALLOCLAB_HAVE_CUDA=1); plain C++ over cuda_runtime_api.h and CUDA::cudart.
//   cuda        cudaMalloc / cudaFree on the current device
//   cuda-async  cudaMallocAsync / cudaFreeAsync on a stream this upstream creates, from the
//               device's default memory pool, whose release threshold
//               (cudaMemPoolAttrReleaseThreshold) is set from the options (default 0: the pool
//               gives unused memory back to the driver at every synchronisation)
//   cuda-host   cudaMallocHost / cudaFreeHost (pinned host memory)
//
// Synchronisation, so that the time of each call is the time of the allocation:
// - cuda-async: allocate is cudaMallocAsync followed by cudaStreamSynchronize (the block is ready
//   when it is handed out; the synchronisation is also where the pool trims itself to the release
//   threshold); deallocate is cudaFreeAsync alone (stream-ordered: the next allocation on the
//   stream may reuse the memory at once). The destructor synchronises the stream and destroys it.
// - cuda: cudaMalloc and cudaFree synchronise by themselves.
// - touch (--touch): cuda and cuda-async write the range with cudaMemsetAsync and wait for it
//   (cudaStreamSynchronize); cuda-host memory is host memory, written one byte per 4 KiB page.
//
// Promises: as HostMallocUpstream (capacity is what was asked; a zero-byte request gets an address
// of its own, 1 byte; cudaErrorMemoryAllocation is a failed allocation, nullopt, and the runtime's
// sticky error is cleared with cudaGetLastError). Construction throws UpstreamError when no
// device is usable: "cuda: no CUDA device available (cudaGetDeviceCount: <error>)".
#include <cstdint>
#include <optional>
#include <string>

#include "alloclab/strategies/strategy.hpp"

namespace alloclab {

struct CudaUpstreamOptions {
  std::uint64_t release_threshold = 0;  // cuda-async only: cudaMemPoolAttrReleaseThreshold
};

class CudaUpstream final : public Upstream {
 public:
  enum class Kind { device, async, host };
  using Options = CudaUpstreamOptions;
  explicit CudaUpstream(Kind kind, const Options& options = {});
  ~CudaUpstream() override;
  CudaUpstream(const CudaUpstream&) = delete;
  CudaUpstream& operator=(const CudaUpstream&) = delete;

  std::optional<Block> allocate(std::uint64_t bytes) override;
  void deallocate(const Block& block) override;
  void touch(std::uint64_t address, std::uint64_t bytes) override;

  Kind kind() const { return kind_; }
  int device() const { return device_; }

  // nullopt when a CUDA device is usable here, else the message construction would throw (for
  // tests that skip without a GPU).
  static std::optional<std::string> unavailable();

 private:
  Kind kind_;
  int device_ = 0;
  void* stream_ = nullptr;  // cudaStream_t (cuda-async, and touch on cuda)
};

}  // namespace alloclab
