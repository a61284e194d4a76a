#pragma once
// BlockTable: the blocks a live strategy has handed out, by address: an open-addressing hash
// table with linear probing and backward-shift deletion, so that a program holding hundreds of
// thousands of blocks pays one probe or two per call and no node allocation. Not thread-safe.
#include <cstdint>
#include <vector>

namespace alloclab::live {

struct HandedOut {
  std::uint64_t address = 0;  // 0: an empty slot (no block lies at address 0)
  std::uint64_t capacity = 0;
  std::uint64_t requested = 0;
};

class BlockTable {
 public:
  BlockTable() : slots_(kInitialSlots) {}

  const HandedOut* find(std::uint64_t address) const {
    if (address == 0) return nullptr;
    for (std::size_t i = home(address);; i = next(i)) {
      const HandedOut& slot = slots_[i];
      if (slot.address == address) return &slot;
      if (slot.address == 0) return nullptr;
    }
  }
  HandedOut* find(std::uint64_t address) {
    return const_cast<HandedOut*>(static_cast<const BlockTable*>(this)->find(address));
  }

  // `entry.address` must be non-zero and not in the table.
  void insert(const HandedOut& entry) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    place(entry);
    ++size_;
  }

  // Removes the block at `address`, which must be in the table.
  void erase(std::uint64_t address) {
    std::size_t hole = home(address);
    while (slots_[hole].address != address) hole = next(hole);
    // Backward shift: each later entry of the probe run that may move into the hole does, so
    // that no lookup ever stops early at an empty slot.
    for (std::size_t i = next(hole);; i = next(i)) {
      const std::uint64_t a = slots_[i].address;
      if (a == 0) break;
      const std::size_t want = home(a);
      const bool may_move = hole <= i ? (want <= hole || want > i) : (want <= hole && want > i);
      if (may_move) {
        slots_[hole] = slots_[i];
        hole = i;
      }
    }
    slots_[hole] = HandedOut{};
    --size_;
  }

  std::size_t size() const { return size_; }

 private:
  static constexpr std::size_t kInitialSlots = 1024;  // a power of two

  std::size_t home(std::uint64_t address) const {
    // Blocks are at least 16-byte aligned: the low bits carry nothing.
    return static_cast<std::size_t>((address >> 4) * 0x9E3779B97F4A7C15ull >> 20) &
           (slots_.size() - 1);
  }
  std::size_t next(std::size_t i) const { return (i + 1) & (slots_.size() - 1); }
  void place(const HandedOut& entry) {
    std::size_t i = home(entry.address);
    while (slots_[i].address != 0) i = next(i);
    slots_[i] = entry;
  }
  void grow() {
    std::vector<HandedOut> old(slots_.size() * 2);
    old.swap(slots_);
    for (const HandedOut& entry : old)
      if (entry.address != 0) place(entry);
  }

  std::vector<HandedOut> slots_;
  std::size_t size_ = 0;
};

}  // namespace alloclab::live
