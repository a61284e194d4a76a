#pragma once
// VirtualUpstream: gives a strategy inside a program the addresses a simulated replay would
// give it. Each block comes from the real upstream, and is named to the strategy by the
// address a SimUpstream hands out for the same sequence of calls; to_real() turns an address
// inside such a block (the strategy may hand out pieces of it) into the real one. So a strategy
// whose choices depend on addresses (the pytorch model's best fit by address) chooses as it
// does in a simulated replay of the same requests.
//
// Each block it holds is a Segment, found by its name or by its real start in one hash probe.
// A segment also carries whether the strategy has handed it out whole, and the size the program
// asked for then: most strategies hand out the upstream's blocks as they are, and for those the
// caller's table of handed-out blocks needs no insertion or erasure of its own.
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <vector>

#include "alloclab/format/address_map.hpp"
#include "alloclab/strategies/strategy.hpp"
#include "alloclab/strategies/upstream/sim.hpp"

namespace alloclab::live {

class VirtualUpstream final : public Upstream {
 public:
  // The fields a hit writes (requested, out_whole) come after those the next free reads
  // together as the strategy's Block (name, capacity): a wide load of a field just written
  // cannot take its value from the pending store, and waits for it.
  struct Segment {
    std::uint64_t name = 0;  // its address to the strategy
    std::uint64_t capacity = 0;
    std::uint64_t real = 0;       // its address in memory
    std::uint64_t requested = 0;  // while out_whole: the size the program asked for
    bool out_whole = false;       // handed out by the strategy as one block, all of it
  };

  // `real` must outlive this upstream.
  explicit VirtualUpstream(Upstream& real) : real_(real) {}

  std::optional<Block> allocate(std::uint64_t bytes) override;
  void deallocate(const Block& block) override;

  // The segment whose name is `name`, or nullptr. A segment stays where it is until
  // deallocate() gives its block back.
  Segment* segment_named(std::uint64_t name) {
    Segment* const* segment = by_name_.find(name);
    return segment == nullptr ? nullptr : *segment;
  }
  // The segment that starts at `real` in memory, or nullptr.
  Segment* segment_at(std::uint64_t real) {
    Segment* const* segment = by_real_.find(real);
    return segment == nullptr ? nullptr : *segment;
  }
  const Segment* segment_at(std::uint64_t real) const {
    return const_cast<VirtualUpstream*>(this)->segment_at(real);
  }

  // The real address of `address`, an address inside a block this upstream handed out and
  // has not taken back.
  std::uint64_t to_real(std::uint64_t address) const {
    // A block handed out whole (most strategies) is found by its start.
    if (Segment* const* segment = by_name_.find(address)) return (*segment)->real;
    const auto segment = std::prev(by_start_.upper_bound(address));
    return segment->second + (address - segment->first);
  }

 private:
  Upstream& real_;
  SimUpstream names_;
  // The maps hold pointers, so that a lookup reads the segment with no further indirection;
  // a deque keeps each segment in place as it grows.
  std::deque<Segment> segments_;
  std::vector<Segment*> unused_;                     // in segments_, for the next blocks
  AddressMap<Segment*> by_name_;                     // name -> its segment
  AddressMap<Segment*> by_real_;                     // real start -> its segment
  std::map<std::uint64_t, std::uint64_t> by_start_;  // name -> real start, in name order
};

}  // namespace alloclab::live
