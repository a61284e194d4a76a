#pragma once
// `pytorch`: a model of PyTorch's CUDA caching allocator (DeviceCachingAllocator in
// c10/cuda/CUDACachingAllocator.cpp) in front of one Upstream. Segments are asked of the upstream
// and carved into blocks; free blocks are cached per pool (small <= 1 MiB, large) and per stream,
// found by best fit, split, and merged again with their free neighbours when freed.
// docs/strategies.md, section `pytorch`, is the contract: the exact rules, checkable by hand, and
// where the model is simpler than PyTorch. The constants below carry PyTorch's names.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "alloclab/strategies/params.hpp"
#include "alloclab/strategies/strategy.hpp"

namespace alloclab {

namespace pytorch {

inline constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
inline constexpr std::uint64_t kMinBlockSize = 512;         // every request is rounded to 512 B
inline constexpr std::uint64_t kSmallSize = 1 * kMiB;       // largest "small" request
inline constexpr std::uint64_t kSmallBuffer = 2 * kMiB;     // small requests share 2 MiB segments
inline constexpr std::uint64_t kMinLargeAlloc = 10 * kMiB;  // requests in (1, 10) MiB get 20 MiB
inline constexpr std::uint64_t kLargeBuffer = 20 * kMiB;    // ... segments, and oversize slack
inline constexpr std::uint64_t kRoundLarge = 2 * kMiB;      // larger requests: round to 2 MiB
inline constexpr std::uint64_t kUnlimited = std::numeric_limits<std::uint64_t>::max();
// Requests above this fail at once (counted in StrategyStats::failed): rounding them would
// overflow, and no upstream can serve them anyway.
inline constexpr std::uint64_t kMaxRequest = std::uint64_t{1} << 62;
// roundup_power2_divisions above this are rejected (PyTorch parses the value as an int).
inline constexpr std::uint64_t kMaxDivisions = std::uint64_t{1} << 30;

// DeviceCachingAllocator::round_size: the size a request is matched and split at.
// `divisions` 0 or 1 means no power-of-two rounding. Requires size <= kMaxRequest.
std::uint64_t round_size(std::uint64_t size, std::uint64_t divisions);
// DeviceCachingAllocator::roundup_power2_next_division. Throws std::invalid_argument unless
// divisions is a power of two >= 2.
std::uint64_t roundup_power2_next_division(std::uint64_t size, std::uint64_t divisions);
// DeviceCachingAllocator::get_allocation_size: the segment size asked of the upstream for a
// request of `rounded` bytes that no cached block serves.
std::uint64_t allocation_size(std::uint64_t rounded);

}  // namespace pytorch

struct PyTorchOptions {
  // Blocks of at least this size are "oversize": never split, and they serve only requests of at
  // least this size that they exceed by less than kLargeBuffer. kUnlimited (the default) turns
  // the rule off; otherwise a whole number of MiB >= kLargeBuffer (PyTorch: max_split_size_mb,
  // at least 20).
  std::uint64_t max_split_size = pytorch::kUnlimited;
  // 0 or 1: requests are rounded to 512 B only. Otherwise a power of two <= kMaxDivisions: a
  // request s > 512 * divisions is rounded up to the next of `divisions` equal steps between
  // the powers of two around it (PyTorch's single-value form of the option).
  std::uint64_t roundup_power2_divisions = 0;
};

// Throws SpecError naming the option and the accepted values.
void validate_pytorch_options(const PyTorchOptions& options);

// A snapshot of one segment (for tests and reports), in address order within the segment.
struct PyTorchBlockInfo {
  std::uint64_t address = 0;
  std::uint64_t size = 0;
  bool allocated = false;
  bool operator==(const PyTorchBlockInfo&) const = default;
};
struct PyTorchSegmentInfo {
  std::uint64_t address = 0;
  std::uint64_t size = 0;
  std::uint64_t stream = 0;
  bool small = false;  // in the small pool (a kSmallBuffer segment)
  std::vector<PyTorchBlockInfo> blocks;
};

class PyTorchCachingStrategy final : public Strategy {
 public:
  // Throws SpecError if the options are invalid (see validate_pytorch_options).
  PyTorchCachingStrategy(Upstream& upstream, PyTorchOptions options);
  ~PyTorchCachingStrategy() override;
  PyTorchCachingStrategy(const PyTorchCachingStrategy&) = delete;
  PyTorchCachingStrategy& operator=(const PyTorchCachingStrategy&) = delete;

  std::optional<Block> allocate(std::uint64_t size, std::uint64_t stream) override;
  // Throws std::invalid_argument for a block this strategy did not hand out (or already took
  // back), or whose capacity differs from the one handed out.
  void deallocate(const Block& block) override;
  // PyTorch's emptyCache(): every segment with no live block goes back upstream (not counted as
  // evictions). Free blocks of segments that still hold live blocks stay cached.
  void release() override;
  const StrategyStats& stats() const override;

  const PyTorchOptions& options() const;
  // Bytes of all segments held from the upstream (PyTorch's reserved_bytes).
  std::uint64_t reserved_bytes() const;
  // Bytes of the blocks handed out and not yet taken back (PyTorch's allocated_bytes).
  std::uint64_t allocated_bytes() const;
  std::size_t segment_count() const;
  // Every segment, in address order. Costs a walk over all blocks: not for hot paths.
  std::vector<PyTorchSegmentInfo> segments() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Factory for the `pytorch` spec: accepts `max_split_size` (a size, units allowed) and
// `roundup_power2_divisions` (a count). Throws SpecError on other keys and on invalid values.
std::unique_ptr<Strategy> make_pytorch_strategy(const StrategyParams& params, Upstream& upstream);

}  // namespace alloclab
