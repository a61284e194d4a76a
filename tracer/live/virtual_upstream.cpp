#include "alloclab/live/virtual_upstream.hpp"

namespace alloclab::live {

std::optional<Block> VirtualUpstream::allocate(std::uint64_t bytes) {
  const std::optional<Block> real = real_.allocate(bytes);
  if (!real) return std::nullopt;
  // Named only once the real allocator said yes: a failed call takes no address, as in a
  // simulated replay whose upstream fails.
  const std::optional<Block> name = names_.allocate(bytes);
  if (!name) {
    real_.deallocate(*real);
    return std::nullopt;
  }
  real_of_start_.insert_or_assign(name->address, real->address);
  by_start_.emplace(name->address, real->address);
  return *name;
}

void VirtualUpstream::deallocate(const Block& block) {
  const std::uint64_t real = *real_of_start_.take(block.address);
  by_start_.erase(block.address);
  names_.deallocate(block);
  real_.deallocate(Block{real, block.capacity});
}

}  // namespace alloclab::live
