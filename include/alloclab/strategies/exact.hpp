#pragma once
// `exact` (dfdx's TensorCache as merged; preset `dfdx`), per docs/strategy-contract.md:
// - free: the block goes into the cache under its capacity; each capacity holds a stack.
// - alloc(s): s is rounded up to a multiple of `round`; the most recently freed block of exactly
//   that capacity is a hit (slack is always 0); otherwise a miss asks the upstream for s bytes.
// - unbounded: nothing goes back upstream before release(), except when the upstream fails (then
//   the whole cache is given back, counted as evictions, and the request retried once).
// Parameters: round=N (a size, default 1).
#include <cstdint>
#include <memory>
#include <optional>

#include "alloclab/strategies/detail/capacity_index.hpp"
#include "alloclab/strategies/detail/strategy_base.hpp"
#include "alloclab/strategies/params.hpp"

namespace alloclab {

struct ExactOptions {
  std::uint64_t round = 1;
  static ExactOptions from_params(const StrategyParams& params);
};

class ExactStrategy final : public detail::StrategyBase {
 public:
  explicit ExactStrategy(Upstream& upstream, ExactOptions options = {});
  static std::unique_ptr<Strategy> from_params(const StrategyParams& params, Upstream& upstream);

  std::optional<Block> allocate(std::uint64_t size, std::uint64_t stream) override;
  void deallocate(const Block& block) override;

  std::uint64_t cached_blocks() const { return cache_.blocks(); }

 private:
  std::uint64_t return_cache(bool count_as_evictions) override;
  std::uint64_t largest_cached_block() const override { return cache_.largest(); }

  detail::ExactIndex cache_;
};

}  // namespace alloclab
