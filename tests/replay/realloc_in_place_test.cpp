// A realloc that kept its block (docs/strategy-contract.md, "The replay model"): the replay sets
// the block aside at the realloc's free and hands it to the new allocation when it fits, as one
// request and one hit, without asking the strategy; otherwise a free then an alloc.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "alloclab/format/resolve.hpp"
#include "alloclab/replay/replay_cursor.hpp"
#include "alloclab/replay/sim_replay.hpp"
#include "tests/format/trace_test_util.hpp"
#include "tests/split_mix.hpp"

namespace alloclab {
namespace {

using test::alloc_event;
using test::free_event;
using test::make_trace;
using test::marker;

Event in_place_alloc(std::uint64_t address, std::uint64_t size) {
  Event e = alloc_event(address, size);
  e.realloc_in_place = true;
  return e;
}

// The same events with every realloc flag cleared: what a trace that cannot tell an in-place
// realloc from a free and an unrelated alloc says.
std::vector<Event> without_flags(std::vector<Event> events) {
  for (Event& e : events) e.realloc_in_place = false;
  return events;
}

StrategyResult replayed(const std::vector<Event>& events, const std::string& spec) {
  ReplayOptions options;
  options.check_invariants = true;
  return replay_sim(resolve(make_trace(events)), spec, options).result;
}

// A 4 KiB block shrunk in place to 1 KiB, freed, and 4 KiB asked again. Sizes are multiples of
// 512, so every strategy below (pytorch included) gives a 4 KiB block a capacity of 4 KiB.
std::vector<Event> shrink_in_place() {
  return {alloc_event(0x1000, 4096), free_event(0x1000),        in_place_alloc(0x1000, 1024),
          free_event(0x1000),        alloc_event(0x2000, 4096), free_event(0x2000)};
}

const char* const kInPlaceSpecs[] = {"exact", "best-fit", "fifo-shrink:max=1MiB", "per-run-pool",
                                     "pytorch"};

TEST(ReallocInPlace, a_shrinking_realloc_is_one_request_and_one_hit_on_the_same_block) {
  for (const std::string spec : kInPlaceSpecs) {
    SCOPED_TRACE(spec);
    const StrategyResult r = replayed(shrink_in_place(), spec);
    const Metrics& m = r.metrics;
    // The first 4 KiB is a miss; the realloc a hit on its block (slack 4096 - 1024, not
    // rounded); its free gives the 4 KiB block back to the strategy, whose cache serves the
    // last 4 KiB request exactly.
    EXPECT_EQ(m.requests, 3u);
    EXPECT_EQ(m.hits, 2u);
    EXPECT_EQ(m.misses, 1u);
    EXPECT_EQ(m.slack_bytes, 3072u);
    EXPECT_EQ(m.upstream_allocs, 1u);
    EXPECT_EQ(m.peak_live_bytes, 4096u);
    // The strategy itself was asked for the two 4 KiB blocks only.
    const ResolvedTrace trace = resolve(make_trace(shrink_in_place()));
    ReplayCursor cursor(trace, spec);
    cursor.advance_to(trace.ops.size());
    EXPECT_EQ(cursor.lane_strategy(0).stats().requests, 2u);
  }
}

TEST(ReallocInPlace, the_block_stays_live_until_the_realloc_and_then_counts_the_new_size) {
  const ResolvedTrace trace = resolve(make_trace(shrink_in_place()));
  ReplayCursor cursor(trace, "exact");
  // Operation 0 is the implicit run_begin.
  const std::uint64_t live_after[] = {0, 4096, 4096, 1024, 0, 4096, 0};
  const std::uint64_t reserved_after[] = {0, 4096, 4096, 4096, 4096, 4096, 4096};
  for (std::uint64_t k = 0; k < trace.ops.size(); ++k) {
    cursor.advance_to(k + 1);
    EXPECT_EQ(cursor.live_bytes(), live_after[k]) << "after operation " << k;
    EXPECT_EQ(cursor.reserved_bytes(), reserved_after[k]) << "after operation " << k;
  }
  EXPECT_EQ(cursor.lane_strategy(0).stats().requests, 2u);  // the strategy never saw the realloc
}

TEST(ReallocInPlace, a_real_replay_times_no_call_for_a_realloc_kept_in_place) {
  const ResolvedTrace trace = resolve(make_trace(shrink_in_place()));
  ReplayOptions options;
  options.upstream = "host-malloc";
  options.check_invariants = true;
  const StrategyResult r = replay_trace(trace, "exact", options).result;
  EXPECT_EQ(r.metrics.requests, 3u);
  EXPECT_EQ(r.metrics.hits, 2u);
  EXPECT_EQ(r.metrics.slack_bytes, 3072u);
  // Two allocs and two frees reached the strategy: not the realloc, nor its free.
  EXPECT_EQ(r.latency.at("strategy_allocate").count, 2u);
  EXPECT_EQ(r.latency.at("strategy_deallocate").count, 2u);
  EXPECT_EQ(r.latency.at("upstream_allocate").count, 1u);
  // The same counters as in simulation.
  const Metrics sim = replay_sim(trace, "exact").result.metrics;
  EXPECT_EQ(r.metrics.hits, sim.hits);
  EXPECT_EQ(r.metrics.slack_bytes, sim.slack_bytes);
  EXPECT_EQ(r.metrics.upstream_allocs, sim.upstream_allocs);
}

TEST(ReallocInPlace, a_run_counts_the_hit_of_a_realloc_inside_it) {
  std::vector<Event> events = {marker(Op::run_begin, "one")};
  for (const Event& e : shrink_in_place()) events.push_back(e);
  events.push_back(marker(Op::run_end));
  const StrategyResult r = replayed(events, "exact");
  ASSERT_EQ(r.runs.size(), 1u);
  EXPECT_EQ(r.runs[0].requests, 3u);
  EXPECT_EQ(r.runs[0].hits, 2u);
  EXPECT_EQ(r.runs[0].slack_bytes, 3072u);
  EXPECT_EQ(r.runs[0].upstream_allocs, 1u);
}

TEST(ReallocInPlace, a_realloc_that_grew_in_place_beyond_the_block_goes_through_the_strategy) {
  // 1000 bytes grown in place to 3000 by the recorded allocator: exact's 1000-byte block cannot
  // hold it, nor pytorch's 1024-byte one. The block goes back, 3000 bytes are asked, and a later
  // 1000-byte request finds the block given back.
  const std::vector<Event> events = {alloc_event(0x1000, 1000), free_event(0x1000),
                                     in_place_alloc(0x1000, 3000), free_event(0x1000),
                                     alloc_event(0x5000, 1000)};
  for (const std::string spec : kInPlaceSpecs) {
    SCOPED_TRACE(spec);
    const StrategyResult r = replayed(events, spec);
    const StrategyResult plain = replayed(without_flags(events), spec);
    EXPECT_EQ(r.metrics.requests, 3u);
    EXPECT_EQ(r.metrics.hits, plain.metrics.hits);
    EXPECT_EQ(r.metrics.upstream_allocs, plain.metrics.upstream_allocs);
    EXPECT_EQ(r.metrics.slack_bytes, plain.metrics.slack_bytes);
    EXPECT_EQ(r.metrics.peak_live_bytes, 3000u);
    EXPECT_EQ(r.metrics.peak_reserved_bytes, plain.metrics.peak_reserved_bytes);
  }
  const Metrics exact = replayed(events, "exact").metrics;
  EXPECT_EQ(exact.hits, 1u);  // the last 1000 bytes
  EXPECT_EQ(exact.upstream_allocs, 2u);
}

TEST(ReallocInPlace, a_realloc_that_fits_its_rounded_block_is_a_hit_even_when_it_grew) {
  // pytorch rounds 1000 bytes to a 1024-byte block: 1020 fits. exact's block is 1000 bytes.
  const std::vector<Event> events = {alloc_event(0x1000, 1000), free_event(0x1000),
                                     in_place_alloc(0x1000, 1020)};
  const Metrics torch = replayed(events, "pytorch").metrics;
  EXPECT_EQ(torch.hits, 1u);
  EXPECT_EQ(torch.slack_bytes, 4u);
  EXPECT_EQ(torch.peak_live_bytes, 1020u);
  const Metrics exact = replayed(events, "exact").metrics;
  EXPECT_EQ(exact.hits, 0u);
  EXPECT_EQ(exact.upstream_allocs, 2u);
}

// What `exact` must count on a trace, worked out here without the replay: a cache of freed
// capacities, and each live allocation's block capacity.
struct ExactModel {
  std::map<std::uint64_t, std::uint64_t> cached;  // capacity -> blocks
  std::uint64_t requests = 0, hits = 0, upstream_allocs = 0, slack = 0;
  std::uint64_t live = 0, peak_live = 0, reserved = 0;

