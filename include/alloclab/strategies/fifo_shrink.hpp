#pragma once
// `fifo-shrink` (dfdx PR #709 "Improve allocation caching"; preset `dfdx-limit`), per
// docs/strategy-contract.md: a cache bounded by bytes (`max`) and/or blocks (`max_items`) that
// evicts in the order blocks were freed into it.
// - free(b): size += cap(b); cap(b) goes to the back of the drop queue; b is pushed on its
//   capacity's stack; then shrink.
// - alloc(s): s rounded up to a multiple of `round`; match=exact takes the newest block of
//   capacity s, match=best-fit the newest block of the smallest capacity c >= s (and
//   c <= max_ratio * s). On a hit from capacity c: size -= c and ignore[c] += 1 — the queue entry
//   is left where it is, and the oldest queue entry of c becomes a tombstone.
// - shrink: if size < max and items < max_items, stop. Otherwise, while size > max or
//   items > max_items: pop the front capacity k of the queue; if ignore[k] > 0, decrement it
//   (a tombstone, nothing freed); else the newest block of k goes upstream (one eviction).
// So a block larger than `max` is evicted during the very free that drops it in (after every
// block dropped in before it). With no limit it behaves exactly as `exact` / `best-fit`.
// Parameters: round, max (size, default unlimited), max_items (count, default unlimited),
// match=exact|best-fit (default exact), max_ratio (only with match=best-fit).
#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <optional>

#include "alloclab/format/address_map.hpp"
#include "alloclab/strategies/detail/capacity_index.hpp"
#include "alloclab/strategies/detail/strategy_base.hpp"
#include "alloclab/strategies/params.hpp"

namespace alloclab {

struct FifoShrinkOptions {
  static constexpr std::uint64_t kUnlimited = std::numeric_limits<std::uint64_t>::max();
  enum class Match { exact, best_fit };

  std::uint64_t round = 1;
  std::uint64_t max_bytes = kUnlimited;
  std::uint64_t max_items = kUnlimited;
  Match match = Match::exact;
  std::optional<Ratio> max_ratio;  // match=best-fit only

  static FifoShrinkOptions from_params(const StrategyParams& params);
};

class FifoShrinkStrategy final : public detail::StrategyBase {
 public:
  explicit FifoShrinkStrategy(Upstream& upstream, FifoShrinkOptions options = {});
  static std::unique_ptr<Strategy> from_params(const StrategyParams& params, Upstream& upstream);

  std::optional<Block> allocate(std::uint64_t size, std::uint64_t stream) override;
  void deallocate(const Block& block) override;

  std::uint64_t cached_blocks() const { return items(); }
  // Drop-queue entries, tombstones included (for tests and debugging).
  std::uint64_t queue_length() const { return queue_.size(); }
  // Checks every invariant below, in O(cached blocks + queue); throws std::logic_error naming
  // the first one broken. For tests and debugging.
  void check_invariants() const;

 private:
  std::uint64_t return_cache(bool count_as_evictions) override;
  std::uint64_t largest_cached_block() const override {
    return match_ == FifoShrinkOptions::Match::exact ? exact_.largest() : ordered_.largest();
  }
  std::optional<Block> take(std::uint64_t request);
  std::optional<Block> take_newest(std::uint64_t capacity);
  bool consume_tombstone(std::uint64_t capacity);
  std::uint64_t items() const;
  bool limited() const {
    return max_bytes_ != FifoShrinkOptions::kUnlimited ||
           max_items_ != FifoShrinkOptions::kUnlimited;
  }
  void shrink();
  void compact_queue();

  std::uint64_t max_bytes_;
  std::uint64_t max_items_;
  FifoShrinkOptions::Match match_;
  std::optional<Ratio> max_ratio_;
  // Exactly one of the two holds the cached blocks, chosen by `match`: a hash map for exact
  // matching, an ordered map when the smallest fitting capacity is wanted.
  detail::ExactIndex exact_;
  detail::OrderedIndex ordered_;

  // The drop queue and tombstones, kept only when there is a limit (without one, shrink never
  // frees anything and they would only grow). ignore[k] lives in exact_ (next to the blocks of
  // k, so that a hit costs one probe) with match=exact, in tombstones_ with match=best-fit
  // (ordered_ drops a capacity as soon as it has no block). Invariant, for every capacity k:
  //   (entries k in queue_) == ignore[k] + (cached blocks of capacity k)
  // It holds because free adds one entry and one block, a hit turns a block into a tombstone,
  // and shrink removes one entry together with one tombstone or one block. Hence, while the
  // cache is over a limit, the queue is not empty and a non-tombstone entry k always finds a
  // block of capacity k to evict. Tombstones of k are consumed by the first entries of k to
  // reach the front; compact_queue() removes exactly those entries early to bound the queue.
  std::deque<std::uint64_t> queue_;
  AddressMap<std::uint64_t> tombstones_;  // ignore[k] > 0, with match=best-fit only
};

}  // namespace alloclab
