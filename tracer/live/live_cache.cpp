#include "alloclab/live/live_cache.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "alloclab/strategies/registry.hpp"

namespace alloclab::live {

// Notes the address range of every block the upstream hands out, for may_own().
class LiveCache::RangeUpstream final : public Upstream {
 public:
  RangeUpstream(Upstream& inner, std::atomic<std::uint64_t>& low, std::atomic<std::uint64_t>& high)
      : inner_(inner), low_(low), high_(high) {}
  std::optional<Block> allocate(std::uint64_t bytes) override {
    std::optional<Block> block = inner_.allocate(bytes);
    if (block) {
      if (block->address < low_.load(std::memory_order_relaxed))
        low_.store(block->address, std::memory_order_release);
      const std::uint64_t end = block->address + std::max<std::uint64_t>(block->capacity, 1);
      if (end > high_.load(std::memory_order_relaxed)) high_.store(end, std::memory_order_release);
    }
    return block;
  }
  void deallocate(const Block& block) override { inner_.deallocate(block); }

 private:
  Upstream& inner_;
  std::atomic<std::uint64_t>& low_;
  std::atomic<std::uint64_t>& high_;
};

// Times each upstream call into the cache's histograms (a failed allocate too).
class LiveCache::TimedUpstream final : public Upstream {
 public:
  TimedUpstream(Upstream& inner, Clock clock, LiveHistogram& allocate, LiveHistogram& deallocate)
      : inner_(inner), clock_(clock), allocate_(allocate), deallocate_(deallocate) {}
  std::optional<Block> allocate(std::uint64_t bytes) override {
    const std::uint64_t start = clock_.ticks();
    std::optional<Block> block = inner_.allocate(bytes);
    allocate_.record(clock_.ticks() - start);
    return block;
  }
  void deallocate(const Block& block) override {
    const std::uint64_t start = clock_.ticks();
    inner_.deallocate(block);
    deallocate_.record(clock_.ticks() - start);
  }

 private:
  Upstream& inner_;
  Clock clock_;
  LiveHistogram& allocate_;
  LiveHistogram& deallocate_;
};

LiveCache::LiveCache(std::string_view spec, Upstream& upstream, Clock clock, bool implicit_run)
    : clock_(clock),
      range_(std::make_unique<RangeUpstream>(upstream, low_, high_)),
      timed_(std::make_unique<TimedUpstream>(*range_, clock, upstream_allocate_,
                                             upstream_deallocate_)),
      virtual_(*timed_),
      counting_(virtual_),
      strategy_(make_strategy(spec, counting_)),
      start_ticks_(clock.ticks()),
      start_ns_(clock.ns()) {
  if (!strategy_->hands_out_upstream_memory())
    throw std::invalid_argument(std::string(spec) +
                                " cannot run inside a program: its blocks lie in a virtual "
                                "address range it models, not in memory");
  if (implicit_run) {
    ops_ = 1;  // the replay's run_begin before a trace without markers
    begin_run_of_strategy(nullptr);
  }
}

void LiveCache::begin_run_of_strategy(const char* label) {
  runs_.open(label, run_totals(), live_bytes_, counting_.reserved_bytes());
  strategy_->begin_run();
  in_run_ = true;
}

LiveCache::~LiveCache() = default;

RunTotals LiveCache::run_totals() const {
  const StrategyStats& stats = strategy_->stats();
  const UpstreamCounters& up = counting_.counters();
  return RunTotals{stats.requests + in_place_, stats.hits + in_place_, up.allocs, up.frees,
                   stats.evictions, stats.slack_bytes + in_place_slack_,
                   // In clock ticks here; report() gives each run's in nanoseconds.
                   strategy_allocate_.total() + strategy_deallocate_.total()};
}

void LiveCache::failed(std::size_t size) {
  if (first_failure_) return;
  const std::uint64_t now = clock_.ns();
  first_failure_ = LiveFailure{
      size, now - start_ns_, live_bytes_, allocated_bytes_, counting_.reserved_bytes(), ops_, now};
}

void* LiveCache::allocate(std::size_t size, std::uint64_t stream) {
  const std::uint64_t weight = timing_weight();
  const std::uint64_t start = weight != 0 ? clock_.ticks() : 0;
  const std::optional<Block> block = strategy_->allocate(size, stream);
  if (weight != 0) strategy_allocate_.record(clock_.ticks() - start, weight);
  // A block at address 0 cannot be told from a failure by the program: it is one.
  if (!block || block->address == 0) {
    failed(size);
    after_operation();
    return nullptr;
  }
  std::uint64_t real;
  VirtualUpstream::Segment* segment = virtual_.segment_named(block->address);
  if (segment != nullptr && segment->capacity == block->capacity) {
    // A whole upstream block: it cannot be out already, as blocks handed out never overlap.
    segment->out_whole = true;
    segment->requested = size;
    real = segment->real;
  } else {
    real = virtual_.to_real(block->address);
    pieces_.insert_or_assign(real, HandedOut{block->address, block->capacity, size});
  }
  live_bytes_ += size;
  allocated_bytes_ += block->capacity;
  ++ops_;
  after_operation();
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(real));
}

