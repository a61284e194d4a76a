#include "alloclab/live/live_cache.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "alloclab/format/resolve.hpp"
#include "alloclab/format/trace.hpp"
#include "alloclab/replay/report.hpp"
#include "alloclab/replay/sim_replay.hpp"
#include "alloclab/strategies/upstream/host_malloc.hpp"
#include "alloclab/strategies/upstream/limit.hpp"
#include "alloclab/strategies/upstream/sim.hpp"
#include "tests/split_mix.hpp"

namespace alloclab::live {
namespace {

std::uint64_t g_now = 0;
std::uint64_t test_clock() {
  return g_now += 10;
}
constexpr Clock kClock{test_clock, test_clock};

Event event_of(Op op, std::uint64_t address, std::uint64_t size) {
  Event e;
  e.time_ns = g_now;
  e.op = op;
  e.address = address;
  e.size = size;
  return e;
}

// A program's big allocations run through a LiveCache, written down as the trace a recorder
// would write of them: replayed, the trace must give the live counters exactly.
struct Workload {
  LiveCache cache;
  Trace trace;
  std::vector<void*> held;

  Workload(const std::string& spec, Upstream& upstream, bool implicit_run)
      : cache(spec, upstream, kClock, implicit_run) {}

  void allocate(std::size_t size) {
    void* p = cache.allocate(size);
    ASSERT_NE(p, nullptr);
    std::memset(p, 0x5a, std::min<std::size_t>(size, 32));
    trace.push_back(event_of(Op::alloc, reinterpret_cast<std::uintptr_t>(p), size));
    held.push_back(p);
  }
  void free_at(std::size_t k) {
    void* p = held[k];
    held[k] = held.back();
    held.pop_back();
    trace.push_back(event_of(Op::free, reinterpret_cast<std::uintptr_t>(p), 0));
    cache.deallocate(p);
  }
  // A realloc that moves, recorded as the recorder orders it: alloc(new), then free(old).
  void reallocate_moved(std::size_t k, std::size_t size) {
    void* p = cache.reallocate(held[k], size);
    ASSERT_NE(p, nullptr);
    ASSERT_NE(p, held[k]);
    trace.push_back(event_of(Op::alloc, reinterpret_cast<std::uintptr_t>(p), size));
    trace.push_back(event_of(Op::free, reinterpret_cast<std::uintptr_t>(held[k]), 0));
    held[k] = p;
  }
  void run_marker(bool begin, const std::string& label = "step") {
    Event e = event_of(begin ? Op::run_begin : Op::run_end, 0, 0);
    if (begin) e.label = label;
    trace.push_back(e);
    if (begin)
      cache.begin_run(label.c_str());
    else
      cache.end_run();
  }
};

void expect_same_counters(const LiveReport& live, const Metrics& replayed,
                          const std::string& spec) {
  // Every counter of the contract, misses included, and any added to Metrics later.
  EXPECT_EQ(live.metrics, replayed)
      << spec << ": live " << metrics_json(live.metrics) << ", replayed " << metrics_json(replayed);
}

const char* const kSpecs[] = {"passthrough", "exact", "best-fit", "best-fit:max_ratio=2",
                              "fifo-shrink:max=3MiB", "fifo-shrink:max_items=5,match=best-fit",
                              "per-run-pool", "rten",
                              // Its best fit goes by address: equal only because the strategy
                              // sees the simulated upstream's addresses.
                              "pytorch", "pytorch:roundup_power2_divisions=4,max_split_size=20MiB"};

TEST(LiveCache, counts_what_a_replay_of_the_same_operations_counts_for_every_builtin) {
  for (const char* spec : kSpecs) {
    HostMallocUpstream upstream;
    Workload w(spec, upstream, true);
    test::SplitMix random{42};
    for (int step = 0; step < 20'000; ++step) {
      if (w.held.empty() || random.below(100) < 52)
        w.allocate(static_cast<std::size_t>((1 + random.below(24)) * 65536 + random.below(3) * 8));
      else
        w.free_at(static_cast<std::size_t>(random.below(w.held.size())));
    }
    while (!w.held.empty()) w.free_at(w.held.size() - 1);
    const LiveReport live = w.cache.report();
    w.cache.release();
    const ReplayOutcome replayed = replay_sim(resolve(w.trace), spec);
    if (std::string(spec) != "passthrough") {
      EXPECT_GT(live.metrics.hits, 0u) << spec;
    }
    expect_same_counters(live, replayed.result.metrics, spec);
    // Without markers: one run, the whole program, as the replay's implicit run.
    ASSERT_EQ(live.run_metrics.size(), 1u) << spec;
    EXPECT_EQ(live.run_metrics, replayed.result.runs) << spec;
  }
}

TEST(LiveCache, counts_runs_from_markers_as_a_replay_of_a_trace_with_markers) {
  for (const char* spec : {"per-run-pool", "rten", "exact"}) {
    HostMallocUpstream upstream;
    Workload w(spec, upstream, false);
    test::SplitMix random{9};
    w.allocate(1 << 20);  // before the first marker: outside any run
    w.free_at(0);
    for (int run = 0; run < 200; ++run) {
      w.run_marker(true, "step " + std::to_string(run));
      for (int k = 0; k < 20; ++k)
        w.allocate(static_cast<std::size_t>((1 + random.below(8)) << 16));
      if (run % 4 == 0) w.reallocate_moved(0, 20 << 16);  // bigger than any: it moves
      // Some blocks outlive their run: a run's peaks start from what is live at its begin.
      const std::size_t keep = run % 3 == 0 ? 4 : 0;
      while (w.held.size() > keep) w.free_at(static_cast<std::size_t>(random.below(w.held.size())));
      if (run % 50 != 7) w.run_marker(false);  // sometimes a run_begin ends the run instead
    }
    while (!w.held.empty()) w.free_at(w.held.size() - 1);  // the last run never ends
    const LiveReport live = w.cache.report();
    w.cache.release();
    const ReplayOutcome replayed = replay_sim(resolve(w.trace), spec);
    expect_same_counters(live, replayed.result.metrics, spec);
    // Each run's counters too, label included.
    ASSERT_EQ(live.run_metrics.size(), 200u) << spec;
    EXPECT_EQ(live.run_metrics, replayed.result.runs) << spec;
    EXPECT_EQ(live.run_metrics[17].label, "step 17");
    EXPECT_EQ(live.runs_not_listed, 0u);
  }
}

// A program that marks a run per step for a long time: the first LiveRuns::kMaxListed runs are
// listed, as a replay lists them, and the others only counted, so that neither the program's
// memory nor its report grows with them.
TEST(LiveCache, lists_the_first_runs_of_a_million_and_counts_the_rest) {
  SimUpstream upstream;
  LiveCache cache("per-run-pool", upstream, kClock, false);
  constexpr std::uint64_t kRuns = 1'000'000;
  for (std::uint64_t run = 0; run < kRuns; ++run) {
    const std::string label = "step " + std::to_string(run);
    cache.begin_run(label.c_str());
    void* p = cache.allocate(1 << 20);
    cache.deallocate(p);
    if (run + 1 < kRuns) cache.end_run();  // the last one is still open at the end
  }
  const LiveReport r = cache.report();
  EXPECT_EQ(r.runs, kRuns);
  ASSERT_EQ(r.run_metrics.size(), LiveRuns::kMaxListed);
  EXPECT_EQ(r.runs_not_listed, kRuns - LiveRuns::kMaxListed);
  const RunMetrics& last = r.run_metrics.back();
  EXPECT_EQ(last.label, "step " + std::to_string(LiveRuns::kMaxListed - 1));
  EXPECT_EQ(last.requests, 1u);
  EXPECT_EQ(last.evictions, 1u);  // per-run-pool: its pool goes back at the run's end
  // The report stays small: about a line per listed run.
  EXPECT_LT(to_text(r).size(), LiveRuns::kMaxListed * 80);
  EXPECT_EQ(parse_live_report(to_text(r), "report"), r);
  cache.release();
}

// A run label is kept as the recorder keeps it: its first 63 bytes, cut before a UTF-8
// character rather than inside one.
TEST(LiveCache, keeps_a_run_label_as_the_recorder_keeps_it) {
  SimUpstream upstream;
  LiveCache cache("exact", upstream, kClock, false);
  std::string label(62, 'a');
  label += "\xc3\xa9 more";  // a two-byte character at bytes 62 and 63
  cache.begin_run(label.c_str());
  cache.end_run();
  cache.begin_run(nullptr);
  cache.end_run();
  const LiveReport r = cache.report();
  ASSERT_EQ(r.run_metrics.size(), 2u);
  EXPECT_EQ(r.run_metrics[0].label, std::string(62, 'a'));
  EXPECT_EQ(r.run_metrics[1].label, "");
  cache.release();
}

TEST(LiveCache, keeps_a_block_a_realloc_fits_in_and_moves_one_it_outgrows) {
  HostMallocUpstream upstream;
  LiveCache cache("exact", upstream, kClock, true);
  auto* p = static_cast<unsigned char*>(cache.allocate(1 << 20));
  for (std::size_t i = 0; i < 4096; ++i) p[i] = static_cast<unsigned char>(i);
  EXPECT_EQ(cache.reallocate(p, 1 << 19), p);  // fits: kept, one request and one hit
  EXPECT_EQ(cache.capacity(p), std::size_t{1} << 20);
  LiveReport r = cache.report();
  EXPECT_EQ(r.metrics.requests, 2u);
  EXPECT_EQ(r.metrics.hits, 1u);
  EXPECT_EQ(r.in_place_reallocs, 1u);
  EXPECT_EQ(r.metrics.slack_bytes, std::uint64_t{1} << 19);
  EXPECT_EQ(r.metrics.peak_live_bytes, std::uint64_t{1} << 20);
  auto* q = static_cast<unsigned char*>(cache.reallocate(p, 3 << 20));  // outgrows: moved
  ASSERT_NE(q, nullptr);
  EXPECT_NE(q, p);
  for (std::size_t i = 0; i < 4096; ++i) ASSERT_EQ(q[i], static_cast<unsigned char>(i)) << i;
  EXPECT_FALSE(cache.owns(p));
  EXPECT_TRUE(cache.owns(q));
  r = cache.report();
  EXPECT_EQ(r.metrics.requests, 3u);
  EXPECT_EQ(r.metrics.upstream_allocs, 2u);
  EXPECT_EQ(r.metrics.final_cached_bytes, std::uint64_t{1} << 20);  // the old block, cached
  // Peak live after the new block is handed out and before the old one goes back.
  EXPECT_EQ(r.metrics.peak_live_bytes, (std::uint64_t{1} << 19) + (std::uint64_t{3} << 20));
  cache.deallocate(q);
  cache.release();
}

// The failure's operation index is the replay's: the index, in the replay of the trace of the
// same calls, of the operation that follows the failed request (which has no event there), and
// its time is the clock a trace's events are stamped with.
TEST(LiveCache, numbers_the_first_failure_as_the_replay_of_its_trace_numbers_operations) {
  for (const bool implicit_run : {true, false}) {
    SCOPED_TRACE(implicit_run);
    HostMallocUpstream host;
    LimitUpstream upstream(host, 64 << 20);
    Workload w("exact", upstream, implicit_run);
    test::SplitMix random{5};
    // Markers only where the cache expects them (`run --markers`), as the replay does.
    for (int run = 0; run < 7; ++run) {
      if (!implicit_run) w.run_marker(true);
      for (int k = 0; k < 9; ++k) w.allocate(static_cast<std::size_t>((1 + random.below(4)) << 16));
      void* kept = w.cache.reallocate(w.held.back(), 4096);  // in place: a free and an alloc
      ASSERT_EQ(kept, w.held.back());
      Event freed = event_of(Op::free, reinterpret_cast<std::uintptr_t>(kept), 0);
      Event again = event_of(Op::alloc, reinterpret_cast<std::uintptr_t>(kept), 4096);
      again.realloc_in_place = true;
      w.trace.push_back(freed);
      w.trace.push_back(again);
      while (w.held.size() > 2) w.free_at(0);
      if (!implicit_run && run != 3) w.run_marker(false);
    }
    const std::uint64_t before = g_now;
    EXPECT_EQ(w.cache.allocate(std::size_t{1} << 30), nullptr);  // over the limit
    const std::uint64_t after = g_now;
    const ResolvedTrace resolved = resolve(w.trace);
    w.allocate(1 << 16);  // the operation that follows it
    const LiveReport r = w.cache.report();
    ASSERT_TRUE(r.first_failure);
    EXPECT_EQ(r.first_failure->op_index, resolved.ops.size());
    EXPECT_GT(r.first_failure->op_index, 100u);
    EXPECT_GT(r.first_failure->time_ns, before);
    EXPECT_LE(r.first_failure->time_ns, after);
    while (!w.held.empty()) w.free_at(0);
    w.cache.release();
  }
}

TEST(LiveCache, says_no_to_the_program_and_describes_the_first_failure) {
  HostMallocUpstream host;
  LimitUpstream upstream(host, 4 << 20);
  LiveCache cache("exact", upstream, kClock, true);
  void* a = cache.allocate(3 << 20);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(cache.allocate(2 << 20), nullptr);
  EXPECT_EQ(cache.reallocate(a, 5 << 20), nullptr);  // the block stays the program's
  EXPECT_TRUE(cache.owns(a));
  const LiveReport r = cache.report();
  EXPECT_EQ(r.metrics.failed_requests, 2u);
  ASSERT_TRUE(r.first_failure);
  EXPECT_EQ(r.first_failure->requested_bytes, std::uint64_t{2} << 20);
  EXPECT_EQ(r.first_failure->live_bytes, std::uint64_t{3} << 20);
  EXPECT_EQ(r.first_failure->reserved_bytes, std::uint64_t{3} << 20);
  cache.deallocate(a);
  cache.release();
}

// A program that holds hundreds of thousands of blocks at once (leaks, a large cache of its own):
// every one stays found, and the counters add up. The simulated upstream's addresses are never
// written to by allocate and deallocate.
TEST(LiveCache, keeps_three_hundred_thousand_live_blocks_apart) {
  SimUpstream upstream;
  LiveCache cache("best-fit", upstream, kClock, true);
  std::vector<void*> held;
  for (int k = 0; k < 300'000; ++k) held.push_back(cache.allocate(4096 + 64 * (k % 50)));
  for (void* p : held) ASSERT_TRUE(cache.owns(p));
  std::uint64_t freed_bytes = 0;
  for (std::size_t k = 0; k < held.size(); k += 2) {
    cache.deallocate(held[k]);
    freed_bytes += 4096 + 64 * (k % 50);
  }
  for (std::size_t k = 0; k < held.size(); ++k) ASSERT_EQ(cache.owns(held[k]), k % 2 == 1) << k;
  const LiveReport r = cache.report();
  EXPECT_EQ(r.metrics.requests, 300'000u);
  EXPECT_EQ(r.metrics.upstream_allocs, 300'000u);
  EXPECT_EQ(r.metrics.final_cached_bytes, freed_bytes);
}

TEST(LiveCache, refuses_a_strategy_whose_blocks_are_not_memory) {
  HostMallocUpstream upstream;
  EXPECT_THROW(LiveCache("pytorch:expandable_segments=true", upstream, kClock, true),
               std::invalid_argument);
}

TEST(LiveCache, may_own_rules_out_addresses_outside_every_upstream_block) {
  HostMallocUpstream upstream;
  LiveCache cache("best-fit", upstream, kClock, true);
  int on_stack = 0;
  EXPECT_FALSE(cache.may_own(&on_stack));
  void* p = cache.allocate(1 << 20);
  EXPECT_TRUE(cache.may_own(p));
  EXPECT_TRUE(cache.owns(p));
  EXPECT_FALSE(cache.owns(static_cast<char*>(p) + 16));
  cache.deallocate(p);
  cache.release();
}

// A block the strategy has back (cached) is not the program's, though the upstream block it
// is stays where it was: freeing it again is refused, and counts nothing. For `exact` the
// block is all of an upstream block; for `pytorch` a piece of one, the first piece starting
// where the upstream block does.
TEST(LiveCache, refuses_a_block_it_already_has_back_whole_or_a_piece) {
  for (const char* spec : {"exact", "pytorch"}) {
    SCOPED_TRACE(spec);
    HostMallocUpstream upstream;
    LiveCache cache(spec, upstream, kClock, true);
    void* a = cache.allocate(100'000);
    void* b = cache.allocate(100'000);
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    EXPECT_TRUE(cache.deallocate_if_owned(a));
    const LiveReport before = cache.report();
    EXPECT_FALSE(cache.owns(a));
    EXPECT_FALSE(cache.deallocate_if_owned(a));
    EXPECT_TRUE(cache.owns(b));
    const LiveReport after = cache.report();
    EXPECT_EQ(after.metrics.final_cached_bytes, before.metrics.final_cached_bytes);
    EXPECT_EQ(after.metrics.peak_live_bytes, before.metrics.peak_live_bytes);
    EXPECT_EQ(cache.allocate(100'000), a);  // the cached block, handed out again
    EXPECT_TRUE(cache.owns(a));
    EXPECT_EQ(cache.report().metrics.hits, after.metrics.hits + 1);
    cache.deallocate(a);
    cache.deallocate(b);
    cache.release();
  }
}

std::uint64_t calls_in(const LiveHistogram::Raw& histogram) {
  std::uint64_t calls = 0;
  for (const auto& bucket : histogram.buckets) calls += bucket.second;
  return calls;
}

// A short program's latencies are every call's, not a sample's.
TEST(LiveCache, times_every_one_of_the_strategys_first_calls) {
  HostMallocUpstream upstream;
  LiveCache cache("exact", upstream, kClock, true);
  for (int k = 0; k < 1000; ++k) cache.deallocate(cache.allocate(1 << 20));
  LiveReport r = cache.report();
  EXPECT_EQ(calls_in(r.latency.at("strategy_allocate")), 1000u);
  EXPECT_EQ(calls_in(r.latency.at("strategy_deallocate")), 1000u);
  // Past them, each sampled call stands for kTimedOneIn: the count stays near the calls made.
  constexpr std::uint64_t kPairs = 200'000;
  for (std::uint64_t k = 1000; k < kPairs; ++k) cache.deallocate(cache.allocate(1 << 20));
  r = cache.report();
  for (const char* name : {"strategy_allocate", "strategy_deallocate"}) {
    const std::uint64_t counted = calls_in(r.latency.at(name));
    EXPECT_GT(counted, kPairs * 8 / 10) << name;
    EXPECT_LT(counted, kPairs * 12 / 10) << name;
  }
  cache.release();
}

}  // namespace
}  // namespace alloclab::live
