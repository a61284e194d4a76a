#include "alloclab/strategies/fifo_shrink.hpp"

#include <limits>
#include <map>
#include <stdexcept>
#include <string>

#include "alloclab/strategies/best_fit.hpp"

namespace alloclab {
namespace {

// compact_queue() runs once the queue holds more than kCompactFactor + 1 entries per cached
// block, plus kCompactSlack: it then visits about one entry per tombstone it removes (at most
// 1 + 1/kCompactFactor), the same work shrink would have done popping them.
constexpr std::uint64_t kCompactFactor = 8;
constexpr std::uint64_t kCompactSlack = 1024;

}  // namespace

FifoShrinkOptions FifoShrinkOptions::from_params(const StrategyParams& params) {
  FifoShrinkOptions options;
  options.round = detail::round_param(params);
  options.max_bytes = params.size("max", kUnlimited);
  options.max_items = params.count("max_items", kUnlimited);
  options.match = params.choice("match", {"exact", "best-fit"}, "exact") == "best-fit"
                      ? Match::best_fit
                      : Match::exact;
  options.max_ratio = max_ratio_param(params);
  if (options.max_ratio && options.match != Match::best_fit) {
    throw SpecError(params.strategy() +
                    ": 'max_ratio' only applies with match=best-fit (exact matching never uses "
                    "a larger block)");
  }
  return options;
}

FifoShrinkStrategy::FifoShrinkStrategy(Upstream& upstream, FifoShrinkOptions options)
    : StrategyBase(upstream, options.round),
      max_bytes_(options.max_bytes),
      max_items_(options.max_items),
      match_(options.match),
      max_ratio_(options.max_ratio) {}

std::unique_ptr<Strategy> FifoShrinkStrategy::from_params(const StrategyParams& params,
                                                          Upstream& upstream) {
  return std::make_unique<FifoShrinkStrategy>(upstream, FifoShrinkOptions::from_params(params));
}

std::uint64_t FifoShrinkStrategy::items() const {
  return match_ == FifoShrinkOptions::Match::exact ? exact_.blocks() : ordered_.blocks();
}

std::optional<Block> FifoShrinkStrategy::take(std::uint64_t request) {
  if (match_ == FifoShrinkOptions::Match::exact) {
    // The block's queue entry stays; the oldest entry of its capacity becomes a tombstone.
    return limited() ? exact_.take_newest_leaving_tombstone(request) : exact_.take_newest(request);
  }
  const std::uint64_t largest =
      max_ratio_ ? max_ratio_->max_capacity(request) : std::numeric_limits<std::uint64_t>::max();
  std::optional<Block> block = ordered_.take_newest_in(request, largest);
  if (block && limited()) ++*tombstones_.try_emplace(block->capacity).first;
  return block;
}

bool FifoShrinkStrategy::consume_tombstone(std::uint64_t capacity) {
  if (match_ == FifoShrinkOptions::Match::exact) return exact_.consume_tombstone(capacity);
  std::uint64_t* tombstones = tombstones_.find(capacity);
  if (tombstones == nullptr) return false;
  if (--*tombstones == 0) tombstones_.erase(capacity);  // only counts > 0 are kept
  return true;
}

std::optional<Block> FifoShrinkStrategy::take_newest(std::uint64_t capacity) {
  return match_ == FifoShrinkOptions::Match::exact ? exact_.take_newest(capacity)
                                                   : ordered_.take_newest(capacity);
}

std::optional<Block> FifoShrinkStrategy::allocate(std::uint64_t size, std::uint64_t) {
  ++stats_.requests;
  const std::optional<std::uint64_t> request = rounded(size);
  if (!request) return fail();
  if (std::optional<Block> block = take(*request)) {
    if (limited() && queue_.size() > (kCompactFactor + 1) * items() + kCompactSlack) {
      compact_queue();
    }
    return hit(*block, *request);
  }
  return allocate_upstream(*request);
}

void FifoShrinkStrategy::deallocate(const Block& block) {
  if (match_ == FifoShrinkOptions::Match::exact) {
    exact_.add(block);
  } else {
    ordered_.add(block);
  }
  stats_.cached_bytes += block.capacity;
  if (limited()) {
    queue_.push_back(block.capacity);
    shrink();
  }
}

void FifoShrinkStrategy::shrink() {
  // "If size < max and items < max_items, stop" (docs/strategy-contract.md). The loop condition
  // alone would stop as well; the check mirrors the contract.
  if (stats_.cached_bytes < max_bytes_ && items() < max_items_) return;
  while (stats_.cached_bytes > max_bytes_ || items() > max_items_) {
    // Not empty: over a limit means at least one cached block, hence (queue invariant) at
    // least one non-tombstone entry.
    const std::uint64_t capacity = queue_.front();
    queue_.pop_front();
    if (consume_tombstone(capacity)) continue;  // a block handed out since: nothing to free
    // By the invariant a block of this capacity is cached. Evict the newest one (blocks of one
    // capacity are interchangeable; dfdx pops the stack too).
    const std::optional<Block> victim = take_newest(capacity);
    if (!victim) throw std::logic_error("fifo-shrink: drop queue out of step with the cache");
    give_back(*victim, true);
  }
}

void FifoShrinkStrategy::compact_queue() {
  // Removes now the entries that shrink would consume as tombstones later: for each capacity k,
  // the first ignore[k] entries of k from the front. Shrink's evictions are unchanged
  // (a tombstone entry frees nothing and changes no count), and the queue shrinks to one entry
  // per cached block.
  std::size_t kept = 0;
  for (std::size_t i = 0; i < queue_.size(); ++i) {
    const std::uint64_t capacity = queue_[i];
    if (!consume_tombstone(capacity)) queue_[kept++] = capacity;
  }
  queue_.resize(kept);
  // Every count is 0 now: each tombstone had its queue entry.
}

std::uint64_t FifoShrinkStrategy::return_cache(bool count_as_evictions) {
  const std::uint64_t n = items();
  auto give = [&](const Block& block) { give_back(block, count_as_evictions); };
  if (match_ == FifoShrinkOptions::Match::exact) {
    exact_.drain(give);
  } else {
    ordered_.drain(give);
  }
  // No block left, so (invariant) no queue entry and no tombstone either.
  queue_.clear();
  tombstones_.clear();
  return n;
}

void FifoShrinkStrategy::check_invariants() const {
  auto broken = [](const std::string& what) {
    throw std::logic_error("fifo-shrink invariant broken: " + what);
  };
  std::map<std::uint64_t, std::uint64_t> blocks;  // capacity -> cached blocks
  std::uint64_t bytes = 0;
  std::uint64_t count = 0;
  auto tally = [&](const Block& block) {
    ++blocks[block.capacity];
    bytes += block.capacity;
    ++count;
  };
  if (match_ == FifoShrinkOptions::Match::exact) {
    exact_.for_each(tally);
    if (!ordered_.empty()) broken("blocks in the ordered index with match=exact");
  } else {
    ordered_.for_each(tally);
    if (!exact_.empty()) broken("blocks in the hash index with match=best-fit");
  }
  if (count != items()) broken("block count " + std::to_string(count));
  if (bytes != stats_.cached_bytes) broken("cached_bytes " + std::to_string(stats_.cached_bytes));
  if (bytes > max_bytes_) broken("size above max");
  if (count > max_items_) broken("items above max_items");
  if (!limited()) {
    if (!queue_.empty() || !tombstones_.empty()) broken("queue kept without a limit");
    return;
  }
  std::map<std::uint64_t, std::uint64_t> entries;  // capacity -> queue entries
  for (const std::uint64_t capacity : queue_) ++entries[capacity];
  std::map<std::uint64_t, std::uint64_t> tombstones;  // capacity -> tombstones
  auto tally_tombstones = [&](std::uint64_t capacity, std::uint64_t n) {
    if (n > 0) tombstones[capacity] += n;
  };
  exact_.for_each_tombstone(tally_tombstones);
  tombstones_.for_each(tally_tombstones);
  if (match_ == FifoShrinkOptions::Match::exact && !tombstones_.empty()) {
    broken("tombstone map used with match=exact");
  }
  for (const auto& [capacity, n] : tombstones) {
    if (entries.find(capacity) == entries.end()) {
      broken("tombstones for capacity " + std::to_string(capacity) + " without queue entries");
    }
  }
  for (const auto& [capacity, n] : entries) {
    const auto t = tombstones.find(capacity);
    const std::uint64_t dead = t == tombstones.end() ? 0 : t->second;
    const auto b = blocks.find(capacity);
    const std::uint64_t cached = b == blocks.end() ? 0 : b->second;
    if (n != dead + cached) {
      broken("capacity " + std::to_string(capacity) + ": " + std::to_string(n) +
             " queue entries != " + std::to_string(dead) + " tombstones + " +
             std::to_string(cached) + " blocks");
    }
  }
  for (const auto& [capacity, cached] : blocks) {
    if (entries.find(capacity) == entries.end()) {
      broken("capacity " + std::to_string(capacity) + " cached but not in the queue");
    }
  }
}

}  // namespace alloclab
