#pragma once
// VirtualUpstream: gives a strategy inside a program the addresses a simulated replay would
// give it. Each block comes from the real upstream, and is named to the strategy by the
// address a SimUpstream hands out for the same sequence of calls; to_real() turns an address
// inside such a block (the strategy may hand out pieces of it) into the real one. So a strategy
// whose choices depend on addresses (the pytorch model's best fit by address) chooses as it
// does in a simulated replay of the same requests.
#include <cstdint>
#include <map>
#include <optional>

#include "alloclab/format/address_map.hpp"
#include "alloclab/strategies/strategy.hpp"
#include "alloclab/strategies/upstream/sim.hpp"

namespace alloclab::live {

class VirtualUpstream final : public Upstream {
 public:
  // `real` must outlive this upstream.
  explicit VirtualUpstream(Upstream& real) : real_(real) {}

  std::optional<Block> allocate(std::uint64_t bytes) override;
  void deallocate(const Block& block) override;

  // The real address of `address`, an address inside a block this upstream handed out and
  // has not taken back.
  std::uint64_t to_real(std::uint64_t address) const {
    // A block handed out whole (most strategies) is found by its start.
    if (const std::uint64_t* real = real_of_start_.find(address)) return *real;
    const auto segment = std::prev(by_start_.upper_bound(address));
    return segment->second + (address - segment->first);
  }

 private:
  Upstream& real_;
  SimUpstream names_;
  AddressMap<std::uint64_t> real_of_start_;          // virtual start -> real start
  std::map<std::uint64_t, std::uint64_t> by_start_;  // the same, in address order
};

}  // namespace alloclab::live
