#pragma once
// CountingUpstream: an adaptor that counts what passes between a strategy and any upstream
// (RMM's statistics_resource_adaptor idea). These are the upstream-side counters of
// docs/strategy-contract.md; the replayer reads `reserved_bytes` after every operation to take the
// peak.
#include <cstdint>
#include <optional>
#include <vector>

#include "alloclab/strategies/strategy.hpp"

namespace alloclab {

struct UpstreamCounters {
  std::uint64_t allocs = 0;          // blocks obtained from the upstream (successful allocate())
  std::uint64_t frees = 0;           // blocks returned to the upstream
  std::uint64_t failed = 0;          // allocate() calls that returned nullopt
  std::uint64_t reserved_bytes = 0;  // sum of capacities obtained and not yet returned
};

// One upstream call that succeeded, as a call log holds it.
struct UpstreamCall {
  bool free = false;        // deallocate; otherwise a successful allocate
  std::uint64_t bytes = 0;  // the block's capacity
  bool operator==(const UpstreamCall&) const = default;
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
      if (log_) log_->push_back(UpstreamCall{false, block->capacity});
    } else {
      ++counters_.failed;
    }
    return block;
  }

  void deallocate(const Block& block) override {
    inner_.deallocate(block);
    ++counters_.frees;
    counters_.reserved_bytes -= block.capacity;
    if (log_) log_->push_back(UpstreamCall{true, block.capacity});
  }

  // From now on, appends every successful allocate and every deallocate to `log` (null: stop).
  // The replay reads it to hold a strategy's upstream calls against a recorded allocator's; a
  // failed allocate is not logged, as a recorded allocator records no segment for it.
  void log_calls(std::vector<UpstreamCall>* log) { log_ = log; }

  void touch(std::uint64_t address, std::uint64_t bytes) override { inner_.touch(address, bytes); }

  const UpstreamCounters& counters() const { return counters_; }
  std::uint64_t allocs() const { return counters_.allocs; }
  std::uint64_t frees() const { return counters_.frees; }
  std::uint64_t failed() const { return counters_.failed; }
  std::uint64_t reserved_bytes() const { return counters_.reserved_bytes; }

 private:
  Upstream& inner_;
  UpstreamCounters counters_;
  std::vector<UpstreamCall>* log_ = nullptr;
};

}  // namespace alloclab
