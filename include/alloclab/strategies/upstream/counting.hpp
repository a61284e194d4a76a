#pragma once
// CountingUpstream: an adaptor that counts what passes between a strategy and any upstream
// (RMM's statistics_resource_adaptor idea). These are the upstream-side counters of
// docs/strategy-contract.md; the replayer reads `reserved_bytes` after every operation to take the
// peak.
#include <cstdint>
#include <optional>

#include "alloclab/strategies/strategy.hpp"

namespace alloclab {

struct UpstreamCounters {
  std::uint64_t allocs = 0;          // blocks obtained from the upstream (successful allocate())
  std::uint64_t frees = 0;           // blocks returned to the upstream
  std::uint64_t failed = 0;          // allocate() calls that returned nullopt
  std::uint64_t reserved_bytes = 0;  // sum of capacities obtained and not yet returned
};

class CountingUpstream final : public Upstream {
 public:
  // `inner` must outlive this adaptor.
  explicit CountingUpstream(Upstream& inner) : inner_(inner) {}

  std::optional<Block> allocate(std::uint64_t bytes) override {
    std::optional<Block> block = inner_.allocate(bytes);
    if (block) {
      ++counters_.allocs;
      counters_.reserved_bytes += block->capacity;
    } else {
      ++counters_.failed;
    }
    return block;
  }

  void deallocate(const Block& block) override {
    inner_.deallocate(block);
    ++counters_.frees;
    counters_.reserved_bytes -= block.capacity;
  }

  void touch(std::uint64_t address, std::uint64_t bytes) override { inner_.touch(address, bytes); }

  const UpstreamCounters& counters() const { return counters_; }
  std::uint64_t allocs() const { return counters_.allocs; }
  std::uint64_t frees() const { return counters_.frees; }
  std::uint64_t failed() const { return counters_.failed; }
  std::uint64_t reserved_bytes() const { return counters_.reserved_bytes; }

 private:
  Upstream& inner_;
  UpstreamCounters counters_;
};

}  // namespace alloclab
