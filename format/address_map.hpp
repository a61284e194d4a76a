#pragma once
// Open-addressing map from a nonzero address (or other 64-bit key) to a small value. Resolution
// does one lookup per event, so this is on the hot path of loading: linear probing with
// backward-shift deletion keeps probes short without tombstones. Address 0 marks an empty slot (0
// is never a live address). A key and its value share a slot, so a lookup that misses the cache
// misses it once.
#include <algorithm>
#include <cstdint>
#include <vector>

namespace alloclab::detail {

template <typename Value>
class BasicAddressMap {
 public:
  BasicAddressMap() { rehash(16); }

  const Value* find(std::uint64_t key) const {
    for (std::size_t i = slot(key);; i = (i + 1) & mask_) {
      if (slots_[i].key == key) return &slots_[i].value;
      if (slots_[i].key == 0) return nullptr;
    }
  }
  Value* find(std::uint64_t key) {
    return const_cast<Value*>(static_cast<const BasicAddressMap&>(*this).find(key));
  }

  // Starts loading the slot where a lookup of `key` begins, so a loop that knows its keys a few
  // steps ahead does not wait for each miss in turn.
  void prefetch(std::uint64_t key) const { __builtin_prefetch(&slots_[slot(key)]); }

  // Inserts or overwrites.
  void put(std::uint64_t key, Value value) {
    if ((count_ + 1) * 2 > slots_.size()) rehash(slots_.size() * 2);
    std::size_t i = slot(key);
    while (slots_[i].key != 0 && slots_[i].key != key) i = (i + 1) & mask_;
    if (slots_[i].key == 0) ++count_;
    slots_[i] = {key, value};
  }

  bool erase(std::uint64_t key) {
    std::size_t i = slot(key);
    while (slots_[i].key != key) {
      if (slots_[i].key == 0) return false;
      i = (i + 1) & mask_;
    }
    // Backward shift: move later entries of the probe run into the hole so lookups that
    // would have passed through it still find them.
    std::size_t hole = i;
    for (std::size_t j = (i + 1) & mask_; slots_[j].key != 0; j = (j + 1) & mask_) {
      const std::size_t home = slot(slots_[j].key);
      const bool movable = hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
      if (movable) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole].key = 0;
    --count_;
    return true;
  }

  std::size_t size() const { return count_; }

  // Empties the map and keeps its memory (an encoder reuses one map for every chunk).
  void clear() {
    if (count_ == 0) return;
    for (Slot& s : slots_) s.key = 0;
    count_ = 0;
  }

  template <typename F>
  void for_each(F&& f) const {
    for (const Slot& s : slots_)
      if (s.key != 0) f(s.key, s.value);
  }

 private:
  std::size_t slot(std::uint64_t key) const {
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
  }

  struct Slot {
    std::uint64_t key;
    Value value;
  };

  void rehash(std::size_t capacity) {
    std::vector<Slot> old(capacity, Slot{0, Value{}});
    old.swap(slots_);
    mask_ = capacity - 1;
    shift_ = 64 - static_cast<unsigned>(__builtin_ctzll(capacity));
    count_ = 0;
    for (const Slot& s : old)
      if (s.key != 0) put(s.key, s.value);
  }

  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  unsigned shift_ = 0;
  std::size_t count_ = 0;
};

using AddressMap = BasicAddressMap<std::uint32_t>;

}  // namespace alloclab::detail
