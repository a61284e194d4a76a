// `pytorch`: see include/alloclab/strategies/pytorch.hpp and docs/strategies.md.
// Each function below names the DeviceCachingAllocator function it models.
#include "alloclab/strategies/pytorch.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <charconv>
#include <cstddef>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "alloclab/format/address_map.hpp"

namespace alloclab {

namespace pytorch {

std::uint64_t roundup_power2_next_division(std::uint64_t size, std::uint64_t divisions) {
  if (divisions < 2 || !std::has_single_bit(divisions)) {
    throw std::invalid_argument("roundup_power2_next_division: divisions must be 2, 4, 8, ...");
  }
  if (std::has_single_bit(size)) return size;
  const std::uint64_t power2_floor = std::bit_floor(size);
  const std::uint64_t power2_division = power2_floor >> std::countr_zero(divisions);
  if (power2_division == 0) return power2_floor << 1;
  const std::uint64_t round_size_floor = size & ~(power2_division - 1);
  return round_size_floor == size ? size : round_size_floor + power2_division;
}

std::uint64_t round_size(std::uint64_t size, std::uint64_t divisions) {
  if (size < kMinBlockSize) return kMinBlockSize;
  if (divisions > 1 && size > kMinBlockSize * divisions) {
    return roundup_power2_next_division(size, divisions);
  }
  return kMinBlockSize * ((size + kMinBlockSize - 1) / kMinBlockSize);
}

std::uint64_t allocation_size(std::uint64_t rounded) {
  if (rounded <= kSmallSize) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return kLargeBuffer;
  return kRoundLarge * ((rounded + kRoundLarge - 1) / kRoundLarge);
}

std::size_t roundup_interval(std::uint64_t size) {
  if (size == 0) return 0;
  const unsigned log2 = static_cast<unsigned>(std::bit_width(size)) - 1;
  if (log2 <= kRoundupFirstLog2) return 0;
  return std::min<std::size_t>(log2 - kRoundupFirstLog2, kRoundupIntervals - 1);
}

std::vector<std::uint64_t> division_list(const std::vector<DivisionListItem>& items,
                                         std::vector<std::uint64_t> list) {
  if (items.empty()) throw SpecError("roundup_power2_divisions: the list is empty");
  if (list.size() != kRoundupIntervals) list.assign(kRoundupIntervals, 0);
  std::size_t last_index = 0;
  bool first_bound = true;
  for (const DivisionListItem& item : items) {
    const std::string shown = (item.bound ? std::to_string(*item.bound) : std::string(">")) + ":" +
                              std::to_string(item.divisions);
    if (item.divisions != 0 &&
        (!std::has_single_bit(item.divisions) || item.divisions > kMaxDivisions)) {
      throw SpecError("roundup_power2_divisions: item '" + shown +
                      "': divisions must be 0 (off) or a power of two up to 2^30");
    }
    if (!item.bound) {
      // As PyTorch: from the previous bound's interval (included) to the end.
      std::fill(list.begin() + static_cast<std::ptrdiff_t>(last_index), list.end(), item.divisions);
      continue;
    }
    if (!std::has_single_bit(*item.bound)) {
      throw SpecError("roundup_power2_divisions: item '" + shown +
                      "': the bound must be a power of two (a size in MiB)");
    }
    const std::size_t index = std::min<std::size_t>(
        static_cast<std::size_t>(std::countr_zero(*item.bound)), kRoundupIntervals - 1);
    if (first_bound) {
      std::fill(list.begin(), list.begin() + static_cast<std::ptrdiff_t>(index), item.divisions);
      first_bound = false;
    }
    list[index] = item.divisions;
    last_index = index;
  }
  return list;
}

}  // namespace pytorch

std::uint64_t PyTorchOptions::allowed_memory() const {
  if (!per_process_memory_fraction) return pytorch::kUnlimited;
  return per_process_memory_fraction->max_capacity(device_memory);
}

std::uint64_t PyTorchOptions::divisions_for(std::uint64_t size) const {
  if (roundup_power2_division_list.empty()) return roundup_power2_divisions;
  return roundup_power2_division_list[pytorch::roundup_interval(size)];
}

namespace {

// What is wrong with a value, or nullptr if it is accepted.
const char* max_split_size_problem(std::uint64_t m) {
  // PyTorch takes max_split_size_mb, a whole number of MiB >= 20. Both limits matter: they keep
  // every cached block of size >= max_split_size a whole segment (see docs/strategies.md).
  if (m == pytorch::kUnlimited || (m >= pytorch::kLargeBuffer && m % pytorch::kMiB == 0)) {
    return nullptr;
  }
  return "expected a whole number of MiB, at least 20MiB (PyTorch's max_split_size_mb >= 20)";
}

const char* max_non_split_rounding_problem(std::uint64_t m) {
  if (m >= pytorch::kLargeBuffer && m % pytorch::kMiB == 0) return nullptr;
  return "expected a whole number of MiB, at least 20MiB (PyTorch's max_non_split_rounding_mb "
         ">= 20)";
}

const char* fraction_problem(const Ratio& f) {
  if (f.num <= f.den) return nullptr;
  return "expected a fraction from 0 to 1 (PyTorch's set_per_process_memory_fraction)";
}

const char* gc_threshold_problem(const Ratio& t) {
  if (t.num > 0 && t.num < t.den) return nullptr;
  return "expected a fraction strictly between 0 and 1 (PyTorch refuses others)";
}

const char* divisions_problem(std::uint64_t d) {
  if (d == 0 || (std::has_single_bit(d) && d <= pytorch::kMaxDivisions)) return nullptr;
  return "expected 0 (off) or a power of two up to 2^30";
}

SpecError value_error(const std::string& strategy, std::string_view key, std::string_view value,
                      const char* problem) {
  return SpecError(strategy + ": bad value '" + std::string(value) + "' for '" + std::string(key) +
                   "': " + problem);
}

std::string ratio_text(const Ratio& r) {
  return std::to_string(r.num) + "/" + std::to_string(r.den);
}

// The settings that only mean something together (see PyTorchOptions).
void check_memory_options(const PyTorchOptions& o, const std::string& strategy) {
  if (o.per_process_memory_fraction) {
    if (const char* p = fraction_problem(*o.per_process_memory_fraction)) {
      throw value_error(strategy, "per_process_memory_fraction",
                        ratio_text(*o.per_process_memory_fraction), p);
    }
    if (o.device_memory == 0) {
      throw SpecError(strategy +
                      ": 'per_process_memory_fraction' needs 'device_memory' (the device's "
                      "memory, e.g. device_memory=80GiB)");
    }
  } else if (o.device_memory != 0) {
    throw SpecError(strategy + ": 'device_memory' is only used with 'per_process_memory_fraction'");
  }
  if (o.garbage_collection_threshold) {
    if (const char* p = gc_threshold_problem(*o.garbage_collection_threshold)) {
      throw value_error(strategy, "garbage_collection_threshold",
                        ratio_text(*o.garbage_collection_threshold), p);
    }
    if (!o.per_process_memory_fraction) {
      throw SpecError(strategy +
                      ": 'garbage_collection_threshold' needs 'per_process_memory_fraction' "
                      "(PyTorch collects only once a memory fraction is set)");
    }
  }
}

}  // namespace

void validate_pytorch_options(const PyTorchOptions& options, const std::string& strategy) {
  if (const char* p = max_split_size_problem(options.max_split_size)) {
    throw value_error(strategy, "max_split_size", std::to_string(options.max_split_size), p);
  }
  if (const char* p = divisions_problem(options.roundup_power2_divisions)) {
    throw value_error(strategy, "roundup_power2_divisions",
                      std::to_string(options.roundup_power2_divisions), p);
  }
  const auto& list = options.roundup_power2_division_list;
  if (!list.empty() && list.size() != pytorch::kRoundupIntervals) {
    throw SpecError(strategy + ": roundup_power2_division_list must have 16 entries");
  }
  for (std::uint64_t d : list) {
    if (const char* p = divisions_problem(d)) {
      throw value_error(strategy, "roundup_power2_divisions", std::to_string(d), p);
    }
  }
  if (const char* p = max_non_split_rounding_problem(options.max_non_split_rounding)) {
    throw value_error(strategy, "max_non_split_rounding",
                      std::to_string(options.max_non_split_rounding), p);
  }
  check_memory_options(options, strategy);
}

namespace {

struct Node;

// An entry of a pool: BlockComparatorSize's key (stream, size, address), kept inside the tree
// so a search never has to follow a pointer to compare. The fields are mutable so that
// Impl::rekey can rewrite a key in place when the new key keeps the entry's place in the order
// (which is what std::set requires); nothing else writes them while the entry is in a pool.
struct PoolEntry {
  mutable std::uint64_t stream;
  mutable std::uint64_t size;
  mutable std::uint64_t address;
  mutable Node* node;
};
struct ByStreamSizeAddress {
  bool operator()(const PoolEntry& a, const PoolEntry& b) const {
    if (a.stream != b.stream) return a.stream < b.stream;
    if (a.size != b.size) return a.size < b.size;
    return a.address < b.address;
  }
};
using Pool = std::set<PoolEntry, ByStreamSizeAddress>;

struct Segment;

// PyTorch's Block: a piece of a segment, either handed out (allocated) or cached in its pool.
// The pieces of one segment form a doubly linked list in address order (prev/next).
struct Node {
  std::uint64_t address = 0;
  std::uint64_t size = 0;
  std::uint64_t stream = 0;
  Node* prev = nullptr;
  Node* next = nullptr;
  Segment* segment = nullptr;
  Pool::iterator where{};  // this piece's pool entry; valid only while !allocated
  // Impl::large_searches when the piece last entered its pool (PyTorch's gc_count_base).
  std::uint64_t gc_base = 0;
  // An unmapped piece (a range of an expandable segment that no page backs) is also marked
  // allocated: like a handed-out piece it is in no pool and never merges with a cached piece,
  // so the fixed-segment paths need no test of their own for it. `mapped` tells the two apart.
  bool allocated = false;
  bool mapped = true;
};

// One block obtained from the upstream, or an expandable segment: a virtual range whose pages
// are obtained one by one. `head` is its lowest-addressed piece.
struct Segment {
  Block upstream;          // expandable: the virtual range, which the upstream never sees
  std::uint64_t size = 0;  // the size asked of the upstream (get_allocation_size); the range
  std::uint64_t stream = 0;
  bool small = false;
  Node* head = nullptr;
  bool expandable = false;
  std::uint64_t page = 0;                // expandable: kSmallBuffer or kLargeBuffer
  std::uint64_t slot = 0;                // expandable: its slot of the model's address space
  std::map<std::uint64_t, Block> pages;  // expandable: the mapped pages, by index in the range
};

// Nodes are recycled through a free list: splitting and merging happen on most operations.
class NodeArena {
 public:
  Node* make(std::uint64_t address, std::uint64_t size, std::uint64_t stream, Node* prev,
             Node* next, Segment* segment) {
    if (free_ == nullptr) grow();
    Node* n = free_;
    free_ = n->next;
    *n = Node{address, size, stream, prev, next, segment, {}, 0, false, true};
    return n;
  }
  void recycle(Node* n) {
    n->next = free_;
    free_ = n;
  }

