#pragma once
// StrategyBase: what every built-in strategy shares — the upstream, the counters, the common
// `round` parameter and the miss path (ask the upstream; if it fails, give the whole cache back
// and retry once, as PyTorch's caching allocator does).
#include <cstdint>
#include <optional>

#include "alloclab/strategies/params.hpp"
#include "alloclab/strategies/strategy.hpp"

namespace alloclab::detail {

// The `round=N` parameter (a size, default 1, at least 1).
std::uint64_t round_param(const StrategyParams& params);

class StrategyBase : public Strategy {
 public:
  const StrategyStats& stats() const final { return stats_; }
  // Every cached block goes upstream, not counted as an eviction (Strategy::release).
  void release() final { return_cache(false); }
  // The largest cached block, and the request after rounding as what the upstream was asked.
  FailureState failure_state(std::uint64_t size) const final {
    return {largest_cached_block(), rounded(size), std::nullopt};
  }
  std::uint64_t round() const { return round_; }

 protected:
  // `round` must be at least 1 (std::invalid_argument otherwise).
  StrategyBase(Upstream& upstream, std::uint64_t round);

  // `size` rounded up to a multiple of `round`, or nullopt if that does not fit in 64 bits.
  std::optional<std::uint64_t> rounded(std::uint64_t size) const {
    if (round_ == 1) return size;
    const std::uint64_t remainder = size % round_;
    if (remainder == 0) return size;
    const std::uint64_t up = round_ - remainder;
    if (size > UINT64_MAX - up) return std::nullopt;
    return size + up;
  }

  // A request served from the cache. `request` is the size after rounding.
  Block hit(const Block& block, std::uint64_t request) {
    ++stats_.hits;
    stats_.slack_bytes += block.capacity - request;
    stats_.cached_bytes -= block.capacity;
    return block;
  }

  // A request that cannot be served at all (counted as failed).
  std::optional<Block> fail() {
    ++stats_.failed;
    return std::nullopt;
  }

  // A miss: asks the upstream for `bytes`. If the upstream fails, every cached block is given back
  // (each an eviction) and, if that gave anything back, the upstream is asked once more. If it
  // still fails, the request counts as failed and nullopt is returned.
  std::optional<Block> allocate_upstream(std::uint64_t bytes);

  // Returns a cached block upstream. Precondition: the block was counted in cached_bytes.
  void give_back(const Block& block, bool count_as_eviction) {
    stats_.cached_bytes -= block.capacity;
    if (count_as_eviction) ++stats_.evictions;
    upstream_.deallocate(block);
  }

  // Returns every cached block upstream (via give_back) and empties the cache; returns how many.
  virtual std::uint64_t return_cache(bool count_as_evictions) = 0;
  // The capacity of the largest cached block, 0 when the cache is empty.
  virtual std::uint64_t largest_cached_block() const = 0;

  Upstream& upstream_;
  StrategyStats stats_;

 private:
  std::uint64_t round_;
};

}  // namespace alloclab::detail
