#pragma once
// Cached blocks grouped by capacity — the store behind every caching strategy. No operation
// scans the cached blocks: a lookup is one hash probe (ExactIndex) or one ordered-map search for
// the smallest capacity in a range (OrderedIndex).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "alloclab/format/address_map.hpp"
#include "alloclab/strategies/strategy.hpp"

namespace alloclab::detail {

// The cached blocks of one capacity, in the order they were added. Taking the newest is a stack
// pop (exact, best-fit, fifo-shrink); taking the oldest (per-run-pool) advances `head_`.
class BlockGroup {
 public:
  bool empty() const { return head_ == addresses_.size(); }
  std::size_t size() const { return addresses_.size() - head_; }
  void push(std::uint64_t address) { addresses_.push_back(address); }

  // Preconditions: !empty().
  std::uint64_t pop_newest() {
    const std::uint64_t address = addresses_.back();
    addresses_.pop_back();
    if (empty()) clear();
    return address;
  }
  std::uint64_t pop_oldest() {
    const std::uint64_t address = addresses_[head_++];
    if (empty()) {
      clear();
    } else if (head_ >= kCompactAt && head_ * 2 >= addresses_.size()) {
      // Drop the taken prefix once it is at least half the vector: amortized O(1) per pop, and
      // the vector stays within twice the number of cached blocks.
      addresses_.erase(addresses_.begin(), addresses_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
    return address;
  }
  void clear() {
    addresses_.clear();
    head_ = 0;
  }
  // f(address) for every cached block, oldest first.
  template <class F>
  void for_each(F&& f) const {
    for (std::size_t i = head_; i < addresses_.size(); ++i) f(addresses_[i]);
  }

 private:
  static constexpr std::size_t kCompactAt = 32;
  std::vector<std::uint64_t> addresses_;
  std::size_t head_ = 0;  // addresses_[0, head_) were taken; the rest are cached
};

// ExactIndex: blocks by capacity in a flat hash map, for exact-capacity lookups only. An entry
// whose group empties stays in the map, so that a capacity freed and reused over and over costs
// no insertion or erasure; unused entries are dropped all at once when they outnumber the used
// ones (plus a slack), which is amortized O(1) per insertion.
// Each entry also keeps a tombstone count for fifo-shrink's drop queue (see fifo_shrink.hpp):
// kept here, a hit and its tombstone cost one hash probe. Other strategies leave it at 0.
class ExactIndex {
 public:
  ExactIndex() = default;
  // A copy holds a map of its own: the recent entry (a pointer into the map) is not copied.
  ExactIndex(const ExactIndex& other)
      : map_(other.map_), blocks_(other.blocks_), used_entries_(other.used_entries_) {}
  ExactIndex& operator=(const ExactIndex& other) {
    map_ = other.map_;
    recent_entry_ = nullptr;
    blocks_ = other.blocks_;
    used_entries_ = other.used_entries_;
    return *this;
  }

  // Number of cached blocks.
  std::uint64_t blocks() const { return blocks_; }
  bool empty() const { return blocks_ == 0; }

  void add(const Block& block) {
    Entry* entry = recent(block.capacity);
    if (entry == nullptr) {
      bool inserted;
      std::tie(entry, inserted) = map_.try_emplace(block.capacity);
      if (inserted && map_.size() > 2 * used_entries_ + kUnusedSlack) {
        map_.erase_if([](std::uint64_t, const Entry& e) { return !e.used(); });
        entry = map_.try_emplace(block.capacity).first;
      }
      remember(block.capacity, entry);
    }
    if (!entry->used()) ++used_entries_;
    entry->blocks.push(block.address);
    ++blocks_;
  }

  // The newest block of exactly `capacity`.
  std::optional<Block> take_newest(std::uint64_t capacity) { return take(capacity, false); }
  // The same, and the capacity gains a tombstone.
  std::optional<Block> take_newest_leaving_tombstone(std::uint64_t capacity) {
    return take(capacity, true);
  }

  // If `capacity` has a tombstone, removes one and returns true.
  bool consume_tombstone(std::uint64_t capacity) {
    Entry* entry = map_.find(capacity);
    if (entry == nullptr || entry->tombstones == 0) return false;
    --entry->tombstones;
    if (!entry->used()) --used_entries_;
    return true;
  }
  std::uint64_t tombstones(std::uint64_t capacity) const {
    const Entry* entry = map_.find(capacity);
    return entry == nullptr ? 0 : entry->tombstones;
  }
  // f(capacity, tombstones) for every capacity with tombstones.
  template <class F>
  void for_each_tombstone(F&& f) const {
    map_.for_each([&](std::uint64_t capacity, const Entry& entry) {
      if (entry.tombstones > 0) f(capacity, entry.tombstones);
    });
  }

  // Number of cached blocks of exactly `capacity`.
  std::uint64_t count(std::uint64_t capacity) const {
    const Entry* entry = map_.find(capacity);
    return entry == nullptr ? 0 : entry->blocks.size();
  }

  // The largest capacity with a cached block, 0 if none. A hash map has no order: this walks
  // every entry (not for hot paths).
  std::uint64_t largest() const {
    std::uint64_t out = 0;
    map_.for_each([&](std::uint64_t capacity, const Entry& entry) {
      if (!entry.blocks.empty()) out = std::max(out, capacity);
    });
    return out;
  }

  // f(block) for every cached block (oldest first within a capacity).
  template <class F>
  void for_each(F&& f) const {
    map_.for_each([&](std::uint64_t capacity, const Entry& entry) {
      entry.blocks.for_each([&](std::uint64_t address) { f(Block{address, capacity}); });
    });
  }

  // Empties the index (tombstones included), calling f(block) for every block it held. `f`
  // must not use the index.
  template <class F>
  void drain(F&& f) {
    // Walking the table costs its size, even empty: once per upstream failure, that is every
    // failed request after the first with `--keep-going`.
    if (map_.empty()) return;
    for_each(f);
    map_.clear();
    recent_entry_ = nullptr;
    blocks_ = 0;
    used_entries_ = 0;
  }

 private:
  struct Entry {
    BlockGroup blocks;
    std::uint64_t tombstones = 0;
    bool used() const { return !blocks.empty() || tombstones > 0; }
  };
  static constexpr std::size_t kUnusedSlack = 4096;

  // The entry of the capacity last looked up, if `capacity` is that one: a program that frees
  // and takes blocks of one size over and over skips the hash probe.
  Entry* recent(std::uint64_t capacity) const {
    return capacity == recent_capacity_ ? recent_entry_ : nullptr;
  }
  // Valid until the map's next insertion, erasure or clear (AddressMap's rule for pointers);
  // every one of them (in add() and drain()) is followed by remember() or a reset.
  void remember(std::uint64_t capacity, Entry* entry) {
    recent_capacity_ = capacity;
    recent_entry_ = entry;
  }

  std::optional<Block> take(std::uint64_t capacity, bool leave_tombstone) {
    Entry* entry = recent(capacity);
    if (entry == nullptr) {
      entry = map_.find(capacity);
      if (entry == nullptr) return std::nullopt;
      remember(capacity, entry);
    }
    if (entry->blocks.empty()) return std::nullopt;
    const Block block{entry->blocks.pop_newest(), capacity};
    --blocks_;
    if (leave_tombstone) {
      ++entry->tombstones;
    } else if (!entry->used()) {
      --used_entries_;
    }
    return block;
  }

  AddressMap<Entry> map_;
  std::uint64_t recent_capacity_ = 0;
  Entry* recent_entry_ = nullptr;  // in map_, of recent_capacity_; or nullptr
  std::uint64_t blocks_ = 0;
  std::size_t used_entries_ = 0;  // entries holding a block or a tombstone
};

// OrderedIndex: blocks by capacity in a std::map, which also finds the smallest capacity in a
// range. Invariant: every group in the map holds at least one block, so the first key >= lo is
// a usable block and a range lookup is one O(log n) search. A group is removed the moment it
// empties; its node (and the vector inside) is kept for reuse, so that steady-state churn
// allocates nothing.
class OrderedIndex {
  using Map = std::map<std::uint64_t, BlockGroup>;

 public:
  std::uint64_t blocks() const { return blocks_; }
  bool empty() const { return blocks_ == 0; }

  void add(const Block& block) {
    group_for(block.capacity).push(block.address);
    ++blocks_;
  }

  // The newest block of exactly `capacity`.
  std::optional<Block> take_newest(std::uint64_t capacity) {
    const Map::iterator it = map_.find(capacity);
    if (it == map_.end()) return std::nullopt;
    const Block block{it->second.pop_newest(), capacity};
    after_take(it);
    return block;
  }

  // The newest block of the smallest capacity c with lo <= c <= hi.
  std::optional<Block> take_newest_in(std::uint64_t lo, std::uint64_t hi) {
    const Map::iterator it = first_in(lo, hi);
    if (it == map_.end()) return std::nullopt;
    const Block block{it->second.pop_newest(), it->first};
    after_take(it);
    return block;
  }

  // The oldest block of the smallest capacity c with lo <= c <= hi.
  std::optional<Block> take_oldest_in(std::uint64_t lo, std::uint64_t hi) {
    const Map::iterator it = first_in(lo, hi);
    if (it == map_.end()) return std::nullopt;
    const Block block{it->second.pop_oldest(), it->first};
    after_take(it);
    return block;
  }

  std::uint64_t count(std::uint64_t capacity) const {
    const auto it = map_.find(capacity);
    return it == map_.end() ? 0 : it->second.size();
  }

  // The largest capacity with a cached block, 0 if none (every group in the map holds one).
  std::uint64_t largest() const { return map_.empty() ? 0 : map_.rbegin()->first; }

  // f(block) for every cached block, by capacity, oldest first within a capacity.
  template <class F>
  void for_each(F&& f) const {
    // Not a structured binding: clang before 16 cannot capture one in a lambda.
    for (const auto& entry : map_) {
      const std::uint64_t capacity = entry.first;
      entry.second.for_each([&](std::uint64_t address) { f(Block{address, capacity}); });
    }
  }

  // Empties the index, calling f(block) for every block it held. `f` must not use the index.
  template <class F>
  void drain(F&& f) {
    for_each(f);
    blocks_ = 0;
    // Keep some nodes for the next fill (per-run-pool drains at every run end).
    while (!map_.empty() && spare_nodes_.size() < kMaxSpareNodes) {
      Map::node_type node = map_.extract(map_.begin());
      node.mapped().clear();
      spare_nodes_.push_back(std::move(node));
    }
    map_.clear();
  }

 private:
  static constexpr std::size_t kMaxSpareNodes = 256;

  BlockGroup& group_for(std::uint64_t capacity) {
    const Map::iterator it = map_.lower_bound(capacity);
    if (it != map_.end() && it->first == capacity) return it->second;
    if (!spare_nodes_.empty()) {
      Map::node_type node = std::move(spare_nodes_.back());
      spare_nodes_.pop_back();
      node.key() = capacity;
      return map_.insert(it, std::move(node))->second;
    }
    return map_.emplace_hint(it, capacity, BlockGroup{})->second;
  }

  // The first group with a capacity in [lo, hi] (every group holds blocks), or end().
  Map::iterator first_in(std::uint64_t lo, std::uint64_t hi) {
    const Map::iterator it = map_.lower_bound(lo);
    return it != map_.end() && it->first <= hi ? it : map_.end();
  }

  void after_take(Map::iterator it) {
    --blocks_;
    if (!it->second.empty()) return;
    Map::node_type node = map_.extract(it);
    if (spare_nodes_.size() < kMaxSpareNodes) spare_nodes_.push_back(std::move(node));
  }

  Map map_;
  std::uint64_t blocks_ = 0;
  std::vector<Map::node_type> spare_nodes_;  // emptied nodes, kept for reuse
};

}  // namespace alloclab::detail