 private:
  static constexpr std::size_t kChunk = 1024;
  void grow() {
    chunks_.push_back(std::make_unique<Node[]>(kChunk));
    Node* chunk = chunks_.back().get();
    for (std::size_t i = 0; i < kChunk; ++i) recycle(&chunk[i]);
  }
  std::vector<std::unique_ptr<Node[]>> chunks_;
  Node* free_ = nullptr;
};

}  // namespace

struct PyTorchCachingStrategy::Impl {
  Impl(Upstream& up, PyTorchOptions opts) : upstream(up), options(opts) {}

  Upstream& upstream;
  PyTorchOptions options;
  StrategyStats stats;
  NodeArena arena;
  Pool small_blocks;  // free pieces of small segments
  Pool large_blocks;  // free pieces of large segments
  // Tree nodes taken out of a pool, reused by the next insertion: most operations take one or
  // two entries out and put one in, so in a steady state no tree node is allocated or freed.
  std::vector<Pool::node_type> spare_entries;
  // Invariant: a Node is in exactly one of {its segment's pool (through `where`), active}: in
  // the pool iff !allocated.
  AddressMap<Node*> active;  // handed-out pieces by address
  std::map<std::uint64_t, Segment> segments_by_address;
  std::uint64_t reserved = 0;
  std::uint64_t allocated = 0;
  // PyTorch's DeviceStats::num_alloc_retries: segment allocations made after release_cached_blocks
  // (alloc_block with isRetry, counted before the attempt, whatever its outcome).
  std::uint64_t num_alloc_retries = 0;
  // PyTorch's DeviceStats::num_ooms: requests that failed (malloc's OutOfMemoryError).
  std::uint64_t num_ooms = 0;
  // PyTorch's large_blocks.get_free_blocks_call_count: searches of the large pool, counted only
  // when garbage collection is on. A cached piece's age is this minus its gc_base.
  std::uint64_t large_searches = 0;
  const bool gc_enabled =
      options.garbage_collection_threshold.has_value() && options.per_process_memory_fraction;
  const std::uint64_t allowed = options.allowed_memory();

