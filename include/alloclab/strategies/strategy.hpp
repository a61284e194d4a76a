#pragma once
// The two concepts every strategy is built from (RMM's "resource over an upstream" idea):
//   Upstream — the allocator under a cache: simulated, malloc, mmap, cudaMalloc, ...
//   Strategy — a caching policy in front of one Upstream.
// docs/strategy-contract.md and docs/strategies.md are the contract for what each strategy does.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace alloclab {

// Writes one byte in every 4 KiB page of [address, address + bytes) of host memory: the first use
// of fresh memory, which pays one page fault per page; memory already used pays none.
void touch_host_pages(std::uint64_t address, std::uint64_t bytes);

// A range of memory obtained from an upstream, or a piece of one handed out by a strategy.
struct Block {
  std::uint64_t address = 0;
  std::uint64_t capacity = 0;
  bool operator==(const Block&) const = default;
};

class Upstream {
 public:
  virtual ~Upstream() = default;
  // A failed allocation is a value (nullopt), never an exception or a crash.
  virtual std::optional<Block> allocate(std::uint64_t bytes) = 0;
  virtual void deallocate(const Block& block) = 0;
  // `--touch`: first use of [address, address + bytes), a range inside a block this upstream
  // handed out. Host memory by default (touch_host_pages); device upstreams override it (a
  // memset on the device, synchronised), and adaptors forward it to what they wrap.
  virtual void touch(std::uint64_t address, std::uint64_t bytes) {
    touch_host_pages(address, bytes);
  }
  // One mapping of `count` pages of `page` bytes each (PyTorch's expandable segments: one
  // physical allocation per page under one segment_map): all of them or none. Appends the pages
  // to `pages`. By default page by page through allocate(), the pages already got returned on a
  // failure; an adaptor that logs calls overrides it to log the mapping as one call.
  virtual bool allocate_pages(std::uint64_t page, std::uint64_t count, std::vector<Block>& pages) {
    const std::size_t first = pages.size();
    for (std::uint64_t i = 0; i < count; ++i) {
      std::optional<Block> got = allocate(page);
      if (got) {
        pages.push_back(*got);
        continue;
      }
      for (std::size_t k = first; k < pages.size(); ++k) deallocate(pages[k]);
      pages.resize(first);
      return false;
    }
    return true;
  }
  // Returns the pages of one unmapping, by default one deallocate() each.
  virtual void deallocate_pages(const std::vector<Block>& pages) {
    for (const Block& page : pages) deallocate(page);
  }
};

// Counters a strategy keeps because only it knows them. Upstream calls and reserved bytes are
// counted by an adaptor around the upstream (see upstream/counting.hpp), not here.
struct StrategyStats {
  std::uint64_t requests = 0;      // allocate() calls
  std::uint64_t hits = 0;          // served from a block the strategy already held
  std::uint64_t failed = 0;        // allocate() calls that returned nullopt
  std::uint64_t evictions = 0;     // cached blocks returned upstream (limit evictions, run ends)
  std::uint64_t slack_bytes = 0;   // sum over hits of capacity - request (request after rounding)
  std::uint64_t cached_bytes = 0;  // bytes held by the strategy and not handed out, right now
};

// Counters of one strategy's own model that no other strategy has (e.g. PyTorch's
// num_alloc_retries), by name; a replay sums them over devices and reports them as they are.
using StrategyCounters = std::map<std::string, std::uint64_t>;

// What a strategy can say about itself right after allocate(size) failed, for the report of the
// first failed request (the figures of PyTorch's out-of-memory message, and some it lacks).
struct FailureState {
  // The largest block the strategy holds and has not handed out; nullopt if it cannot say.
  std::optional<std::uint64_t> largest_cached_block;
  // What it asked of its upstream to serve `size` (PyTorch: the segment size); nullopt if the
  // request never reached the upstream or the strategy cannot say.
  std::optional<std::uint64_t> upstream_request;
  // A limit of its own, below the upstream's (PyTorch: per_process_memory_fraction's allowed
  // bytes); nullopt if it has none.
  std::optional<std::uint64_t> allowed_bytes;
};

// A segment a strategy holds from the start of a replay: the recorded allocator's, from before
// the trace's first event, with the pieces it had handed out then.
struct HeldPiece {
  std::uint64_t offset = 0;     // from the segment's start; pieces are in address order
  std::uint64_t requested = 0;  // what the program asked for
  // The piece's size in the segment; nullopt when the recording does not say (the strategy
  // infers it by its own rules).
  std::optional<std::uint64_t> capacity;
};
struct HeldSegment {
  // 0 when the recording knows the piece but not its segment: the strategy sizes the segment
  // as it would have for that piece (which is then its only one).
  std::uint64_t size = 0;
  std::uint64_t stream = 0;
  std::optional<bool> small_pool;  // PyTorch's pool, when the recording says
  std::vector<HeldPiece> pieces;   // non-overlapping, inside the segment
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  // Returns a block of capacity >= size, or nullopt if the upstream failed (after the strategy's
  // own recovery, e.g. releasing its cache and retrying).
  virtual std::optional<Block> allocate(std::uint64_t size, std::uint64_t stream) = 0;
  // Takes back a block that allocate() returned and that has not been deallocated since.
  virtual void deallocate(const Block& block) = 0;
  virtual void begin_run() {}
  virtual void end_run() {}
  // Returns every cached block upstream: the final clean-up, and a program's empty_cache found in
  // the trace (docs/strategy-contract.md), after which the replay goes on with the strategy. Not
  // counted as evictions.
  virtual void release() = 0;
  virtual const StrategyStats& stats() const = 0;
  // Empty unless the strategy models counters of its own (see StrategyCounters).
  virtual StrategyCounters counters() const { return {}; }
  // Asked once a request of `size` bytes has failed, so it may walk the cache. Says nothing by
  // default (a plug-in cannot be asked).
  virtual FailureState failure_state(std::uint64_t size) const {
    (void)size;
    return {};
  }
  // Whether the blocks handed out lie in memory of the upstream (what `--touch` writes to).
  // False for a strategy that hands out addresses of its own, e.g. a model of virtual memory.
  virtual bool hands_out_upstream_memory() const { return true; }
  // Whether adopt() can take over a recorded allocator's segments (a model of that allocator).
  virtual bool adopts_segments() const { return false; }
  // Takes `segments` as if it had asked its upstream for them and handed out their pieces,
  // counting nothing in stats(): the state a replay starts from. Returns the pieces' blocks, in
  // order, or nullopt if its upstream (or its own limit) cannot hold them all.
  virtual std::optional<std::vector<Block>> adopt(const std::vector<HeldSegment>& segments) {
    (void)segments;
    return std::nullopt;
  }
};

}  // namespace alloclab
