#pragma once
// Shared helpers for the strategy tests: a strategy over a counting adaptor over a simulated
// upstream, and short ways to allocate and free through it.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "alloclab/strategies/registry.hpp"
#include "alloclab/strategies/strategy.hpp"
#include "alloclab/strategies/upstream/counting.hpp"
#include "alloclab/strategies/upstream/sim.hpp"

// EXPECT that `text` (a string) contains `part`.
#define EXPECT_CONTAINS(text, part)                                                 \
  do {                                                                              \
    const std::string alloclab_text_ = (text);                                      \
    EXPECT_NE(alloclab_text_.find(part), std::string::npos)                         \
        << "expected to find \"" << (part) << "\" in \"" << alloclab_text_ << "\""; \
  } while (false)

namespace alloclab::testing {

// strategy -> CountingUpstream -> SimUpstream, the stack a simulation replay uses.
struct Stack {
  explicit Stack(SimUpstreamOptions sim_options = {}) : sim(sim_options), counting(sim) {}
  Stack(std::string_view spec, SimUpstreamOptions sim_options = {}) : Stack(sim_options) {
    strategy = make_strategy(spec, counting);
  }
  template <class S, class... Args>
  S& emplace(Args&&... args) {
    auto owned = std::make_unique<S>(counting, std::forward<Args>(args)...);
    S& ref = *owned;
    strategy = std::move(owned);
    return ref;
  }

  // Allocates `size` and expects success.
  Block alloc(std::uint64_t size) {
    std::optional<Block> block = strategy->allocate(size, 0);
    EXPECT_TRUE(block.has_value()) << "allocate(" << size << ") failed";
    return block.value_or(Block{});
  }
  void free(const Block& block) { strategy->deallocate(block); }
  // Allocates a block and frees it at once (it lands in the cache).
  void drop_in(std::uint64_t size) { free(alloc(size)); }

  const StrategyStats& stats() const { return strategy->stats(); }
  const UpstreamCounters& upstream() const { return counting.counters(); }
  std::uint64_t misses() const { return stats().requests - stats().hits; }

  SimUpstream sim;
  CountingUpstream counting;
  std::unique_ptr<Strategy> strategy;
};

}  // namespace alloclab::testing