  // Expandable segments. The unmapped pieces of each pool by (stream, address): PyTorch's
  // BlockPool::unmapped, searched in address order for room to grow.
  using Unmapped = std::map<std::pair<std::uint64_t, std::uint64_t>, Node*>;
  Unmapped small_unmapped, large_unmapped;
  const bool expandable = options.expandable_segments;
  const std::uint64_t small_range = range_bytes(options, pytorch::kSmallBuffer);
  const std::uint64_t large_range = range_bytes(options, pytorch::kLargeBuffer);
  // The stride of the model's address space; 0 when a range does not fit in it.
  const std::uint64_t slot_bytes =
      large_range <= (std::uint64_t{1} << 58) ? std::bit_ceil(large_range) : 0;
  const std::uint64_t slot_count =
      slot_bytes == 0 ? 0 : (std::uint64_t{0} - pytorch::kExpandableBase) / slot_bytes;
  std::set<std::uint64_t> free_slots;  // slots of released segments, reused lowest first
  std::uint64_t next_slot = 0;
  std::vector<Block> page_scratch;        // the pages of one map or unmap
  std::vector<Node*> expandable_scratch;  // release_blocks' to_unmap

  // PyTorch's ExpandableSegment: 9/8 of the device's memory, in whole pages.
  static std::uint64_t range_bytes(const PyTorchOptions& o, std::uint64_t page) {
    __extension__ typedef unsigned __int128 Wide;  // 9/8 of a 64-bit size may not fit in one
    const Wide device = o.device_memory != 0 ? o.device_memory : pytorch::kExpandableDevice;
    const Wide wanted = device + device / 8;
    const Wide bytes = (wanted + page - 1) / page * page;
    return bytes > pytorch::kUnlimited ? pytorch::kUnlimited : static_cast<std::uint64_t>(bytes);
  }

  Pool& pool_of(const Node* n) { return n->segment->small ? small_blocks : large_blocks; }
  void update_cached() { stats.cached_bytes = reserved - allocated; }
  // Writes n's key into an entry field by field. Copying a PoolEntry built on the stack made GCC
  // store it in 8-byte halves and reload it in 16-byte ones: a store-forwarding stall, which perf
  // showed as the hottest instruction of the hit path's free.
  static void set_entry(const PoolEntry& e, Node* n) {
    e.stream = n->stream;
    e.size = n->size;
    e.address = n->address;
    e.node = n;
  }
  // `pool` is pool_of(n).
  void cache(Pool& pool, Node* n) {
    n->gc_base = large_searches;
    if (spare_entries.empty()) {
      n->where = pool.insert(PoolEntry{n->stream, n->size, n->address, n}).first;
      return;
    }
    Pool::node_type spare = std::move(spare_entries.back());
    spare_entries.pop_back();
    set_entry(spare.value(), n);
    n->where = pool.insert(std::move(spare)).position;
  }
  void uncache(Pool& pool, Pool::iterator where) { spare_entries.push_back(pool.extract(where)); }

  // Makes `n`, a cached piece whose address or size changed, the owner of the pool entry
  // `where` (its own or that of a neighbour it absorbed) under its new key. Splits and merges do
  // this, and the new key usually still sorts between the entry's neighbours (always when the
  // piece is its stream's only one in the pool, as in a steady allocate/free loop): then the key
  // is rewritten in place, with no rebalancing of the tree. Otherwise the tree node moves (no
  // allocation). Either way the pool holds the same keys as erase + insert would leave, so every
  // later search gives the same answer.
  void rekey(Pool& pool, Pool::iterator where, Node* n) {
    n->gc_base = large_searches;  // the piece re-enters the pool, as in PyTorch
    const PoolEntry entry{n->stream, n->size, n->address, n};
    const ByStreamSizeAddress less;
    const bool after_prev = where == pool.begin() || less(*std::prev(where), entry);
    const bool before_next = std::next(where) == pool.end() || less(entry, *std::next(where));
    if (after_prev && before_next) {
      set_entry(*where, n);
      n->where = where;
      return;
    }
    Pool::node_type moved = pool.extract(where);
    set_entry(moved.value(), n);
    n->where = pool.insert(std::move(moved)).position;
  }

  // get_free_block: the smallest cached piece of the same pool and stream with size >= `size`,
  // subject to the two oversize rules. Only that one candidate is considered. Returns its pool
  // entry (still in the pool: the caller either splits it, which keeps the entry for the rest,
  // or uncaches it), or pool.end().
  Pool::iterator get_free_block(Pool& pool, std::uint64_t stream, std::uint64_t size) const {
    auto it = pool.lower_bound(PoolEntry{stream, size, 0, nullptr});
    if (it == pool.end() || it->stream != stream) return pool.end();
    if (expandable && it->node->segment->expandable) it = best_expandable(pool, it, stream);
    const std::uint64_t max_split = options.max_split_size;
    // Do not return an oversize block for a request below max_split_size.
    if (size < max_split && it->size >= max_split) return pool.end();
    // An oversize block may serve a large request, but only within max_non_split_rounding of
    // it (written as a difference: it->size >= size here, and the sum could overflow).
    if (size >= max_split && it->size - size >= options.max_non_split_rounding) return pool.end();
    return it;
  }

