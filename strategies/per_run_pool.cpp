#include "alloclab/strategies/per_run_pool.hpp"

#include <limits>

namespace alloclab {

PerRunPoolOptions PerRunPoolOptions::from_params(const StrategyParams& params) {
  return from_params(params, PerRunPoolOptions{});
}

PerRunPoolOptions PerRunPoolOptions::from_params(const StrategyParams& params,
                                                 const PerRunPoolOptions& defaults) {
  PerRunPoolOptions options = defaults;
  if (params.has("round")) options.round = detail::round_param(params);
  options.min_size = params.size("min_size", defaults.min_size);
  return options;
}

PerRunPoolStrategy::PerRunPoolStrategy(Upstream& upstream, PerRunPoolOptions options)
    : StrategyBase(upstream, options.round), min_size_(options.min_size) {}

std::unique_ptr<Strategy> PerRunPoolStrategy::from_params(const StrategyParams& params,
                                                          Upstream& upstream) {
  return std::make_unique<PerRunPoolStrategy>(upstream, PerRunPoolOptions::from_params(params));
}

std::optional<Block> PerRunPoolStrategy::allocate(std::uint64_t size, std::uint64_t) {
  ++stats_.requests;
  const std::optional<std::uint64_t> request = rounded(size);
  if (!request) return fail();
  // Outside a run the pool is empty (see the invariant), and a request below min_size never
  // looks at the pool.
  if (in_run_ && *request >= min_size_) {
    // Smallest capacity >= request; among equal capacities the earliest added (FIFO).
    if (std::optional<Block> block =
            pool_.take_oldest_in(*request, std::numeric_limits<std::uint64_t>::max())) {
      return hit(*block, *request);
    }
  }
  return allocate_upstream(*request);
}

void PerRunPoolStrategy::deallocate(const Block& block) {
  if (in_run_ && block.capacity >= min_size_) {
    pool_.add(block);
    stats_.cached_bytes += block.capacity;
  } else {
    upstream_.deallocate(block);  // never cached, so not an eviction
  }
}

void PerRunPoolStrategy::begin_run() {
  if (in_run_) end_run();  // runs do not nest: a run_begin inside a run ends that run first
  in_run_ = true;
}

void PerRunPoolStrategy::end_run() {
  if (!in_run_) return;  // a run_end outside a run is ignored
  return_cache(true);
  in_run_ = false;
}

std::uint64_t PerRunPoolStrategy::return_cache(bool count_as_evictions) {
  const std::uint64_t n = pool_.blocks();
  pool_.drain([&](const Block& block) { give_back(block, count_as_evictions); });
  return n;
}

}  // namespace alloclab
