#include "alloclab/strategies/upstream/host_mmap.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <stdexcept>
#include <string>

namespace alloclab {

HostMmapUpstream::HostMmapUpstream() {
  const long page = ::sysconf(_SC_PAGESIZE);
  page_ = page > 0 ? static_cast<std::uint64_t>(page) : 4096;
}

// Whole pages, at least one. Requires capacity small enough not to overflow (checked by allocate).
std::uint64_t HostMmapUpstream::mapping_bytes(std::uint64_t capacity) const {
  if (capacity == 0) return page_;
  return (capacity + page_ - 1) / page_ * page_;
}

std::optional<Block> HostMmapUpstream::allocate(std::uint64_t bytes) {
  // Past 2^62 no machine has the address space; refusing early also rules out overflow below.
  if (bytes > (std::uint64_t{1} << 62)) return std::nullopt;
  void* p = ::mmap(nullptr, mapping_bytes(bytes), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return std::nullopt;
  return Block{reinterpret_cast<std::uintptr_t>(p), bytes};
}

void HostMmapUpstream::deallocate(const Block& block) {
  if (::munmap(reinterpret_cast<void*>(static_cast<std::uintptr_t>(block.address)),
               mapping_bytes(block.capacity)) != 0) {
    // Only a block this upstream never handed out can get here: a bug above, not bad input.
    throw std::logic_error("host-mmap: munmap of a block at " + std::to_string(block.address) +
                           " failed");
  }
}

}  // namespace alloclab
