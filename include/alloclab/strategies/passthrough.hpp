#pragma once
// `passthrough`: no cache (docs/strategy-contract.md). Every alloc is a miss that asks the upstream
// for exactly the requested size; every free returns the block upstream at once. It never holds a
// block, so cached_bytes stays 0 and release() has nothing to do. Takes no parameters.
#include <cstdint>
#include <memory>
#include <optional>

#include "alloclab/strategies/detail/strategy_base.hpp"
#include "alloclab/strategies/params.hpp"

namespace alloclab {

class PassthroughStrategy final : public detail::StrategyBase {
 public:
  explicit PassthroughStrategy(Upstream& upstream) : StrategyBase(upstream, 1) {}
  static std::unique_ptr<Strategy> from_params(const StrategyParams& params, Upstream& upstream);

  std::optional<Block> allocate(std::uint64_t size, std::uint64_t stream) override;
  void deallocate(const Block& block) override;

 private:
  std::uint64_t return_cache(bool) override { return 0; }
  std::uint64_t largest_cached_block() const override { return 0; }
};

}  // namespace alloclab
