#pragma once
// Open-addressing map from a nonzero address (or other 64-bit key) to a small value. Resolution
// does one lookup per event, so this is on the hot path of loading: linear probing with
// backward-shift deletion keeps probes short without tombstones. Address 0 marks an empty slot (0
// is never a live address).
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
      if (keys_[i] == key) return &values_[i];
      if (keys_[i] == 0) return nullptr;
    }
  }
  Value* find(std::uint64_t key) {
    return const_cast<Value*>(static_cast<const BasicAddressMap&>(*this).find(key));
  }

  // Starts loading the slot where a lookup of `key` begins, so a loop that knows its keys a few
  // steps ahead does not wait for each miss in turn.
  void prefetch(std::uint64_t key) const {
    const std::size_t i = slot(key);
    __builtin_prefetch(&keys_[i]);
    __builtin_prefetch(&values_[i]);
  }

  // Inserts or overwrites.
  void put(std::uint64_t key, Value value) {
    if ((count_ + 1) * 2 > keys_.size()) rehash(keys_.size() * 2);
    std::size_t i = slot(key);
    while (keys_[i] != 0 && keys_[i] != key) i = (i + 1) & mask_;
    if (keys_[i] == 0) ++count_;
    keys_[i] = key;
    values_[i] = value;
  }

  bool erase(std::uint64_t key) {
    std::size_t i = slot(key);
    while (keys_[i] != key) {
      if (keys_[i] == 0) return false;
      i = (i + 1) & mask_;
    }
    // Backward shift: move later entries of the probe run into the hole so lookups that
    // would have passed through it still find them.
    std::size_t hole = i;
    for (std::size_t j = (i + 1) & mask_; keys_[j] != 0; j = (j + 1) & mask_) {
      const std::size_t home = slot(keys_[j]);
      const bool movable = hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
      if (movable) {
        keys_[hole] = keys_[j];
        values_[hole] = values_[j];
        hole = j;
      }
    }
    keys_[hole] = 0;
    --count_;
    return true;
  }

  std::size_t size() const { return count_; }

  // Empties the map and keeps its memory (an encoder reuses one map for every chunk).
  void clear() {
    if (count_ == 0) return;
    std::fill(keys_.begin(), keys_.end(), 0);
    count_ = 0;
  }

  template <typename F>
  void for_each(F&& f) const {
    for (std::size_t i = 0; i < keys_.size(); ++i)
      if (keys_[i] != 0) f(keys_[i], values_[i]);
  }

 private:
  std::size_t slot(std::uint64_t key) const {
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
  }

  void rehash(std::size_t capacity) {
    std::vector<std::uint64_t> old_keys(capacity, 0);
    std::vector<Value> old_values(capacity, Value{});
    old_keys.swap(keys_);
    old_values.swap(values_);
    mask_ = capacity - 1;
    shift_ = 64 - static_cast<unsigned>(__builtin_ctzll(capacity));
    count_ = 0;
    for (std::size_t i = 0; i < old_keys.size(); ++i)
      if (old_keys[i] != 0) put(old_keys[i], old_values[i]);
  }

  std::vector<std::uint64_t> keys_;
  std::vector<Value> values_;
  std::size_t mask_ = 0;
  unsigned shift_ = 0;
  std::size_t count_ = 0;
};

using AddressMap = BasicAddressMap<std::uint32_t>;

}  // namespace alloclab::detail
