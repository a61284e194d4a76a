#pragma once
// AddressMap: the project's one hash map from 64-bit keys (addresses, capacities, allocation ids;
// any value, 0 included) to a Value, for the hot paths: resolving, encoding, the strategies'
// indexes and upstreams, replay's live blocks. Header-only, so that every module above format/
// reaches it without linking it.
//
// - Open addressing in one power-of-two array of (key, value) slots: a key and its value share
//   a slot, so a lookup that misses the cache misses it once.
// - Fibonacci hashing (the top bits of key * 2^64/phi): addresses and capacities are often
//   multiples of large powers of two, and the multiply spreads them.
// - Linear probing with backward-shift deletion: no tombstones, so however long the insert and
//   erase churn, a probe run is only as long as the entries in it make it.
// - Key 0 marks an empty slot; the entry of key 0, if any, is kept beside the array.
// - At most half the slots are full. So an empty slot always exists, which ends every probe
//   loop, and a miss stops early. The array only ever grows, and is rebuilt in one place,
//   rebuild(), which is never given fewer than twice the entries it re-inserts.
//
// Pointers to values stay valid until the next insertion, erasure, reserve() or clear(). A map
// moved from may only be destroyed or assigned to.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

namespace alloclab {

template <class Value>
class AddressMap {
 public:
  AddressMap() : slots_(kMinSlots) {
    // Here rather than in the class: a Value declared inside a class that holds an AddressMap
    // of it is only default-constructible once that class is complete.
    static_assert(std::is_default_constructible_v<Value> && std::is_move_assignable_v<Value>);
  }

  std::size_t size() const { return in_slots_ + (has_zero_ ? 1 : 0); }
  bool empty() const { return size() == 0; }
  // Slots in the array (a power of two); what reserve() and growth change, and clear() keeps.
  std::size_t slot_count() const { return slots_.size(); }

  Value* find(std::uint64_t key) {
    if (key == 0) [[unlikely]]
      return has_zero_ ? &zero_value_ : nullptr;
    for (std::size_t i = home(key);; i = next(i)) {
      Slot& slot = slots_[i];
      if (slot.key == key) return &slot.value;
      if (slot.key == 0) return nullptr;
    }
  }
  const Value* find(std::uint64_t key) const { return const_cast<AddressMap*>(this)->find(key); }
  bool contains(std::uint64_t key) const { return find(key) != nullptr; }

  // Starts loading the slot where a lookup of `key` begins, so that a loop that knows its keys
  // a few steps ahead does not wait for each cache miss in turn.
  void prefetch(std::uint64_t key) const { __builtin_prefetch(&slots_[home(key)]); }

  // The value of `key`, value-initialised and inserted if absent (second: whether it was).
  std::pair<Value*, bool> try_emplace(std::uint64_t key) {
    if (key == 0) [[unlikely]] {
      const bool inserted = !has_zero_;
      has_zero_ = true;
      return {&zero_value_, inserted};
    }
    std::size_t i = home(key);
    for (; slots_[i].key != 0; i = next(i)) {
      if (slots_[i].key == key) return {&slots_[i].value, false};
    }
    if (in_slots_ == max_in_slots_) [[unlikely]]
      i = grow_for(key);
    slots_[i].key = key;
    // An emptied slot keeps a trivially destructible value as it was (see empty_slot()).
    if constexpr (std::is_trivially_destructible_v<Value>) slots_[i].value = Value{};
    ++in_slots_;
    return {&slots_[i].value, true};
  }

  // Inserts `key` or replaces its value.
  void insert_or_assign(std::uint64_t key, Value value) {
    *try_emplace(key).first = std::move(value);
  }

  // Removes `key`; false if it was absent.
  bool erase(std::uint64_t key) {
    if (key == 0) [[unlikely]] {
      if (!has_zero_) return false;
      drop_zero();
      return true;
    }
    const std::size_t i = index_of(key);
    if (i == kNotFound) return false;
    erase_at(i);
    return true;
  }

  // Removes `key` and returns its value; nullopt if it was absent.
  std::optional<Value> take(std::uint64_t key) {
    if (key == 0) [[unlikely]] {
      if (!has_zero_) return std::nullopt;
      std::optional<Value> value(std::move(zero_value_));
      drop_zero();
      return value;
    }
    const std::size_t i = index_of(key);
    if (i == kNotFound) return std::nullopt;
    std::optional<Value> value(std::move(slots_[i].value));
    erase_at(i);
    return value;
  }

  // Removes `key` and moves its value into `into`; false (and `into` untouched) if it was
  // absent. take() without the optional: a caller on a hot path that copies the optional out
  // writes its engaged flag as a byte and reads it back as part of a wider word, which stalls.
  bool take_into(std::uint64_t key, Value& into) {
    if (key == 0) [[unlikely]] {
      if (!has_zero_) return false;
      into = std::move(zero_value_);
      drop_zero();
      return true;
    }
    const std::size_t i = index_of(key);
    if (i == kNotFound) return false;
    into = std::move(slots_[i].value);
    erase_at(i);
    return true;
  }

