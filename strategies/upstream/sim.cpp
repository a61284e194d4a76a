#include "alloclab/strategies/upstream/sim.hpp"

#include <limits>
#include <stdexcept>
#include <string>

namespace alloclab {
namespace {

std::string describe(const Block& block) {
  return "block at " + std::to_string(block.address) + " of " + std::to_string(block.capacity) +
         " bytes";
}

}  // namespace

SimUpstream::SimUpstream(SimUpstreamOptions options)
    : limit_bytes_(options.limit_bytes), next_address_(options.base_address) {
  if (next_address_ == 0 || next_address_ % kAlignment != 0) {
    throw std::invalid_argument("SimUpstream: base address must be nonzero and 256-aligned");
  }
}

std::optional<Block> SimUpstream::allocate(std::uint64_t bytes) {
  if (bytes > limit_bytes_ - reserved_bytes_) return std::nullopt;  // reserved <= limit always
  // The address range this block uses: its capacity rounded up to the alignment, at least one
  // alignment unit so that even a zero-byte block has an address of its own.
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  if (bytes > kMax - (kAlignment - 1)) return std::nullopt;
  const std::uint64_t span =
      bytes == 0 ? kAlignment : (bytes + (kAlignment - 1)) / kAlignment * kAlignment;
  if (span > kMax - next_address_) return std::nullopt;  // the virtual address space is used up
  const Block block{next_address_, bytes};
  next_address_ += span;
  live_.insert_or_assign(block.address, block.capacity);
  reserved_bytes_ += bytes;
  return block;
}

void SimUpstream::deallocate(const Block& block) {
  // Taken out in one probe, and put back if the capacity does not match: a free that throws
  // leaves the upstream as it was.
  std::uint64_t capacity = 0;
  if (block.address == 0 || !live_.take_into(block.address, capacity)) {
    throw std::logic_error("SimUpstream: deallocate of a " + describe(block) +
                           " it does not hold (never handed out, or returned twice)");
  }
  if (capacity != block.capacity) {
    live_.insert_or_assign(block.address, capacity);
    throw std::logic_error("SimUpstream: deallocate of a " + describe(block) +
                           " handed out with capacity " + std::to_string(capacity));
  }
  reserved_bytes_ -= block.capacity;
}

bool SimUpstream::owns(const Block& block) const {
  const std::uint64_t* capacity = block.address == 0 ? nullptr : live_.find(block.address);
  return capacity != nullptr && *capacity == block.capacity;
}

}  // namespace alloclab
