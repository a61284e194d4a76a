#pragma once
// HostMallocUpstream: the process's own malloc/free under a strategy (real replay).
//
// Promises:
// - a block has exactly the capacity asked for; its address is what malloc returned;
// - a zero-byte request still gets an address of its own (malloc(1)), so 0 never means success;
// - malloc returning null is a failed allocation (nullopt), never a crash.
#include "alloclab/strategies/strategy.hpp"

namespace alloclab {

class HostMallocUpstream final : public Upstream {
 public:
  std::optional<Block> allocate(std::uint64_t bytes) override;
  void deallocate(const Block& block) override;
};

}  // namespace alloclab
