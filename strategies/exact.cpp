#include "alloclab/strategies/exact.hpp"

namespace alloclab {

ExactOptions ExactOptions::from_params(const StrategyParams& params) {
  ExactOptions options;
  options.round = detail::round_param(params);
  return options;
}

ExactStrategy::ExactStrategy(Upstream& upstream, ExactOptions options)
    : StrategyBase(upstream, options.round) {}

std::unique_ptr<Strategy> ExactStrategy::from_params(const StrategyParams& params,
                                                     Upstream& upstream) {
  return std::make_unique<ExactStrategy>(upstream, ExactOptions::from_params(params));
}

std::optional<Block> ExactStrategy::allocate(std::uint64_t size, std::uint64_t) {
  ++stats_.requests;
  const std::optional<std::uint64_t> request = rounded(size);
  if (!request) return fail();
  // LIFO among blocks of exactly this capacity, so the slack of a hit is always 0.
  if (std::optional<Block> block = cache_.take_newest(*request)) return hit(*block, *request);
  return allocate_upstream(*request);
}

void ExactStrategy::deallocate(const Block& block) {
  cache_.add(block);
  stats_.cached_bytes += block.capacity;
}

std::uint64_t ExactStrategy::return_cache(bool count_as_evictions) {
  const std::uint64_t n = cache_.blocks();
  cache_.drain([&](const Block& block) { give_back(block, count_as_evictions); });
  return n;
}

}  // namespace alloclab
