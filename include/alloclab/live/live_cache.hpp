#pragma once
// LiveCache: a strategy in front of a program's own allocator, inside the program (`alloclab
// run`). It hands out the strategy's blocks as the program's memory, keeps each one's capacity
// and requested size, and counts what docs/strategy-contract.md counts exactly as a replay of
// the same operations would, so that the live counters of a run equal the replay's of its trace.
//
// Not thread-safe: the caller serialises every call but may_own(). Its own containers allocate
// through whatever malloc the caller's thread reaches (inside the program: the real one, the
// caller makes sure of it).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "alloclab/format/address_map.hpp"
#include "alloclab/live/live_report.hpp"
#include "alloclab/live/live_runs.hpp"
#include "alloclab/live/virtual_upstream.hpp"
#include "alloclab/strategies/strategy.hpp"
#include "alloclab/strategies/upstream/counting.hpp"

namespace alloclab::live {

// A block the strategy handed out that is a piece of an upstream block, not all of it, by the
// real address the program has. (A whole upstream block handed out is recorded in its
// VirtualUpstream::Segment.)
struct HandedOut {
  std::uint64_t name = 0;  // its address to the strategy (VirtualUpstream)
  std::uint64_t capacity = 0;
  std::uint64_t requested = 0;
};

// The cache's time sources; parameters so that tests can drive time.
struct Clock {
  std::uint64_t (*ticks)();  // for durations: cheap to read, steady, any unit
  std::uint64_t (*ns)();     // CLOCK_MONOTONIC nanoseconds: what the ticks are worth
};

class LiveCache {
 public:
  // The strategy's first kTimedAll calls are all timed; after them, one in kTimedOneIn, chosen
  // at random: reading the clock twice costs about as much as a cached allocate + free. Each
  // sampled call stands for kTimedOneIn in the histograms. So a short program's latencies are
  // exact, and a long one's cost little. Upstream calls (a system allocator's, far slower) are
  // all timed.
  static constexpr std::uint64_t kTimedAll = 4096;
  static constexpr std::uint64_t kTimedOneIn = 256;

  // `upstream` (the program's real allocator, or a test's) must outlive the cache. Throws
  // SpecError for a bad spec, std::invalid_argument for a strategy whose blocks are not memory
  // (a model of virtual memory). With `implicit_run` the cache starts inside a run, as a replay
  // treats a trace without run markers; without it, outside any run until begin_run(), as a
  // replay treats a trace with markers.
  LiveCache(std::string_view spec, Upstream& upstream, Clock clock, bool implicit_run);
  ~LiveCache();

  // A block of at least `size` bytes from the strategy, or nullptr when it failed. `stream`: the
  // device stream the block is for (0 for host memory), which stream-aware strategies key on.
  void* allocate(std::size_t size, std::uint64_t stream = 0);
  // Whether `p` may be a block this cache handed out: false is certain, true needs owns().
  // Safe without the caller's lock: the range only grows, and a block reaches another thread
  // only through the program's own synchronisation, which orders the range's update before.
  bool may_own(const void* p) const {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    return a >= low_.load(std::memory_order_acquire) && a < high_.load(std::memory_order_acquire);
  }
  bool owns(const void* p) const {
    const VirtualUpstream::Segment* segment = virtual_.segment_at(address_of(p));
    if (segment != nullptr && segment->out_whole) return true;
    return !pieces_.empty() && pieces_.contains(address_of(p));
  }
  // `p` must be owned.
  void deallocate(void* p) { deallocate_if_owned(p); }
  // Deallocates `p` if it is owned (one lookup where owns() then deallocate() take two);
  // false, and nothing done, if it is not.
  bool deallocate_if_owned(void* p);
  // `p` must be owned and `size` non-zero. A block whose capacity holds `size` is kept: the
  // contract's in-place realloc, one request and one hit on that block. Otherwise a new block
  // from the strategy gets the old one's bytes and the old one goes back (the program sees the
  // realloc move it). nullptr, `p` untouched, when the strategy fails.
  void* reallocate(void* p, std::size_t size);
  // The capacity of an owned block (malloc_usable_size).
  std::size_t capacity(const void* p) const;

  // A run marker. `label`: the marker's (nullptr for none).
  void begin_run(const char* label = nullptr);
  void end_run();

  // The counters so far, and what the strategy holds now (final_cached_bytes).
  LiveReport report() const;
  // Returns everything cached upstream: the end of the program.
  void release();

 private:
  static std::uint64_t address_of(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }
  void begin_run_of_strategy(const char* label);
  // Peaks are taken after every operation, as a replay takes them, and so are a run's.
  void after_operation() {
    if (live_bytes_ > peak_live_) peak_live_ = live_bytes_;
    const std::uint64_t reserved = counting_.reserved_bytes();
    if (reserved > peak_reserved_) peak_reserved_ = reserved;
    runs_.observe(live_bytes_, reserved);
  }
  RunTotals run_totals() const;
  // How many calls this call of the strategy stands for if it is timed; 0: not timed.
  std::uint64_t timing_weight() {
    if (timed_first_ < kTimedAll) [[unlikely]] {
      ++timed_first_;
      return 1;
    }
    // xorshift64: a few instructions, and no pattern a program's own loop could fall in step with.
    sampler_ ^= sampler_ << 13;
    sampler_ ^= sampler_ >> 7;
    sampler_ ^= sampler_ << 17;
    return (sampler_ & (kTimedOneIn - 1)) == 0 ? kTimedOneIn : 0;
  }
  void failed(std::size_t size);

  class RangeUpstream;
  class TimedUpstream;

  Clock clock_;
  std::atomic<std::uint64_t> low_{~std::uint64_t{0}};
  std::atomic<std::uint64_t> high_{0};
  // strategy -> counting -> virtual (the simulated replay's addresses) -> timed -> range -> real
  std::unique_ptr<RangeUpstream> range_;
  std::unique_ptr<TimedUpstream> timed_;
  VirtualUpstream virtual_;  // in place: the hit path reads it, and counting_, every call
  CountingUpstream counting_;
  std::unique_ptr<Strategy> strategy_;  // last: destroyed first, before its upstreams
  AddressMap<HandedOut> pieces_;
  std::uint64_t sampler_ = 0x9E3779B97F4A7C15ull;
  std::uint64_t timed_first_ = 0;  // of the first kTimedAll, those timed so far
  std::uint64_t start_ticks_ = 0;
  std::uint64_t start_ns_ = 0;
  bool in_run_ = false;
  std::uint64_t live_bytes_ = 0;
  std::uint64_t allocated_bytes_ = 0;
  std::uint64_t peak_live_ = 0;
  std::uint64_t peak_reserved_ = 0;
  std::uint64_t in_place_ = 0;
  std::uint64_t in_place_slack_ = 0;
  std::uint64_t run_markers_ = 0;
  // The strategy's operations so far, as the replay of the run's trace numbers them: an alloc,
  // a free, a run_begin or run_end it replays (the placeholder run_begin of a trace without
  // markers included), an in-place realloc as its free and its alloc. A failed request is not
  // one: its trace has no event for it.
  std::uint64_t ops_ = 0;
  LiveRuns runs_;
  LiveHistogram strategy_allocate_, strategy_deallocate_, upstream_allocate_, upstream_deallocate_;
  std::optional<LiveFailure> first_failure_;
};

}  // namespace alloclab::live