  // Removes every entry for which drop(key, value) is true, and returns how many it removed.
  // O(slots), in place. `drop` must not use the map.
  template <class Pred>
  std::size_t erase_if(Pred&& drop) {
    const std::size_t before = size();
    if (has_zero_ && drop(std::uint64_t{0}, zero_value_)) drop_zero();
    // Start just after an empty slot: no probe run crosses it, so erase_at() only moves entries
    // not yet visited into the slot being visited (which is then looked at again), never into
    // one already visited.
    std::size_t start = 0;
    while (slots_[start].key != 0) ++start;
    std::size_t i = next(start);
    for (std::size_t visited = 1; visited < slots_.size();) {
      if (slots_[i].key != 0 && drop(slots_[i].key, slots_[i].value)) {
        erase_at(i);
        continue;
      }
      i = next(i);
      ++visited;
    }
    return before - size();
  }

  // Empties the map and keeps its slots, for a map refilled to the same size again and again.
  void clear() {
    if (has_zero_) drop_zero();
    if (in_slots_ == 0) return;
    for (Slot& slot : slots_) {
      if (slot.key != 0) empty_slot(slot);
    }
    in_slots_ = 0;
  }

  // Makes room for `n` entries, so that inserting up to n of them does not rebuild the array.
  void reserve(std::size_t n) {
    if (n > std::numeric_limits<std::size_t>::max() / 4) throw std::length_error("AddressMap");
    if (n * 2 > slots_.size()) rebuild(std::bit_ceil(n * 2));
  }

  // f(key, value) for every entry, in no particular order. `f` must not insert or erase.
  template <class F>
  void for_each(F&& f) {
    if (has_zero_) f(std::uint64_t{0}, zero_value_);
    for (Slot& slot : slots_) {
      if (slot.key != 0) f(slot.key, slot.value);
    }
  }
  template <class F>
  void for_each(F&& f) const {
    if (has_zero_) f(std::uint64_t{0}, static_cast<const Value&>(zero_value_));
    for (const Slot& slot : slots_) {
      if (slot.key != 0) f(slot.key, slot.value);
    }
  }

 private:
  struct Slot {
    std::uint64_t key = 0;  // 0: empty
    Value value{};          // in an empty slot: Value{}, unless trivially destructible
  };
  // A new map's slots. Maps of a few dozen entries are common (the blocks a strategy has handed
  // out at a time) and hot; at this size they stay sparse, so their probes seldom run into a
  // neighbour's entry.
  static constexpr std::size_t kMinSlots = 64;
  static constexpr std::size_t kNotFound = ~std::size_t{0};

  std::size_t next(std::size_t i) const { return (i + 1) & mask_; }
  std::size_t home(std::uint64_t key) const {
    // slots_.size() is 2^k, k >= 4: the top k bits of the product.
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ULL) >> shift_);
  }

  // Where `key` (nonzero) is, or kNotFound.
  std::size_t index_of(std::uint64_t key) const {
    for (std::size_t i = home(key);; i = next(i)) {
      if (slots_[i].key == key) return i;
      if (slots_[i].key == 0) return kNotFound;
    }
  }

  // The first empty slot of key's probe run; for a key known to be absent.
  std::size_t free_slot_for(std::uint64_t key) const {
    std::size_t i = home(key);
    while (slots_[i].key != 0) i = next(i);
    return i;
  }

  static void empty_slot(Slot& slot) {
    slot.key = 0;
    if constexpr (!std::is_trivially_destructible_v<Value>) slot.value = Value{};
  }

  void drop_zero() {
    has_zero_ = false;
    zero_value_ = Value{};
  }

  // Backward-shift deletion: an entry later in the probe run moves into the hole whenever the
  // hole lies between its home slot and where it is, so every entry stays reachable from home.
  void erase_at(std::size_t hole) {
    for (std::size_t j = next(hole); slots_[j].key != 0; j = next(j)) {
      const std::size_t want = home(slots_[j].key);
      if (((j - want) & mask_) >= ((j - hole) & mask_)) {
        slots_[hole].key = slots_[j].key;
        slots_[hole].value = std::move(slots_[j].value);
        hole = j;
      }
    }
    empty_slot(slots_[hole]);
    --in_slots_;
  }

  // Doubles the slots for one more entry, and returns the empty slot where `key` (absent) goes.
  // Out of line: the insertion that inlines try_emplace() seldom takes this path.
  [[gnu::noinline]] std::size_t grow_for(std::uint64_t key) {
    rebuild(slots_.size() * 2);
    return free_slot_for(key);
  }

  // Re-inserts every entry into `count` slots; count is a power of two, at least twice the
  // entries, so the re-insertion always finds empty slots.
  void rebuild(std::size_t count) {
    std::vector<Slot> old(count);
    old.swap(slots_);
    mask_ = count - 1;
    max_in_slots_ = count / 2;
    shift_ = 64 - static_cast<unsigned>(std::countr_zero(count));
    for (Slot& slot : old) {
      if (slot.key == 0) continue;
      Slot& to = slots_[free_slot_for(slot.key)];
      to.key = slot.key;
      to.value = std::move(slot.value);
    }
  }

  std::vector<Slot> slots_;
  std::size_t mask_ = kMinSlots - 1;          // slots_.size() - 1
  std::size_t in_slots_ = 0;                  // entries in slots_ (all but key 0's)
  std::size_t max_in_slots_ = kMinSlots / 2;  // slots_.size() / 2: at most half are full
  unsigned shift_ = 64 - std::countr_zero(kMinSlots);
  bool has_zero_ = false;
  Value zero_value_{};
};

}  // namespace alloclab
