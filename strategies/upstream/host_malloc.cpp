#include "alloclab/strategies/upstream/host_malloc.hpp"

#include <algorithm>
#include <cstdlib>
#include <limits>

namespace alloclab {

std::optional<Block> HostMallocUpstream::allocate(std::uint64_t bytes) {
  if (bytes > std::numeric_limits<std::size_t>::max()) return std::nullopt;
  void* p = std::malloc(static_cast<std::size_t>(std::max<std::uint64_t>(bytes, 1)));
  if (p == nullptr) return std::nullopt;
  return Block{reinterpret_cast<std::uintptr_t>(p), bytes};
}

void HostMallocUpstream::deallocate(const Block& block) {
  std::free(reinterpret_cast<void*>(static_cast<std::uintptr_t>(block.address)));
}

}  // namespace alloclab
