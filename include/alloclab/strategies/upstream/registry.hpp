#pragma once
// Upstreams by name, for `alloclab replay --upstream NAME` and `alloclab calibrate`:
//   sim            the simulated upstream (deterministic; the default)
//   host-malloc    the process's malloc/free
//   host-mmap      mmap/munmap of whole pages
//   host-jemalloc  jemalloc from libjemalloc.so.2 (dlopen; Debian package libjemalloc2)
//   host-mimalloc  mimalloc from libmimalloc.so.2 (dlopen; Debian package libmimalloc2.0)
// and, when built with ALLOCLAB_CUDA=ON (see upstream/cuda.hpp; otherwise these names throw
// "cuda: alloclab was built without CUDA (ALLOCLAB_CUDA=OFF)"):
//   cuda           cudaMalloc/cudaFree
//   cuda-async     cudaMallocAsync/cudaFreeAsync on its own stream;
//                  cuda-async:release_threshold=SIZE sets the pool's release threshold (default 0)
//   cuda-host      cudaMallocHost/cudaFreeHost (pinned host memory)
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "alloclab/strategies/strategy.hpp"

namespace alloclab {

// An upstream that cannot be made: unknown name (the message lists the known ones) or a missing
// library (the message names the package).
class UpstreamError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct UpstreamOptions {
  // Allocations beyond this many bytes held fail (a LimitUpstream around a real upstream; the
  // simulated upstream's own limit for `sim`).
  std::optional<std::uint64_t> limit_bytes;
};

// Every known upstream name, in the order above.
const std::vector<std::string>& upstream_names();
// False only for "sim": the upstream hands out real memory (addresses can be written).
bool is_real_upstream(std::string_view name);
// Throws UpstreamError.
std::unique_ptr<Upstream> make_upstream(std::string_view name, const UpstreamOptions& options = {});

}  // namespace alloclab
