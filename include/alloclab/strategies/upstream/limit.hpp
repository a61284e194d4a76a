#pragma once
// LimitUpstream: emulates a smaller device over any upstream (`--memory-limit` on a real
// upstream). An allocation that would take the bytes held through this adaptor (sum of capacities
// obtained and not returned) past the limit fails with nullopt without calling the inner upstream.
#include <cstdint>

#include "alloclab/strategies/strategy.hpp"

namespace alloclab {

class LimitUpstream final : public Upstream {
 public:
  // `inner` must outlive this adaptor.
  LimitUpstream(Upstream& inner, std::uint64_t limit_bytes)
      : inner_(inner), limit_bytes_(limit_bytes) {}

  std::optional<Block> allocate(std::uint64_t bytes) override {
    if (bytes > limit_bytes_ - held_bytes_) return std::nullopt;  // held <= limit always
    std::optional<Block> block = inner_.allocate(bytes);
    if (block) held_bytes_ += block->capacity;
    return block;
  }
  void deallocate(const Block& block) override {
    inner_.deallocate(block);
    held_bytes_ -= block.capacity;
  }
  void touch(std::uint64_t address, std::uint64_t bytes) override { inner_.touch(address, bytes); }
  std::uint64_t held_bytes() const { return held_bytes_; }
  std::uint64_t limit_bytes() const { return limit_bytes_; }

 private:
  Upstream& inner_;
  std::uint64_t limit_bytes_;
  std::uint64_t held_bytes_ = 0;
};

}  // namespace alloclab
