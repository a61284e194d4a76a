#pragma once
// HostMmapUpstream: anonymous private mappings (mmap/munmap) of whole pages.
//
// Promises:
// - a block has exactly the capacity asked for; its address is the start of its own mapping of
//   ceil(capacity / page) pages (at least one page, so a zero-byte block has an address);
// - fresh mappings are zero pages: the first write to each page faults (what --touch measures);
// - mmap failing (ENOMEM, a size beyond the address space) is a failed allocation (nullopt).
#include <cstdint>

#include "alloclab/strategies/strategy.hpp"

namespace alloclab {

class HostMmapUpstream final : public Upstream {
 public:
  HostMmapUpstream();
  std::optional<Block> allocate(std::uint64_t bytes) override;
  void deallocate(const Block& block) override;
  std::uint64_t page_size() const { return page_; }

 private:
  std::uint64_t mapping_bytes(std::uint64_t capacity) const;
  std::uint64_t page_;
};

}  // namespace alloclab