bool LiveCache::deallocate_if_owned(void* p) {
  const std::uint64_t real = address_of(p);
  Block block;
  std::uint64_t requested;
  if (VirtualUpstream::Segment* segment = virtual_.segment_at(real);
      segment != nullptr && segment->out_whole) {
    // Copied out before the strategy runs: it may give the segment back upstream.
    segment->out_whole = false;
    block = Block{segment->name, segment->capacity};
    requested = segment->requested;
  } else {
    if (pieces_.empty()) return false;
    // Copied out field by field: moving the entry out whole through an optional stalls on a
    // store the copy cannot forward from.
    const HandedOut* found = pieces_.find(real);
    if (found == nullptr) return false;
    block = Block{found->name, found->capacity};
    requested = found->requested;
    pieces_.erase(real);
  }
  const std::uint64_t weight = timing_weight();
  const std::uint64_t start = weight != 0 ? clock_.ticks() : 0;
  strategy_->deallocate(block);
  if (weight != 0) strategy_deallocate_.record(clock_.ticks() - start, weight);
  live_bytes_ -= requested;
  allocated_bytes_ -= block.capacity;
  ++ops_;
  after_operation();
  return true;
}

void* LiveCache::reallocate(void* p, std::size_t size) {
  std::uint64_t* requested;
  std::uint64_t capacity;
  if (VirtualUpstream::Segment* segment = virtual_.segment_at(address_of(p));
      segment != nullptr && segment->out_whole) {
    requested = &segment->requested;
    capacity = segment->capacity;
  } else {
    HandedOut& entry = *pieces_.find(address_of(p));
    requested = &entry.requested;
    capacity = entry.capacity;
  }
  if (size <= capacity) {
    // As the replay counts an in-place realloc: its free, then a hit on the same block.
    live_bytes_ = live_bytes_ - *requested + size;
    *requested = size;
    ++in_place_;
    in_place_slack_ += capacity - size;
    ops_ += 2;
    after_operation();
    return p;
  }
  // Recorded as a realloc that moved: alloc(new), then free(old).
  const std::size_t old_requested = static_cast<std::size_t>(*requested);
  void* moved = allocate(size);
  if (moved == nullptr) return nullptr;
  std::memcpy(moved, p, old_requested);
  deallocate(p);
  return moved;
}

std::size_t LiveCache::capacity(const void* p) const {
  const VirtualUpstream::Segment* segment = virtual_.segment_at(address_of(p));
  if (segment != nullptr && segment->out_whole) return static_cast<std::size_t>(segment->capacity);
  return static_cast<std::size_t>(pieces_.find(address_of(p))->capacity);
}

void LiveCache::begin_run(const char* label) {
  // Runs do not nest: a run_begin inside a run ends that run first.
  if (in_run_) end_run();
  begin_run_of_strategy(label);
  ++run_markers_;
  ++ops_;
  after_operation();
}

void LiveCache::end_run() {
  if (!in_run_) return;  // outside any run: ignored
  strategy_->end_run();
  in_run_ = false;
  ++ops_;
  after_operation();
  runs_.close(run_totals());
}

LiveReport LiveCache::report() const {
  const StrategyStats& stats = strategy_->stats();
  const UpstreamCounters& up = counting_.counters();
  LiveReport r;
  Metrics& m = r.metrics;
  m.requests = stats.requests + in_place_;
  m.hits = stats.hits + in_place_;
  m.misses = m.requests - m.hits;
  m.failed_requests = stats.failed;
  m.upstream_allocs = up.allocs;
  m.upstream_frees = up.frees;
  m.evictions = stats.evictions;
  m.peak_live_bytes = peak_live_;
  m.peak_reserved_bytes = peak_reserved_;
  m.final_cached_bytes = stats.cached_bytes;
  m.slack_bytes = stats.slack_bytes + in_place_slack_;
  r.in_place_reallocs = in_place_;
  r.runs = run_markers_;
  r.run_metrics = runs_.listed(run_totals());
  r.runs_not_listed = runs_.not_listed();
  // What a tick is worth, over the whole run so far.
  const std::uint64_t ticks = clock_.ticks() - start_ticks_;
  const std::uint64_t ns = clock_.ns() - start_ns_;
  const double ns_per_tick =
      ticks == 0 ? 1.0 : static_cast<double>(ns) / static_cast<double>(ticks);
  for (RunMetrics& run : r.run_metrics)
    if (run.allocation_time_ns)
      run.allocation_time_ns = static_cast<std::uint64_t>(
          std::llround(static_cast<double>(*run.allocation_time_ns) * ns_per_tick));
  r.latency["strategy_allocate"] = strategy_allocate_.raw(ns_per_tick);
  r.latency["strategy_deallocate"] = strategy_deallocate_.raw(ns_per_tick);
  r.latency["upstream_allocate"] = upstream_allocate_.raw(ns_per_tick);
  r.latency["upstream_deallocate"] = upstream_deallocate_.raw(ns_per_tick);
  for (const auto& [name, value] : strategy_->counters()) r.strategy_counters[name] = value;
  r.first_failure = first_failure_;
  return r;
}

void LiveCache::release() {
  strategy_->release();
}

}  // namespace alloclab::live
