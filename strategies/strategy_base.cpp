#include "alloclab/strategies/detail/strategy_base.hpp"

#include <stdexcept>

namespace alloclab::detail {

std::uint64_t round_param(const StrategyParams& params) {
  const std::uint64_t round = params.size("round", 1);
  if (round == 0) {
    throw SpecError(params.strategy() +
                    ": bad value '0' for 'round': expected a size of at least 1 byte");
  }
  return round;
}

StrategyBase::StrategyBase(Upstream& upstream, std::uint64_t round)
    : upstream_(upstream), round_(round) {
  if (round_ == 0) throw std::invalid_argument("round must be at least 1");
}

std::optional<Block> StrategyBase::allocate_upstream(std::uint64_t bytes) {
  if (std::optional<Block> block = upstream_.allocate(bytes)) return block;
  // Out of memory upstream. Blocks sitting in the cache are memory the upstream could use: give
  // them all back and try once more. With nothing to give back the upstream is in the same state
  // as a moment ago, so there is no retry.
  if (return_cache(true) > 0) {
    if (std::optional<Block> block = upstream_.allocate(bytes)) return block;
  }
  return fail();
}

}  // namespace alloclab::detail