  // get_free_block's expandable branch: a piece followed by an unmapped range counts, for best
  // fit, as the size it could grow to. From the smallest piece that fits, the search steps to
  // the next piece of the stream while that one's expandable size is smaller (and stops at a
  // piece of a fixed segment).
  static Pool::iterator best_expandable(Pool& pool, Pool::iterator it, std::uint64_t stream) {
    const auto expandable_size = [](const Node* b) {
      return b->size + (b->next != nullptr && !b->next->mapped ? b->next->size : 0);
    };
    for (auto next = std::next(it);
         it->node->segment->expandable && next != pool.end() && next->stream == stream &&
         expandable_size(next->node) < expandable_size(it->node);
         ++next)
      it = next;
    return it;
  }

  // alloc_block: a new segment of `alloc_size` bytes, not in any pool yet.
  // With a memory fraction, a segment beyond the allowed bytes fails like the upstream would.
  Node* alloc_block(std::uint64_t alloc_size, std::uint64_t stream, bool small) {
    if (alloc_size > allowed || reserved > allowed - alloc_size) return nullptr;
    std::optional<Block> got = upstream.allocate(alloc_size);
    if (!got) return nullptr;
    auto [it, inserted] = segments_by_address.try_emplace(got->address);
    if (!inserted) {
      upstream.deallocate(*got);
      throw std::logic_error("pytorch: the upstream returned an address that is already in use");
    }
    Segment& seg = it->second;
    seg.upstream = *got;
    seg.size = alloc_size;
    seg.stream = stream;
    seg.small = small;
    seg.head = arena.make(got->address, alloc_size, stream, nullptr, nullptr, &seg);
    reserved += alloc_size;
    return seg.head;
  }

  // alloc_block's two branches: a fixed segment of `alloc_size` bytes, or room for the `rounded`
  // request in an expandable segment. The memory fraction is checked against `alloc_size` in
  // both, as in PyTorch, although a mapping is of whole pages covering `rounded`.
  Node* new_block(Pool& pool, std::uint64_t alloc_size, std::uint64_t rounded, std::uint64_t stream,
                  bool small) {
    if (!expandable) return alloc_block(alloc_size, stream, small);
    if (alloc_size > allowed || reserved > allowed - alloc_size) return nullptr;
    return try_allocate_expandable_block(pool, stream, small, rounded);
  }

  // release_block: a whole free segment goes back upstream.
  void release_block(Node* n, bool eviction) {
    assert(!n->allocated && n->prev == nullptr && n->next == nullptr);
    pool_of(n).erase(n->where);
    Segment* seg = n->segment;
    const Block up = seg->upstream;
    reserved -= seg->size;
    segments_by_address.erase(up.address);
    arena.recycle(n);
    upstream.deallocate(up);
    if (eviction) ++stats.evictions;
  }

  // --- Expandable segments: ExpandableSegment and the allocator functions named below ---

  Unmapped& unmapped_of(bool small) { return small ? small_unmapped : large_unmapped; }
  static std::pair<std::uint64_t, std::uint64_t> unmapped_key(const Node* n) {
    return {n->stream, n->address};
  }
  static void mark_unmapped(Node* n) {
    n->allocated = true;  // see Node::allocated
    n->mapped = false;
  }

  // A new expandable segment in the lowest free slot, all of it one unmapped piece; nullptr
  // when the model's address space has no slot left.
  Node* new_expandable_segment(std::uint64_t stream, bool small) {
    std::uint64_t slot = 0;
    if (!free_slots.empty()) {
      slot = *free_slots.begin();
      free_slots.erase(free_slots.begin());
    } else if (next_slot < slot_count) {
      slot = next_slot++;
    } else {
      return nullptr;
    }
    const std::uint64_t range = small ? small_range : large_range;
    const std::uint64_t base = pytorch::kExpandableBase + slot * slot_bytes;
    Segment& seg = segments_by_address[base];
    seg.upstream = Block{base, range};
    seg.size = range;
    seg.stream = stream;
    seg.small = small;
    seg.expandable = true;
    seg.page = small ? pytorch::kSmallBuffer : pytorch::kLargeBuffer;
    seg.slot = slot;
    seg.head = arena.make(base, range, stream, nullptr, nullptr, &seg);
    mark_unmapped(seg.head);
    unmapped_of(small).emplace(unmapped_key(seg.head), seg.head);
    return seg.head;
  }

  // find_expandable_block: the lowest address of the stream's segments of this pool where
  // `size` bytes of free and unmapped pieces follow each other (an unmapped piece, or the cached
  // piece just before one), else a new segment.
  Node* find_expandable_block(bool small, std::uint64_t stream, std::uint64_t size) {
    Unmapped& unmapped = unmapped_of(small);
    const auto usable = [](const Node* b) { return b != nullptr && (!b->allocated || !b->mapped); };
    for (auto it = unmapped.lower_bound({stream, 0});
         it != unmapped.end() && it->first.first == stream; ++it) {
      Node* c = it->second;
      if (c->prev != nullptr && !c->prev->allocated) c = c->prev;
      std::uint64_t bytes = 0;
      for (const Node* b = c; bytes < size && usable(b); b = b->next) bytes += b->size;
      if (bytes >= size) return c;
    }
    return new_expandable_segment(stream, small);
  }

  // map_block: the pages covering the first `size` bytes of the unmapped piece `to_map` are
  // asked of the upstream as one mapping (ExpandableSegment::map rounds out to whole pages);
  // the rest stays unmapped. The mapped piece merges with cached neighbours and is cached.
  bool map_block(Pool& pool, Node* to_map, std::uint64_t size) {
    Segment* seg = to_map->segment;
    const std::uint64_t page = seg->page;
    const std::uint64_t first = (to_map->address - seg->upstream.address) / page;
    const std::uint64_t count = (size + page - 1) / page;
    page_scratch.clear();
    if (!upstream.allocate_pages(page, count, page_scratch)) return false;
    for (std::uint64_t i = 0; i < count; ++i) seg->pages.emplace(first + i, page_scratch[i]);
    const std::uint64_t bytes = count * page;
    Unmapped& unmapped = unmapped_of(seg->small);
    unmapped.erase(unmapped_key(to_map));
    to_map->allocated = false;
    to_map->mapped = true;
    if (bytes < to_map->size) {
      Node* rest = arena.make(to_map->address + bytes, to_map->size - bytes, to_map->stream, to_map,
                              to_map->next, seg);
      mark_unmapped(rest);
      if (rest->next != nullptr) rest->next->prev = rest;
      to_map->next = rest;
      to_map->size = bytes;
      unmapped.emplace(unmapped_key(rest), rest);
    }
    const Pool::iterator from_prev = try_merge(pool, to_map, to_map->prev);
    if (from_prev != pool.end()) uncache(pool, from_prev);
    const Pool::iterator from_next = try_merge(pool, to_map, to_map->next);
    if (from_next != pool.end()) uncache(pool, from_next);
    cache(pool, to_map);
    reserved += bytes;
    return true;
  }

