#pragma once
// The address model of .alt versions 4 and 5. Allocators hand a request the block they most
// recently took back in its size class (glibc's tcache and bins, jemalloc's and mimalloc's free
// lists, PyTorch's block pools), so an allocation's address is most often one of the last few
// addresses freed with about its size. Encoder and decoder keep this same table, chunk by chunk,
// and such an allocation costs a small rank instead of an address delta (on recorded PyTorch
// traces about half the address bytes). It is only a hint: a miss costs the delta, so any
// allocator's choices encode correctly.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace alloclab::detail {

class FreedBlocks {
 public:
  static constexpr unsigned depth = 8;  // ranks 0 .. depth-1, newest first
  static constexpr unsigned ring_bits = 10;
  static constexpr std::size_t ring_count = std::size_t{1} << ring_bits;

  FreedBlocks() : rings_(ring_count, Ring{}) {}

  // Forgets everything (a chunk starts empty); only the rings used since the last clear.
  void clear() {
    for (std::uint32_t r : touched_) rings_[r].fill(0);
    touched_.clear();
  }

  // glibc's chunk for a request of `size` bytes: the request and an 8-byte header, rounded up
  // to 16, at least 32 (mod 2^64 for sizes no allocator grants).
  static std::uint64_t glibc_chunk_bytes(std::uint64_t size) {
    return std::max<std::uint64_t>(32, (size + 23) & ~std::uint64_t{15});
  }

  // The ring of a request of `size` bytes. glibc's chunk size is the finest class any common
  // allocator uses; classes are hashed onto the rings, and two classes that share a ring only
  // make each other's ranks larger.
  static std::uint32_t ring_for(std::uint64_t size) {
    const std::uint64_t chunk_class = glibc_chunk_bytes(size) >> 4;
    return static_cast<std::uint32_t>((chunk_class * 0x9E3779B97F4A7C15ull) >> (64 - ring_bits));
  }

  // Where the block after an allocation of `size` (below 2^48) at `address` starts in glibc's
  // heap. A request glibc serves by splitting a free block, or from the top of the heap, often
  // gets this address of an earlier allocation (version 5).
  static std::uint64_t end_of(std::uint64_t address, std::uint64_t size) {
    return address + glibc_chunk_bytes(size);
  }

  // `address` (nonzero) was freed; `ring` is that of its allocation's size.
  void freed(std::uint32_t ring_index, std::uint64_t address) {
    Ring& ring = rings_[ring_index];
    if (ring[0] == 0) touched_.push_back(ring_index);
    std::copy_backward(ring.begin(), ring.end() - 1, ring.end());
    ring[0] = address;
  }

  // Encoder: the rank of `address` in `ring`, removed from it; -1 when it is not there
  // (address 0 never is).
  int take(std::uint32_t ring_index, std::uint64_t address) {
    if (address == 0) return -1;
    Ring& ring = rings_[ring_index];
    for (unsigned k = 0; k < depth; ++k)
      if (ring[k] == address) {
        remove(ring, k);
        return static_cast<int>(k);
      }
    return -1;
  }

  // Decoder: the address at `rank` in `ring`, removed from it; 0 when that slot is empty (a
  // corrupt chunk).
  std::uint64_t take_rank(std::uint32_t ring_index, unsigned rank) {
    Ring& ring = rings_[ring_index];
    const std::uint64_t address = ring[rank];
    if (address != 0) remove(ring, rank);
    return address;
  }

 private:
  using Ring = std::array<std::uint64_t, depth>;

  static void remove(Ring& ring, unsigned k) {
    std::copy(ring.begin() + k + 1, ring.end(), ring.begin() + k);
    ring[depth - 1] = 0;
  }

  std::vector<Ring> rings_;
  std::vector<std::uint32_t> touched_;
};

// Version 5 adds a second chance for an allocation its ring missed: the addresses freed in the
// chunk, whatever their size. glibc serves a request its bins miss from a block of another size
// by best fit, and PyTorch's pools hand out blocks deeper in a size's free list than 8: such an
// allocation costs how many frees ago its block was freed, about half the bytes of an address
// delta. (A rank among the blocks still free would be a little smaller, but would cost both
// sides an order-statistics tree.) This is the decoder's side, an array; the encoder finds a
// block's free through its map of the chunk's addresses (alt_codec.cpp).
class RecentFrees {
 public:
  static constexpr std::uint32_t no_ring = ~std::uint32_t{0};
  struct Freed {
    std::uint64_t address;
    std::uint32_t ring;  // that of its allocation's size, or no_ring: not known
  };

  // Forgets the chunk before; keeps the memory.
  void clear() { freed_.clear(); }

  // `address` (nonzero) was freed; `ring` is that of its allocation's size (no_ring when the
  // allocation is in an earlier chunk).
  void freed(std::uint64_t address, std::uint32_t ring) { freed_.push_back({address, ring}); }

  std::size_t frees() const { return freed_.size(); }

  // The block freed `frees_after` frees before the latest (below frees()).
  const Freed& before_latest(std::size_t frees_after) const {
    return freed_[freed_.size() - 1 - frees_after];
  }

 private:
  std::vector<Freed> freed_;  // in the order freed
};

}  // namespace alloclab::detail
