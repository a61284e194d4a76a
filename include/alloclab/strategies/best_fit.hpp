#pragma once
// `best-fit` (reuse a larger buffer), per docs/strategy-contract.md:
// - alloc(s): s is rounded up to a multiple of `round`; the hit is a block of the smallest cached
//   capacity c with s <= c (and c <= max_ratio * s when max_ratio is given, compared exactly),
//   the most recently freed among blocks of that capacity; otherwise a miss asks upstream for s.
// - capacity is sticky: the block handed out keeps its full capacity c (slack c - s is counted)
//   and goes back into the cache under c when freed.
// - unbounded, like `exact` (the whole cache goes back upstream only if the upstream fails).
// Parameters: round=N (a size, default 1), max_ratio=R (a decimal >= 1, default: no bound).
#include <cstdint>
#include <memory>
#include <optional>

#include "alloclab/strategies/detail/capacity_index.hpp"
#include "alloclab/strategies/detail/strategy_base.hpp"
#include "alloclab/strategies/params.hpp"

namespace alloclab {

struct BestFitOptions {
  std::uint64_t round = 1;
  std::optional<Ratio> max_ratio;  // nullopt: any larger block may be used
  static BestFitOptions from_params(const StrategyParams& params);
};

class BestFitStrategy final : public detail::StrategyBase {
 public:
  explicit BestFitStrategy(Upstream& upstream, BestFitOptions options = {});
  static std::unique_ptr<Strategy> from_params(const StrategyParams& params, Upstream& upstream);

  std::optional<Block> allocate(std::uint64_t size, std::uint64_t stream) override;
  void deallocate(const Block& block) override;

  std::uint64_t cached_blocks() const { return cache_.blocks(); }

 private:
  std::uint64_t return_cache(bool count_as_evictions) override;
  std::uint64_t largest_cached_block() const override { return cache_.largest(); }

  std::optional<Ratio> max_ratio_;
  detail::OrderedIndex cache_;
};

// Reads max_ratio (nullopt when absent); SpecError if it is below 1, since then no block could
// ever match (c >= s and c <= R*s < s).
std::optional<Ratio> max_ratio_param(const StrategyParams& params);

}  // namespace alloclab
