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
#include <string>
#include <string_view>
#include <utility>
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
// Expandable segments: each one is a range of virtual addresses the model invents, from
// kExpandableBase up, each in the lowest free slot (slots of the smallest power of two at least
// as large as a range). A range spans 9/8 of the device's memory (device_memory when given, else
// kExpandableDevice), as PyTorch reserves, rounded up to whole pages.
inline constexpr std::uint64_t kExpandableBase = std::uint64_t{1} << 60;
inline constexpr std::uint64_t kExpandableDevice = std::uint64_t{1} << 40;
// roundup_power2_divisions above this are rejected (PyTorch parses the value as an int).
inline constexpr std::uint64_t kMaxDivisions = std::uint64_t{1} << 30;
// The list form of roundup_power2_divisions has one entry per power-of-two interval of request
// sizes: entry k holds for sizes s with floor(log2 s) = 20 + k, clamped to [0, 15] (so entry 0
// covers every size below 2 MiB and entry 15 every size from 32 GiB up).
inline constexpr std::size_t kRoundupIntervals = 16;
inline constexpr unsigned kRoundupFirstLog2 = 20;

// CUDAAllocatorConfig::roundup_power2_divisions(size)'s index into the list.
std::size_t roundup_interval(std::uint64_t size);

// One item of the list form: `bound:divisions`, or `>:divisions` (no bound) for "the rest".
struct DivisionListItem {
  std::optional<std::uint64_t> bound;  // a power of two; nullopt for '>'
  std::uint64_t divisions = 0;
};
// CUDAAllocatorConfig::parseRoundUpPower2Divisions for the list form, item by item: the first
// bound b also fills every interval below log2(b); each item sets interval log2(b) (clamped);
// '>' fills from the interval of the previous bound (included) to the end. Throws SpecError
// naming the item unless bounds are powers of two and divisions 0 or a power of two <= 2^30.
// `base` is the list before these items (all zeros when empty): PyTorch applies a repeated
// key's items on top of the previous ones.
std::vector<std::uint64_t> division_list(const std::vector<DivisionListItem>& items,
                                         std::vector<std::uint64_t> base = {});

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
  // PyTorch's list form (`[256:1,512:2,>:4]`): empty, or kRoundupIntervals entries, entry k
  // being the divisions for requests in interval k (see pytorch::roundup_interval). When set it
  // replaces the single value; each entry follows the single value's rules.
  std::vector<std::uint64_t> roundup_power2_division_list;
  // An oversize block (>= max_split_size) serves a request r >= max_split_size only when it
  // exceeds r by less than this. A whole number of MiB >= kLargeBuffer (PyTorch:
  // max_non_split_rounding_mb, at least 20, default kLargeBuffer).
  std::uint64_t max_non_split_rounding = pytorch::kLargeBuffer;
  // PyTorch's torch.cuda.set_per_process_memory_fraction: when set, a segment that would take
  // reserved bytes beyond floor(fraction * device_memory) fails without asking the upstream,
  // exactly as an upstream failure does (cached blocks are freed and the call retried). A
  // fraction in [0, 1]; device_memory (bytes) is required with it and meaningless without it.
  std::optional<Ratio> per_process_memory_fraction;
  std::uint64_t device_memory = 0;
  // PyTorch's garbage_collection_threshold: a fraction in (0, 1), only with
  // per_process_memory_fraction. Before a new segment is asked for, if reserved bytes exceed
  // floor(threshold * allowed), whole free segments of the large pool that have waited longest
  // are freed (docs/strategies.md, rule 4a).
  std::optional<Ratio> garbage_collection_threshold;
  // PyTorch's expandable_segments:True: a new segment is a virtual range per stream and pool
  // whose pages (kSmallBuffer or kLargeBuffer bytes) are asked of the upstream as needed and
  // returned one by one (docs/strategies.md, `pytorch`, "Expandable segments").
  bool expandable_segments = false;

  // floor(per_process_memory_fraction * device_memory), or kUnlimited when no fraction is set.
  std::uint64_t allowed_memory() const;
  // The divisions that apply to a request of `size` bytes.
  std::uint64_t divisions_for(std::uint64_t size) const;
};

