#pragma once
// CountingUpstream: an adaptor that counts what passes between a strategy and any upstream
// (RMM's statistics_resource_adaptor idea). These are the upstream-side counters of
// docs/strategy-contract.md; the replayer reads `reserved_bytes` after every operation to take the
// peak.
#include <cstddef>
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

  // A mapping counts its pages as blocks and is logged as one call of all its bytes: the
  // recorded allocator's segment_map names the whole mapped range.
  bool allocate_pages(std::uint64_t page, std::uint64_t count, std::vector<Block>& pages) override {
    const std::size_t first = pages.size();
    if (!inner_.allocate_pages(page, count, pages)) {
      ++counters_.failed;
      return false;
    }
    std::uint64_t bytes = 0;
    for (std::size_t k = first; k < pages.size(); ++k) bytes += pages[k].capacity;
    counters_.allocs += pages.size() - first;
    counters_.reserved_bytes += bytes;
    if (log_) log_->push_back(UpstreamCall{false, bytes});
    return true;
  }
  void deallocate_pages(const std::vector<Block>& pages) override {
    inner_.deallocate_pages(pages);
    std::uint64_t bytes = 0;
    for (const Block& page : pages) bytes += page.capacity;
    counters_.frees += pages.size();
    counters_.reserved_bytes -= bytes;
    if (log_) log_->push_back(UpstreamCall{true, bytes});
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