  // try_allocate_expandable_block: maps what the found place lacks of `size` (the rounded
  // request, not the segment size), piece by piece, one mapping each. Returns the piece, out of
  // its pool, or nullptr if a mapping failed (pages mapped before stay mapped and cached).
  Node* try_allocate_expandable_block(Pool& pool, std::uint64_t stream, bool small,
                                      std::uint64_t size) {
    // No segment can hold it (PyTorch would fail on the device's memory first).
    if (size > (small ? small_range : large_range)) return nullptr;
    Node* c = find_expandable_block(small, stream, size);
    if (c == nullptr) return nullptr;
    if (!c->mapped && !map_block(pool, c, std::min(c->size, size))) return nullptr;
    while (c->size < size) {
      Node* next = c->next;  // unmapped: a cached piece has no cached neighbour
      if (!map_block(pool, next, std::min(size - c->size, next->size))) return nullptr;
      c = next;  // it absorbed c
    }
    uncache(pool, c->where);
    return c;
  }

  // `dst`, unmapped, absorbs `src` if that is unmapped too (try_merge_blocks merges only pieces
  // alike in `mapped`).
  void absorb_unmapped(Unmapped& unmapped, Node* dst, Node* src) {
    if (src == nullptr || src->mapped) return;
    unmapped.erase(unmapped_key(src));
    absorb(dst, src);
  }

  // unmap_block: the whole pages inside the cached piece `n` go back upstream as one unmapping
  // (ExpandableSegment::unmap); the bytes before and after them stay cached as pieces of their
  // own. Nothing happens when no whole page lies inside.
  void unmap_block(Pool& pool, Node* n, bool eviction) {
    Segment* seg = n->segment;
    const std::uint64_t page = seg->page;
    const std::uint64_t base = seg->upstream.address;
    const std::uint64_t first = (n->address - base + page - 1) / page;
    const std::uint64_t last = (n->address + n->size - base) / page;
    if (first >= last) return;
    uncache(pool, n->where);
    const std::uint64_t begin = base + first * page;
    const std::uint64_t bytes = (last - first) * page;
    const std::uint64_t end = n->address + n->size;
    if (begin > n->address) {
      Node* before = arena.make(n->address, begin - n->address, n->stream, n->prev, n, seg);
      if (before->prev != nullptr) {
        before->prev->next = before;
      } else {
        seg->head = before;
      }
      n->prev = before;
      cache(pool, before);
    }
    if (end > begin + bytes) {
      Node* after = arena.make(begin + bytes, end - begin - bytes, n->stream, n, n->next, seg);
      if (after->next != nullptr) after->next->prev = after;
      n->next = after;
      cache(pool, after);
    }
    n->address = begin;
    n->size = bytes;
    mark_unmapped(n);
    Unmapped& unmapped = unmapped_of(seg->small);
    absorb_unmapped(unmapped, n, n->prev);
    absorb_unmapped(unmapped, n, n->next);
    unmapped.emplace(unmapped_key(n), n);
    page_scratch.clear();
    for (auto it = seg->pages.lower_bound(first); it != seg->pages.end() && it->first < last;) {
      page_scratch.push_back(it->second);
      it = seg->pages.erase(it);
    }
    upstream.deallocate_pages(page_scratch);
    reserved -= bytes;
    if (eviction) ++stats.evictions;
  }

  // release_expandable_segment: a segment that is one unmapped piece is forgotten, its slot
  // free again.
  void release_expandable_segment(Node* n) {
    Segment* seg = n->segment;
    unmapped_of(seg->small).erase(unmapped_key(n));
    free_slots.insert(seg->slot);
    arena.recycle(n);
    segments_by_address.erase(seg->upstream.address);
  }

  // release_available_cached_blocks: with max_split_size set, free the smallest oversize segment
  // of the request's pool and stream that is >= max(size, max_split_size); if there is none,
  // free oversize segments from the largest down until that many bytes are freed. Returns
  // whether enough was freed (blocks freed on a false return stay freed, as in PyTorch).
  bool release_available_cached_blocks(Pool& pool, std::uint64_t stream, std::uint64_t size) {
    const std::uint64_t max_split = options.max_split_size;
    if (max_split == pytorch::kUnlimited) return false;
    const std::uint64_t key_size = std::max(size, max_split);
    auto it = pool.lower_bound(PoolEntry{stream, key_size, 0, nullptr});
    if (it == pool.end() || it->stream != stream || it->node->segment->expandable) {
      if (it == pool.begin()) return false;
      std::uint64_t total_released = 0;
      --it;  // the largest block of this stream, if the previous one is on this stream
      while (total_released < key_size && it->size >= max_split && it->stream == stream) {
        Node* cur = it->node;
        const bool first = it == pool.begin();
        if (!first) --it;
        // A piece of an expandable segment is never a whole segment: it is passed over.
        if (!cur->segment->expandable) {
          total_released += cur->size;
          release_block(cur, true);
        }
        if (first) break;
      }
      return total_released >= key_size;
    }
    release_block(it->node, true);
    return true;
  }

  // release_cached_blocks / release_blocks: every whole free segment (no prev, no next) of the
  // large pool, then of the small pool, all streams, goes back upstream. In each pool, once its
  // fixed segments are released, every cached piece of an expandable segment, in pool order,
  // unmaps its whole pages, and a segment left with no page mapped is released.
  void release_cached_blocks(bool eviction) {
    for (Pool* pool : {&large_blocks, &small_blocks}) {
      expandable_scratch.clear();
      for (auto it = pool->begin(); it != pool->end();) {
        Node* n = it->node;
        ++it;
        if (n->segment->expandable) {
          expandable_scratch.push_back(n);  // unmapping changes the pool: afterwards
        } else if (n->prev == nullptr && n->next == nullptr) {
          release_block(n, eviction);
        }
      }
      for (Node* n : expandable_scratch) {
        unmap_block(*pool, n, eviction);
        if (!n->mapped && n->prev == nullptr && n->next == nullptr) release_expandable_segment(n);
      }
    }
  }

