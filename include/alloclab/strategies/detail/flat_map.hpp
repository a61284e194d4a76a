#pragma once
// FlatMap: a hash map from 64-bit keys (any value, 0 included) to V, for the hot paths: the
// capacity index of exact matching, fifo-shrink's tombstone counts, SimUpstream's live blocks.
// Open addressing with linear probing in one power-of-two array, Fibonacci hashing (capacities
// and addresses are often multiples of large powers of two; the multiply spreads them), and
// backward-shift deletion, so there are no tombstones and no allocation except when it grows.
// Pointers to values stay valid until the next insertion or erasure.
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace alloclab::detail {

template <class V>
class FlatMap {
 public:
  FlatMap() { slots_.resize(kInitialSlots); }

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  V* find(std::uint64_t key) {
    for (std::size_t i = home(key);; i = next(i)) {
      Slot& slot = slots_[i];
      if (!slot.full) return nullptr;
      if (slot.key == key) return &slot.value;
    }
  }
  const V* find(std::uint64_t key) const { return const_cast<FlatMap*>(this)->find(key); }

  // The value for key, default-constructed and inserted if absent (second: whether it was).
  std::pair<V*, bool> try_emplace(std::uint64_t key) {
    if ((size_ + 1) * 4 > slots_.size() * 3) grow();  // load factor <= 3/4
    std::size_t i = home(key);
    for (; slots_[i].full; i = next(i)) {
      if (slots_[i].key == key) return {&slots_[i].value, false};
    }
    slots_[i].full = true;
    slots_[i].key = key;
    slots_[i].value = V{};
    ++size_;
    return {&slots_[i].value, true};
  }

  // Removes key; false if it was absent.
  bool erase(std::uint64_t key) {
    std::size_t hole = home(key);
    for (;; hole = next(hole)) {
      if (!slots_[hole].full) return false;
      if (slots_[hole].key == key) break;
    }
    // Backward-shift deletion: an entry later in the probe run moves into the hole whenever the
    // hole lies between its home slot and where it is, so every entry stays reachable from home.
    for (std::size_t j = next(hole); slots_[j].full; j = next(j)) {
      const std::size_t want = home(slots_[j].key);
      if (((j - want) & mask()) >= ((j - hole) & mask())) {
        slots_[hole].key = slots_[j].key;
        slots_[hole].value = std::move(slots_[j].value);
        hole = j;
      }
    }
    slots_[hole].full = false;
    slots_[hole].value = V{};
    --size_;
    return true;
  }

  // f(key, value&) for every entry, in no particular order.
  template <class F>
  void for_each(F&& f) {
    for (Slot& slot : slots_) {
      if (slot.full) f(slot.key, slot.value);
    }
  }
  template <class F>
  void for_each(F&& f) const {
    for (const Slot& slot : slots_) {
      if (slot.full) f(slot.key, slot.value);
    }
  }

  // Removes every entry for which drop(key, value) is true; O(slots).
  template <class Pred>
  void erase_if(Pred&& drop) {
    std::vector<Slot> old(slots_.size());
    old.swap(slots_);
    size_ = 0;
    for (Slot& slot : old) {
      if (slot.full && !drop(slot.key, slot.value)) insert_moved(slot.key, std::move(slot.value));
    }
  }

  void clear() {
    std::vector<Slot> fresh(kInitialSlots);
    slots_.swap(fresh);
    size_ = 0;
    shift_ = kInitialShift;
  }

 private:
  struct Slot {
    std::uint64_t key = 0;
    bool full = false;
    V value{};
  };
  static constexpr std::size_t kInitialSlots = 16;   // a power of two...
  static constexpr unsigned kInitialShift = 64 - 4;  // ...2^4; shift_ = 64 - log2(slots)

  std::size_t mask() const { return slots_.size() - 1; }
  std::size_t next(std::size_t i) const { return (i + 1) & mask(); }
  std::size_t home(std::uint64_t key) const {
    // Fibonacci hashing: the top log2(slots) bits of key * 2^64/phi.
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ULL) >> shift_);
  }

  void insert_moved(std::uint64_t key, V&& value) {
    std::size_t i = home(key);
    while (slots_[i].full) i = next(i);
    slots_[i].full = true;
    slots_[i].key = key;
    slots_[i].value = std::move(value);
    ++size_;
  }

  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    --shift_;
    size_ = 0;
    for (Slot& slot : old) {
      if (slot.full) insert_moved(slot.key, std::move(slot.value));
    }
  }

  std::vector<Slot> slots_;
  std::size_t size_ = 0;
  unsigned shift_ = kInitialShift;
};

}  // namespace alloclab::detail
