#include "alloclab/strategies/best_fit.hpp"

#include <limits>

namespace alloclab {

std::optional<Ratio> max_ratio_param(const StrategyParams& params) {
  const std::optional<Ratio> ratio = params.ratio("max_ratio");
  if (ratio && ratio->num < ratio->den) {
    throw SpecError(params.strategy() + ": bad value '" + *params.text("max_ratio") +
                    "' for 'max_ratio': expected a number >= 1 (a block is never smaller than "
                    "the request)");
  }
  return ratio;
}

BestFitOptions BestFitOptions::from_params(const StrategyParams& params) {
  BestFitOptions options;
  options.round = detail::round_param(params);
  options.max_ratio = max_ratio_param(params);
  return options;
}

BestFitStrategy::BestFitStrategy(Upstream& upstream, BestFitOptions options)
    : StrategyBase(upstream, options.round), max_ratio_(options.max_ratio) {}

std::unique_ptr<Strategy> BestFitStrategy::from_params(const StrategyParams& params,
                                                       Upstream& upstream) {
  return std::make_unique<BestFitStrategy>(upstream, BestFitOptions::from_params(params));
}

std::optional<Block> BestFitStrategy::allocate(std::uint64_t size, std::uint64_t) {
  ++stats_.requests;
  const std::optional<std::uint64_t> request = rounded(size);
  if (!request) return fail();
  const std::uint64_t largest =
      max_ratio_ ? max_ratio_->max_capacity(*request) : std::numeric_limits<std::uint64_t>::max();
  // Smallest capacity in [request, largest], newest block of it. The block keeps its capacity
  // (sticky): it is handed out whole and cached again under the same capacity when freed.
  if (std::optional<Block> block = cache_.take_newest_in(*request, largest)) {
    return hit(*block, *request);
  }
  return allocate_upstream(*request);
}

void BestFitStrategy::deallocate(const Block& block) {
  cache_.add(block);
  stats_.cached_bytes += block.capacity;
}

std::uint64_t BestFitStrategy::return_cache(bool count_as_evictions) {
  const std::uint64_t n = cache_.blocks();
  cache_.drain([&](const Block& block) { give_back(block, count_as_evictions); });
  return n;
}

}  // namespace alloclab