  // garbage_collect_cached_blocks: when reserved > floor(threshold * allowed), free whole
  // segments of the large pool (all streams) whose age is at least the average age of those
  // segments, pass after pass (the average taken afresh at the start of each), until the excess
  // is reclaimed or a pass frees nothing. A pass does not stop at the target, as in PyTorch.
  void garbage_collect_cached_blocks() {
    const std::uint64_t threshold = options.garbage_collection_threshold->max_capacity(allowed);
    if (reserved <= threshold) return;
    const std::uint64_t target = reserved - threshold;
    auto whole = [](const Node* n) {
      return n->prev == nullptr && n->next == nullptr && !n->segment->expandable;
    };
    __extension__ typedef unsigned __int128 AgeSum;
    AgeSum total_age = 0;
    std::uint64_t freeable = 0;
    for (const PoolEntry& e : large_blocks) {
      if (!whole(e.node)) continue;
      total_age += large_searches - e.node->gc_base;
      ++freeable;
    }
    std::uint64_t reclaimed = 0;
    bool freed = true;
    while (reclaimed < target && freed && freeable > 0) {
      // age >= total_age / freeable, compared exactly.
      const AgeSum pass_total = total_age;
      const std::uint64_t pass_count = freeable;
      freed = false;
      for (auto it = large_blocks.begin(); it != large_blocks.end();) {
        Node* n = it->node;
        ++it;
        const std::uint64_t age = large_searches - n->gc_base;
        if (!whole(n) || AgeSum{age} * pass_count < pass_total) continue;
        freed = true;
        reclaimed += n->size;
        total_age -= age;
        --freeable;
        release_block(n, true);
      }
    }
  }

  // The largest cached piece of `pool`, any stream, 0 if none: the last piece of each stream,
  // found by jumping from stream to stream (O(streams · log pieces)).
  static std::uint64_t largest_cached(const Pool& pool) {
    std::uint64_t largest = 0;
    for (auto it = pool.begin(); it != pool.end();) {
      const auto next_stream = pool.upper_bound(
          PoolEntry{it->stream, pytorch::kUnlimited, pytorch::kUnlimited, nullptr});
      largest = std::max(largest, std::prev(next_stream)->size);
      it = next_stream;
    }
    return largest;
  }

  // should_split: small pool, or any pool with expandable segments on, when the rest is
  // >= kMinBlockSize; large pool when the request is below max_split_size and the rest is
  // > kSmallSize.
  bool should_split(const Node* n, std::uint64_t size) const {
    const std::uint64_t remaining = n->size - size;
    if (n->segment->small || expandable) return remaining >= pytorch::kMinBlockSize;
    return size < options.max_split_size && remaining > pytorch::kSmallSize;
  }

  // alloc_found_block's split: the front `size` bytes become a new piece that is handed out;
  // the rest stays in place (same segment, same stream) as `n`, shrunk. The caller caches it.
  Node* split(Node* n, std::uint64_t size) {
    Node* front = arena.make(n->address, size, n->stream, n->prev, n, n->segment);
    if (front->prev != nullptr) {
      front->prev->next = front;
    } else {
      n->segment->head = front;
    }
    n->prev = front;
    n->address += size;
    n->size -= size;
    return front;
  }

  // try_merge_blocks: absorb the neighbour `src` into `dst` (not in any pool) if it is free.
  // Returns src's pool entry, now stale (to be rekeyed or uncached by the caller), or
  // pool.end() if src is not free.
  Pool::iterator try_merge(Pool& pool, Node* dst, Node* src) {
    if (src == nullptr || src->allocated) return pool.end();
    const Pool::iterator where = src->where;
    absorb(dst, src);
    return where;
  }

  // `dst` takes over its neighbour `src`'s range, and src is recycled.
  void absorb(Node* dst, Node* src) {
    if (dst->prev == src) {  // [src dst]
      dst->address = src->address;
      dst->prev = src->prev;
      if (dst->prev != nullptr) {
        dst->prev->next = dst;
      } else {
        dst->segment->head = dst;
      }
    } else {  // [dst src]
      dst->next = src->next;
      if (dst->next != nullptr) dst->next->prev = dst;
    }
    dst->size += src->size;
    arena.recycle(src);
  }

  std::optional<Block> allocate(std::uint64_t size, std::uint64_t stream) {
    ++stats.requests;
    if (size > pytorch::kMaxRequest) {
      ++stats.failed;
      ++num_ooms;
      return std::nullopt;
    }
    const std::uint64_t rounded = pytorch::round_size(size, options.divisions_for(size));
    const bool small = rounded <= pytorch::kSmallSize;
    Pool& pool = small ? small_blocks : large_blocks;
    if (gc_enabled && !small) ++large_searches;

    Node* n = nullptr;
    const Pool::iterator found = get_free_block(pool, stream, rounded);
    const bool hit = found != pool.end();
    if (hit) {
      n = found->node;
      if (should_split(n, rounded)) {
        // The rest keeps the found piece's pool entry: one rekey instead of erase + insert.
        Node* rest = n;
        n = split(rest, rounded);
        rekey(pool, found, rest);
      } else {
        uncache(pool, found);
      }
    } else {
      const std::uint64_t alloc_size = pytorch::allocation_size(rounded);
      if (gc_enabled) garbage_collect_cached_blocks();
      n = new_block(pool, alloc_size, rounded, stream, small);
      if (n == nullptr && release_available_cached_blocks(pool, stream, rounded)) {
        n = new_block(pool, alloc_size, rounded, stream, small);
      }
      if (n == nullptr) {
        release_cached_blocks(true);  // always retried after, as in PyTorch
        ++num_alloc_retries;
        n = new_block(pool, alloc_size, rounded, stream, small);
      }
      if (n == nullptr) {
        ++stats.failed;
        ++num_ooms;
        update_cached();
        return std::nullopt;
      }
      if (should_split(n, rounded)) {
        Node* rest = n;
        n = split(rest, rounded);
        cache(pool, rest);
      }
    }
    n->allocated = true;
    allocated += n->size;
    active.insert_or_assign(n->address, n);
    if (hit) {
      ++stats.hits;
      stats.slack_bytes += n->size - rounded;
    }
    update_cached();
    return Block{n->address, n->size};
  }

