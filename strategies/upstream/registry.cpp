#include "alloclab/strategies/upstream/registry.hpp"

#include "alloclab/strategies/params.hpp"
#if ALLOCLAB_HAVE_CUDA
#include "alloclab/strategies/upstream/cuda.hpp"
#endif
#include "alloclab/strategies/upstream/host_library.hpp"
#include "alloclab/strategies/upstream/host_malloc.hpp"
#include "alloclab/strategies/upstream/host_mmap.hpp"
#include "alloclab/strategies/upstream/limit.hpp"
#include "alloclab/strategies/upstream/sim.hpp"

namespace alloclab {
namespace {

// A LimitUpstream that owns what it wraps.
class OwningLimitUpstream final : public Upstream {
 public:
  OwningLimitUpstream(std::unique_ptr<Upstream> inner, std::uint64_t limit)
      : inner_(std::move(inner)), limit_(*inner_, limit) {}
  std::optional<Block> allocate(std::uint64_t bytes) override { return limit_.allocate(bytes); }
  void deallocate(const Block& block) override { limit_.deallocate(block); }
  void touch(std::uint64_t address, std::uint64_t bytes) override { limit_.touch(address, bytes); }

 private:
  std::unique_ptr<Upstream> inner_;
  LimitUpstream limit_;
};

// `cuda`, `cuda-async[:release_threshold=SIZE]`, `cuda-host`; nullptr for any other name.
std::unique_ptr<Upstream> make_cuda(std::string_view name) {
  const std::string_view base = name.substr(0, name.find(':'));
  if (base != "cuda" && base != "cuda-async" && base != "cuda-host") return nullptr;
#if ALLOCLAB_HAVE_CUDA
  CudaUpstream::Options options;
  if (base.size() < name.size()) {
    const std::string_view param = name.substr(base.size() + 1);
    constexpr std::string_view kKey = "release_threshold=";
    if (base != "cuda-async" || param.substr(0, kKey.size()) != kKey)
      throw UpstreamError("upstream '" + std::string(name) +
                          "': the only parameter is cuda-async:release_threshold=SIZE");
    try {
      options.release_threshold = parse_size(param.substr(kKey.size()));
    } catch (const std::exception& e) {
      throw UpstreamError("upstream '" + std::string(name) + "': " + e.what());
    }
  }
  if (base == "cuda") return std::make_unique<CudaUpstream>(CudaUpstream::Kind::device, options);
  if (base == "cuda-async")
    return std::make_unique<CudaUpstream>(CudaUpstream::Kind::async, options);
  return std::make_unique<CudaUpstream>(CudaUpstream::Kind::host, options);
#else
  throw UpstreamError("cuda: alloclab was built without CUDA (ALLOCLAB_CUDA=OFF)");
#endif
}

std::unique_ptr<Upstream> make_real(std::string_view name) {
  if (std::unique_ptr<Upstream> cuda = make_cuda(name)) return cuda;
  if (name == "host-malloc") return std::make_unique<HostMallocUpstream>();
  if (name == "host-mmap") return std::make_unique<HostMmapUpstream>();
  if (name == "host-jemalloc")
    return std::make_unique<HostLibraryUpstream>(HostLibraryUpstream::Library::jemalloc);
  if (name == "host-mimalloc")
    return std::make_unique<HostLibraryUpstream>(HostLibraryUpstream::Library::mimalloc);
  std::string known;
  for (const std::string& n : upstream_names()) known += (known.empty() ? "" : ", ") + n;
  throw UpstreamError("unknown upstream '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace

const std::vector<std::string>& upstream_names() {
  static const std::vector<std::string> names = {
    "sim",
    "host-malloc",
    "host-mmap",
    "host-jemalloc",
    "host-mimalloc",
#if ALLOCLAB_HAVE_CUDA
    "cuda",
    "cuda-async",
    "cuda-host"
#endif
  };
  return names;
}

bool is_real_upstream(std::string_view name) {
  return name != "sim";
}

std::unique_ptr<Upstream> make_upstream(std::string_view name, const UpstreamOptions& options) {
  if (name == "sim") {
    SimUpstreamOptions sim;
    if (options.limit_bytes) sim.limit_bytes = *options.limit_bytes;
    return std::make_unique<SimUpstream>(sim);
  }
  std::unique_ptr<Upstream> real = make_real(name);
  if (!options.limit_bytes) return real;
  return std::make_unique<OwningLimitUpstream>(std::move(real), *options.limit_bytes);
}

}  // namespace alloclab