// Throws SpecError naming the option and the accepted values; messages start with `strategy`.
void validate_pytorch_options(const PyTorchOptions& options,
                              const std::string& strategy = "pytorch");

// A snapshot of one segment (for tests and reports), in address order within the segment.
struct PyTorchBlockInfo {
  std::uint64_t address = 0;
  std::uint64_t size = 0;
  bool allocated = false;
  bool mapped = true;  // false: a range of an expandable segment that no page backs
  bool operator==(const PyTorchBlockInfo&) const = default;
};
struct PyTorchSegmentInfo {
  std::uint64_t address = 0;
  std::uint64_t size = 0;
  std::uint64_t stream = 0;
  bool small = false;  // in the small pool (a kSmallBuffer segment)
  // An expandable segment: `address` and `size` are its virtual range, and `blocks` cover it,
  // mapped or not.
  bool expandable = false;
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
  // PyTorch's num_alloc_retries and num_ooms (docs/strategies.md, `pytorch`, Metrics).
  StrategyCounters counters() const override;
  // The largest cached piece of either pool, the segment size the request asked for (what
  // PyTorch's message calls "Tried to allocate"), and the memory fraction's allowed bytes.
  FailureState failure_state(std::uint64_t size) const override;
  // PyTorch's state at the start of a snapshot's history: each segment is asked of the upstream
  // (within the memory fraction) and laid out as recorded, its pieces handed out and the space
  // between them cached, one free piece per gap (PyTorch merges free neighbours). A piece of
  // unknown size takes its rounded request, or the whole gap up to the next piece when the rest
  // would be too small to split off (docs/strategies.md, `pytorch`, "Start state").
  bool adopts_segments() const override { return true; }
  // False with expandable segments: blocks then lie in the model's own virtual ranges.
  bool hands_out_upstream_memory() const override;
  std::optional<std::vector<Block>> adopt(const std::vector<HeldSegment>& segments) override;

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

// The keys of the `pytorch` spec.
std::vector<std::string> pytorch_spec_keys();
// Factory for the `pytorch` spec: `max_split_size` and `max_non_split_rounding` (sizes, units
// allowed), `roundup_power2_divisions` (a count, or the list form `256:1/512:2/>:4`),
// `per_process_memory_fraction` with `device_memory`, `garbage_collection_threshold`, and
// `expandable_segments` (true or false).
// Throws SpecError on other keys and on invalid values.
std::unique_ptr<Strategy> make_pytorch_strategy(const StrategyParams& params, Upstream& upstream);

// PYTORCH_CUDA_ALLOC_CONF, read as PyTorch reads it (AllocatorConfig::parseArgs): `key:value`
// items separated by ',', spaces ignored, roundup_power2_divisions also as `[B:N,...,>:N]`.
// Throws SpecError naming the key for a key or value PyTorch would refuse, and for keys PyTorch
// accepts whose effect the model does not have ("not modelled"), e.g. backend:cudaMallocAsync.
// garbage_collection_threshold is kept even though it needs a memory fraction, which is not part
// of PYTORCH_CUDA_ALLOC_CONF: the caller adds one and then validates.
PyTorchOptions parse_pytorch_alloc_conf(std::string_view conf);
// The `key:value` settings of a PYTORCH_CUDA_ALLOC_CONF string, in order, read with PyTorch's
// lexer (spaces dropped) but not checked: a value is its text up to the next comma outside a
// `[...]` list ("[256:1,>:4]"); an item without ':' is left out.
std::vector<std::pair<std::string, std::string>> pytorch_conf_settings(std::string_view conf);
// `pytorch-conf:"CONF"[,per_process_memory_fraction=F,device_memory=BYTES]` or
// `pytorch-conf:CONF`: whether `spec` names pytorch-conf, and its split into parameters
// `conf` (the text between the quotes, or everything after ':') and the optional others.
bool is_pytorch_conf_spec(std::string_view spec);
ParsedSpec split_pytorch_conf_spec(std::string_view spec);
// Factory for `pytorch-conf`: the options of `conf`, plus the memory fraction keys.
std::unique_ptr<Strategy> make_pytorch_conf_strategy(const StrategyParams& params,
                                                     Upstream& upstream);

}  // namespace alloclab