  // The size of a recorded piece whose size the recording does not give, with `space` bytes up
  // to the next piece: split off as allocate() would split it, or the whole space.
  std::uint64_t inferred_capacity(bool small, std::uint64_t requested, std::uint64_t space) const {
    if (requested > pytorch::kMaxRequest) return space;
    const std::uint64_t rounded = pytorch::round_size(requested, options.divisions_for(requested));
    if (rounded >= space) return space;
    const std::uint64_t remaining = space - rounded;
    const bool split = small || expandable
                           ? remaining >= pytorch::kMinBlockSize
                           : rounded < options.max_split_size && remaining > pytorch::kSmallSize;
    return split ? rounded : space;
  }

  // One recorded segment, laid out piece by piece; nullptr if it cannot be held.
  bool adopt_segment(const HeldSegment& held, std::vector<Block>& blocks) {
    std::uint64_t size = held.size;
    bool small = held.small_pool.value_or(size <= pytorch::kSmallBuffer);
    if (size == 0) {  // a piece whose segment the recording does not give: sized as allocate()
      const HeldPiece& piece = held.pieces.at(0);
      const std::uint64_t rounded = piece.capacity.value_or(pytorch::round_size(
          std::min(piece.requested, pytorch::kMaxRequest), options.divisions_for(piece.requested)));
      small = held.small_pool.value_or(rounded <= pytorch::kSmallSize);
      size = pytorch::allocation_size(rounded);
    }
    Node* whole = alloc_block(size, held.stream, small);
    if (whole == nullptr) return false;
    Segment* seg = whole->segment;
    const std::uint64_t base = seg->upstream.address;
    arena.recycle(whole);
    seg->head = nullptr;
    Pool& pool = small ? small_blocks : large_blocks;
    Node* last = nullptr;
    const auto append = [&](std::uint64_t offset, std::uint64_t bytes, bool handed_out) {
      Node* n = arena.make(base + offset, bytes, held.stream, last, nullptr, seg);
      if (last != nullptr) {
        last->next = n;
      } else {
        seg->head = n;
      }
      last = n;
      if (handed_out) {
        n->allocated = true;
        allocated += bytes;
        active.insert_or_assign(n->address, n);
        blocks.push_back(Block{n->address, bytes});
      }
    };
    std::uint64_t cursor = 0;
    for (std::size_t k = 0; k < held.pieces.size(); ++k) {
      const HeldPiece& piece = held.pieces[k];
      const std::uint64_t offset = std::clamp(piece.offset, cursor, size);
      const std::uint64_t end =
          k + 1 < held.pieces.size() ? std::clamp(held.pieces[k + 1].offset, offset, size) : size;
      if (offset > cursor) append(cursor, offset - cursor, false);
      const std::uint64_t space = end - offset;
      const std::uint64_t bytes = std::min(
          space, piece.capacity.value_or(inferred_capacity(small, piece.requested, space)));
      append(offset, bytes, true);
      cursor = offset + bytes;
    }
    if (cursor < size || last == nullptr) append(cursor, size - cursor, false);
    // Free pieces go into the pool once the list is whole (a cached piece never has a free
    // neighbour).
    for (Node* n = seg->head; n != nullptr; n = n->next)
      if (!n->allocated) cache(pool, n);
    return true;
  }

  std::optional<std::vector<Block>> adopt(const std::vector<HeldSegment>& segments) {
    std::vector<Block> blocks;
    for (const HeldSegment& held : segments)
      if (!adopt_segment(held, blocks)) {
        update_cached();
        return std::nullopt;
      }
    update_cached();
    return blocks;
  }