  std::uint64_t allocate(std::uint64_t size) {
    ++requests;
    auto it = cached.find(size);
    if (it != cached.end()) {
      ++hits;
      if (--it->second == 0) cached.erase(it);
    } else {
      ++upstream_allocs;
      reserved += size;
    }
    live += size;
    peak_live = std::max(peak_live, live);
    return size;
  }
  void free(std::uint64_t capacity, std::uint64_t size) {
    ++cached[capacity];
    live -= size;
  }
  // Returns the capacity of the new allocation's block.
  std::uint64_t realloc_in_place(std::uint64_t capacity, std::uint64_t old_size,
                                 std::uint64_t size) {
    if (capacity >= size) {
      ++requests;
      ++hits;
      slack += capacity - size;
      live = live - old_size + size;
      peak_live = std::max(peak_live, live);
      return capacity;
    }
    free(capacity, old_size);
    return allocate(size);
  }
};

TEST(ReallocInPlace, two_hundred_thousand_reallocs_count_as_worked_out_independently) {
  // 64 buffers, each reallocated over and over: the recorded allocator keeps the block when it
  // shrinks or grows a little (in place, flagged) and moves it otherwise (alloc new, free old).
  // Now and then a buffer is freed and allocated afresh.
  constexpr int kBuffers = 64;
  constexpr int kReallocs = 200000;
  test::SplitMix rng{42};
  struct Buffer {
    std::uint64_t address, size, capacity;  // capacity: exact's block, per ExactModel
  };
  ExactModel model;
  std::vector<Event> events;
  events.reserve(2 * kReallocs + 4 * kBuffers);
  std::uint64_t next_address = 0x10000;
  std::uint64_t time = 0;
  const auto size_of = [&] { return 64 * (1 + rng.below(64)); };
  std::vector<Buffer> buffers;
  for (int b = 0; b < kBuffers; ++b) {
    const std::uint64_t size = size_of();
    events.push_back(alloc_event(next_address, size, ++time));
    buffers.push_back({next_address, size, model.allocate(size)});
    next_address += 0x10000;
  }
  // In-place reallocs that grow beyond exact's block, and those that grow beyond nothing: no
  // larger than the allocation they keep the block of, so every strategy's block holds them.
  std::uint64_t in_place = 0, in_place_growing = 0, in_place_shrinking = 0;
  for (int i = 0; i < kReallocs; ++i) {
    Buffer& buf = buffers[rng.below(kBuffers)];
    const std::uint64_t choice = rng.below(8);
    const std::uint64_t size = size_of();
    if (choice == 0) {  // freed, and a new one allocated elsewhere
      events.push_back(free_event(buf.address, ++time));
      model.free(buf.capacity, buf.size);
      buf.address = next_address;
      next_address += 0x10000;
      events.push_back(alloc_event(buf.address, size, ++time));
      buf.capacity = model.allocate(size);
    } else if (choice <= 4 && size <= buf.size + 1024) {  // kept in place
      events.push_back(free_event(buf.address, ++time));
      Event e = alloc_event(buf.address, size, ++time);
      e.realloc_in_place = true;
      events.push_back(e);
      ++in_place;
      if (size > buf.capacity) ++in_place_growing;
      if (size <= buf.size) ++in_place_shrinking;
      buf.capacity = model.realloc_in_place(buf.capacity, buf.size, size);
    } else {  // moved: alloc(new) then free(old), as the recorder writes it
      events.push_back(alloc_event(next_address, size, ++time));
      events.push_back(free_event(buf.address, ++time));
      const std::uint64_t capacity = model.allocate(size);
      model.free(buf.capacity, buf.size);
      buf.capacity = capacity;
      buf.address = next_address;
      next_address += 0x10000;
    }
    buf.size = size;
  }
  for (const Buffer& buf : buffers) {
    events.push_back(free_event(buf.address, ++time));
    model.free(buf.capacity, buf.size);
  }
  ASSERT_GT(in_place, 50000u);
  ASSERT_GT(in_place_growing, 5000u);  // both branches of the rule are exercised

  const ResolvedTrace trace = resolve(make_trace(events));
  ASSERT_EQ(trace.in_place_reallocs.size(), in_place);
  ReplayOptions options;
  options.check_invariants = true;
  const Metrics m = replay_sim(trace, "exact", options).result.metrics;
  EXPECT_EQ(m.requests, model.requests);
  EXPECT_EQ(m.hits, model.hits);
  EXPECT_EQ(m.upstream_allocs, model.upstream_allocs);
  EXPECT_EQ(m.upstream_frees, 0u);
  EXPECT_EQ(m.slack_bytes, model.slack);
  EXPECT_EQ(m.peak_live_bytes, model.peak_live);
  EXPECT_EQ(m.peak_reserved_bytes, model.reserved);  // exact never gives a block back

  // The other strategies keep their invariants on it, count every alloc as a request and every
  // realloc that shrank in place as a hit.
  for (const std::string spec : {"best-fit", "fifo-shrink:max=256KiB", "per-run-pool", "pytorch"}) {
    SCOPED_TRACE(spec);
    const Metrics other = replay_sim(trace, spec, options).result.metrics;
    EXPECT_EQ(other.requests, model.requests);
    EXPECT_EQ(other.peak_live_bytes, model.peak_live);
    EXPECT_GE(other.hits, in_place_shrinking);
  }
}

}  // namespace
}  // namespace alloclab
