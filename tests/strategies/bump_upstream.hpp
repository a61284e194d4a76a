#pragma once
// An upstream for hand-worked strategy tests: a bump allocator whose addresses only grow, so
// blocks are contiguous in address space (a merge across them would show), with every call
// counted. Fails when live bytes would exceed `limit`.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>

#include "alloclab/strategies/strategy.hpp"

namespace alloclab::test {

class BumpUpstream final : public Upstream {
 public:
  explicit BumpUpstream(std::uint64_t limit = UINT64_MAX) : limit_(limit) {}

  std::optional<Block> allocate(std::uint64_t bytes) override {
    ++calls;
    if (bytes > limit_ - live_bytes) return std::nullopt;
    const Block b{next_, bytes};
    next_ += bytes;
    live_.emplace(b.address, bytes);
    live_bytes += bytes;
    peak_bytes = std::max(peak_bytes, live_bytes);
    ++allocs;
    return b;
  }
  void deallocate(const Block& b) override {
    auto it = live_.find(b.address);
    if (it == live_.end() || it->second != b.capacity) throw std::logic_error("bad upstream free");
    live_bytes -= b.capacity;
    live_.erase(it);
    ++frees;
  }

  std::uint64_t calls = 0;  // allocate() calls, failed ones included
  std::uint64_t allocs = 0;
  std::uint64_t frees = 0;
  std::uint64_t live_bytes = 0;
  std::uint64_t peak_bytes = 0;

 private:
  std::uint64_t limit_;
  std::uint64_t next_ = std::uint64_t{1} << 32;
  std::map<std::uint64_t, std::uint64_t> live_;
};

// allocate(), expected to succeed.
template <class S>
Block take(S& strategy, std::uint64_t size, std::uint64_t stream = 0) {
  std::optional<Block> b = strategy.allocate(size, stream);
  EXPECT_TRUE(b.has_value()) << "allocate(" << size << ") failed";
  return b.value_or(Block{});
}

}  // namespace alloclab::test
