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
  Segment* segment;
  if (unused_.empty()) {
    segment = &segments_.emplace_back();
  } else {
    segment = unused_.back();
    unused_.pop_back();
  }
  *segment = Segment{name->address, name->capacity, real->address, 0, false};
  by_name_.insert_or_assign(name->address, segment);
  by_real_.insert_or_assign(real->address, segment);
  by_start_.emplace(name->address, real->address);
  return *name;
}

void VirtualUpstream::deallocate(const Block& block) {
  Segment* segment = *by_name_.take(block.address);
  const std::uint64_t real = segment->real;
  by_real_.erase(real);
  *segment = Segment{};
  unused_.push_back(segment);
  by_start_.erase(block.address);
  names_.deallocate(block);
  real_.deallocate(Block{real, block.capacity});
}

}  // namespace alloclab::live
