#pragma once
// SimUpstream: the simulated allocator under a strategy in `sim` mode.
//
// Promises:
// - a block has exactly the capacity asked for (docs/strategy-contract.md: "in simulation the
//   upstream returns a block whose capacity is exactly the size it was asked for");
// - addresses are 256-byte aligned, start at a nonzero base and only increase: an address is never
//   handed out twice, so ranges of blocks never overlap (a zero-byte block still gets its own
//   address);
// - with `limit_bytes`, an allocation that would take the reserved bytes (sum of capacities
//   currently held by callers) past the limit fails and returns nullopt;
// - deallocating a block it did not hand out, twice, or with another capacity throws
//   std::logic_error: that is a bug in the strategy above, never a property of the trace.
#include <cstdint>
#include <limits>
#include <optional>

#include "alloclab/format/address_map.hpp"
#include "alloclab/strategies/strategy.hpp"

namespace alloclab {

struct SimUpstreamOptions {
  static constexpr std::uint64_t kNoLimit = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t limit_bytes = kNoLimit;     // most bytes held at once; allocations beyond fail
  std::uint64_t base_address = 0x10000000;  // first address; nonzero and 256-aligned
};

class SimUpstream final : public Upstream {
 public:
  static constexpr std::uint64_t kAlignment = 256;

  SimUpstream() : SimUpstream(SimUpstreamOptions{}) {}
  explicit SimUpstream(SimUpstreamOptions options);

  std::optional<Block> allocate(std::uint64_t bytes) override;
  void deallocate(const Block& block) override;

  std::uint64_t reserved_bytes() const { return reserved_bytes_; }
  std::uint64_t live_blocks() const { return live_.size(); }
  std::uint64_t limit_bytes() const { return limit_bytes_; }
  bool owns(const Block& block) const;

 private:
  std::uint64_t limit_bytes_;
  std::uint64_t next_address_;
  std::uint64_t reserved_bytes_ = 0;
  AddressMap<std::uint64_t> live_;  // address -> capacity of every block handed out, not returned
};

}  // namespace alloclab