  // free / free_block: merge with free neighbours of the same segment, then cache. The merged
  // piece takes over a free neighbour's pool entry when there is one (one rekey instead of
  // erase + insert); with two free neighbours the second entry is dropped.
  void deallocate(const Block& block) {
    // One probe: taken out, and put back if the block is not the piece handed out there.
    const std::optional<Node*> taken = active.take(block.address);
    if (!taken || (*taken)->size != block.capacity) {
      if (taken) active.insert_or_assign(block.address, *taken);
      throw std::invalid_argument("pytorch: deallocate of a block it did not hand out (address " +
                                  std::to_string(block.address) + ", capacity " +
                                  std::to_string(block.capacity) + ")");
    }
    Node* const n = *taken;
    n->allocated = false;
    allocated -= n->size;
    Pool& pool = pool_of(n);
    const Pool::iterator from_prev = try_merge(pool, n, n->prev);
    const Pool::iterator from_next = try_merge(pool, n, n->next);
    if (from_prev != pool.end()) {
      if (from_next != pool.end()) uncache(pool, from_next);
      rekey(pool, from_prev, n);
    } else if (from_next != pool.end()) {
      rekey(pool, from_next, n);
    } else {
      cache(pool, n);
    }
    update_cached();
  }
};

PyTorchCachingStrategy::PyTorchCachingStrategy(Upstream& upstream, PyTorchOptions options) {
  validate_pytorch_options(options);
  impl_ = std::make_unique<Impl>(upstream, options);
}

PyTorchCachingStrategy::~PyTorchCachingStrategy() = default;

std::optional<Block> PyTorchCachingStrategy::allocate(std::uint64_t size, std::uint64_t stream) {
  return impl_->allocate(size, stream);
}

void PyTorchCachingStrategy::deallocate(const Block& block) {
  impl_->deallocate(block);
}

void PyTorchCachingStrategy::release() {
  impl_->release_cached_blocks(false);
  impl_->update_cached();
}

const StrategyStats& PyTorchCachingStrategy::stats() const {
  return impl_->stats;
}
FailureState PyTorchCachingStrategy::failure_state(std::uint64_t size) const {
  const Impl& impl = *impl_;
  FailureState state;
  state.largest_cached_block =
      std::max(Impl::largest_cached(impl.large_blocks), Impl::largest_cached(impl.small_blocks));
  if (size <= pytorch::kMaxRequest)
    state.upstream_request =
        pytorch::allocation_size(pytorch::round_size(size, impl.options.divisions_for(size)));
  if (impl.options.per_process_memory_fraction) state.allowed_bytes = impl.allowed;
  return state;
}

std::optional<std::vector<Block>> PyTorchCachingStrategy::adopt(
    const std::vector<HeldSegment>& segments) {
  return impl_->adopt(segments);
}

bool PyTorchCachingStrategy::hands_out_upstream_memory() const {
  return !impl_->options.expandable_segments;
}

StrategyCounters PyTorchCachingStrategy::counters() const {
  return {{"num_alloc_retries", impl_->num_alloc_retries}, {"num_ooms", impl_->num_ooms}};
}
const PyTorchOptions& PyTorchCachingStrategy::options() const {
  return impl_->options;
}
std::uint64_t PyTorchCachingStrategy::reserved_bytes() const {
  return impl_->reserved;
}
std::uint64_t PyTorchCachingStrategy::allocated_bytes() const {
  return impl_->allocated;
}
std::size_t PyTorchCachingStrategy::segment_count() const {
  return impl_->segments_by_address.size();
}

std::vector<PyTorchSegmentInfo> PyTorchCachingStrategy::segments() const {
  std::vector<PyTorchSegmentInfo> out;
  out.reserve(impl_->segments_by_address.size());
  for (const auto& [address, seg] : impl_->segments_by_address) {
    PyTorchSegmentInfo info{address, seg.size, seg.stream, seg.small, seg.expandable, {}};
    for (const Node* n = seg.head; n != nullptr; n = n->next) {
      info.blocks.push_back({n->address, n->size, n->allocated && n->mapped, n->mapped});
    }
    out.push_back(std::move(info));
  }
  return out;
}

namespace {

// `256:1/512:2/>:8`: PyTorch's `[256:1,512:2,>:8]` with '/' between items, since ',' separates
// the parameters of a spec.
std::vector<std::uint64_t> parse_division_list(const std::string& strategy, std::string_view text) {
  std::vector<pytorch::DivisionListItem> items;
  std::size_t begin = 0;
  while (true) {
    const std::size_t slash = text.find('/', begin);
    const std::string_view item = trim_spaces(text.substr(begin, slash - begin));
    const std::size_t colon = item.find(':');
    auto bad = [&](const char* why) {
      return SpecError(strategy + ": bad item " + single_quoted(item) +
                       " in 'roundup_power2_divisions': " + why);
    };
    if (colon == std::string_view::npos) {
      throw bad("expected BOUND:DIVISIONS or >:DIVISIONS");
    }
    auto number = [&](std::string_view t, std::uint64_t& out) {
      t = trim_spaces(t);
      const auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
      return !t.empty() && ec == std::errc() && ptr == t.data() + t.size();
    };
    pytorch::DivisionListItem parsed;
    const std::string_view bound = trim_spaces(item.substr(0, colon));
    if (bound != ">") {
      std::uint64_t b = 0;
      if (!number(bound, b)) throw bad("the bound must be a whole number of MiB or '>'");
      parsed.bound = b;
    }
    if (!number(item.substr(colon + 1), parsed.divisions)) {
      throw bad("the divisions must be a whole number");
    }
    items.push_back(parsed);
    if (slash == std::string_view::npos) break;
    begin = slash + 1;
  }
  try {
    return pytorch::division_list(items);
  } catch (const SpecError& e) {
    throw SpecError(strategy + ": " + e.what());
  }
}

}  // namespace

std::vector<std::string> pytorch_spec_keys() {
  return {"max_split_size",         "roundup_power2_divisions",
          "max_non_split_rounding", "per_process_memory_fraction",
          "device_memory",          "garbage_collection_threshold",
          "expandable_segments"};
}

std::unique_ptr<Strategy> make_pytorch_strategy(const StrategyParams& params, Upstream& upstream) {
  params.check_keys(pytorch_spec_keys());
  PyTorchOptions options;
  options.max_split_size = params.size("max_split_size", pytorch::kUnlimited);
  const std::optional<std::string> divisions = params.text("roundup_power2_divisions");
  if (divisions && divisions->find(':') != std::string::npos) {
    options.roundup_power2_division_list = parse_division_list(params.strategy(), *divisions);
  } else {
    options.roundup_power2_divisions = params.count("roundup_power2_divisions", 0);
  }
  options.max_non_split_rounding = params.size("max_non_split_rounding", pytorch::kLargeBuffer);
  options.per_process_memory_fraction = params.ratio("per_process_memory_fraction");
  options.device_memory = params.size("device_memory", 0);
  options.garbage_collection_threshold = params.ratio("garbage_collection_threshold");
  if (const std::optional<std::string> e = params.text("expandable_segments")) {
    if (*e != "true" && *e != "false") {
      throw value_error(params.strategy(), "expandable_segments", *e, "expected true or false");
    }
    options.expandable_segments = *e == "true";
  }
  // Report a bad value as the user wrote it, under the strategy name they used.
  if (const char* p = max_split_size_problem(options.max_split_size)) {
    throw value_error(params.strategy(), "max_split_size", *params.text("max_split_size"), p);
  }
  if (const char* p = divisions_problem(options.roundup_power2_divisions)) {
    throw value_error(params.strategy(), "roundup_power2_divisions",
                      *params.text("roundup_power2_divisions"), p);
  }
  if (const char* p = max_non_split_rounding_problem(options.max_non_split_rounding)) {
    throw value_error(params.strategy(), "max_non_split_rounding",
                      *params.text("max_non_split_rounding"), p);
  }
  if (options.per_process_memory_fraction) {
    if (const char* p = fraction_problem(*options.per_process_memory_fraction)) {
      throw value_error(params.strategy(), "per_process_memory_fraction",
                        *params.text("per_process_memory_fraction"), p);
    }
  }
  if (options.garbage_collection_threshold) {
    if (const char* p = gc_threshold_problem(*options.garbage_collection_threshold)) {
      throw value_error(params.strategy(), "garbage_collection_threshold",
                        *params.text("garbage_collection_threshold"), p);
    }
  }
  if (params.has("device_memory") && options.device_memory == 0) {
    throw value_error(params.strategy(), "device_memory", *params.text("device_memory"),
                      "expected a size above 0");
  }
  check_memory_options(options, params.strategy());
  return std::make_unique<PyTorchCachingStrategy>(upstream, options);
}

}  // namespace alloclab
