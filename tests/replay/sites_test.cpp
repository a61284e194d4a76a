// Charging misses, slack, upstream bytes and evictions to call stacks (replay/sites.hpp): the
// charges sum to each replay's own metrics, live allocations are those of the moment asked for,
// and folded stacks come out exactly.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "alloclab/format/resolve.hpp"
#include "alloclab/replay/report.hpp"
#include "alloclab/replay/sites.hpp"
#include "tests/format/trace_test_util.hpp"
#include "tests/replay/sites_workload.hpp"
#include "tests/split_mix.hpp"

namespace alloclab {
namespace {

using test::alloc_event;
using test::free_event;
using test::make_trace;

SiteCounts sum_over_stacks(const SitesResult& r, std::size_t spec) {
  SiteCounts sum;
  for (const StackTally& t : r.stacks) {
    sum.misses += t.strategies[spec].misses;
    sum.slack_bytes += t.strategies[spec].slack_bytes;
    sum.evictions += t.strategies[spec].evictions;
    sum.upstream_bytes += t.strategies[spec].upstream_bytes;
  }
  return sum;
}

// Returns the evictions of all specs, so that a test can say some happened.
std::uint64_t expect_sums_match(const Trace& trace, const std::vector<std::string>& specs,
                                const ReplayOptions& options = {}) {
  const ResolvedTrace resolved = resolve(trace);
  const SitesResult r = tally_sites(trace, resolved, specs, SitesAt{}, options, 2);
  EXPECT_EQ(r.results.size(), specs.size());
  EXPECT_EQ(r.stacks.size(), trace.stacks().size() + 1);
  std::uint64_t evictions = 0;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const Metrics& m = r.results[i].metrics;
    const SiteCounts sum = sum_over_stacks(r, i);
    evictions += m.evictions;
    EXPECT_EQ(sum.misses, m.misses) << specs[i];
    EXPECT_EQ(sum.slack_bytes, m.slack_bytes) << specs[i];
    EXPECT_EQ(sum.evictions, m.evictions) << specs[i];
    EXPECT_GE(sum.upstream_bytes, m.upstream_allocs) << specs[i];  // at least a byte each
    // Observing changes nothing the replay counts.
    EXPECT_EQ(metrics_json(m),
              metrics_json(replay_trace(resolved, specs[i], options).result.metrics))
        << specs[i];
  }
  std::uint64_t allocations = 0;
  for (const StackTally& t : r.stacks) allocations += t.allocations;
  EXPECT_EQ(allocations, r.results[0].metrics.requests);
  return evictions;
}

TEST(Sites, charges_sum_to_each_strategys_metrics) {
  test::StackedOptions o;
  o.stacks = 300;
  o.leak_every = 50;
  const Trace trace = test::stacked_workload(60000, o);
  ASSERT_TRUE(trace.has_stacks());
  const std::uint64_t evictions = expect_sums_match(
      trace, {"exact", "best-fit", "passthrough", "fifo-shrink:max=4MiB",
              "fifo-shrink:max=1MiB,match=best-fit", "per-run-pool", "pytorch",
              "pytorch:max_split_size=20MiB", "pytorch:expandable_segments=true"});
  EXPECT_GT(evictions, 0u);
}

TEST(Sites, charges_sum_to_the_metrics_when_the_upstream_runs_out) {
  // A device smaller than the program's peak: strategies give their cache back and retry, and
  // pytorch frees segments, evictions counted inside a request.
  test::StackedOptions o;
  o.stacks = 100;
  o.leak_every = 0;
  const Trace trace = test::stacked_workload(40000, o);
  const ResolvedTrace resolved = resolve(trace);
  const std::uint64_t peak = replay_trace(resolved, "passthrough").result.metrics.peak_live_bytes;
  ReplayOptions options;
  options.memory_limit = peak + peak / 8;
  options.stop_at_first_failure = false;
  EXPECT_GT(
      expect_sums_match(trace, {"exact", "best-fit", "pytorch", "fifo-shrink:max=64MiB"}, options),
      0u);
}

TEST(Sites, a_block_evicted_as_it_is_freed_is_charged_to_the_allocation_that_freed_it) {
  // fifo-shrink with max=100 evicts a 4 KiB block the moment it is dropped into the cache.
  Trace trace = make_trace({alloc_event(0x1000, 4096, 1), alloc_event(0x9000, 64, 2),
                            free_event(0x1000, 3), free_event(0x9000, 4)});
  const std::uint32_t big = trace.add_frame({0x10, "big_buffer", "prog"});
  const std::uint32_t small = trace.add_frame({0x20, "small_buffer", "prog"});
  trace.set_stack_id(0, trace.add_stack({big}));
  trace.set_stack_id(1, trace.add_stack({small}));
  const SitesResult r =
      tally_sites(trace, resolve(trace), {"fifo-shrink:max=100"}, SitesAt{}, {}, 1);
  EXPECT_EQ(r.results[0].metrics.evictions, 1u);
  EXPECT_EQ(r.stacks[1].strategies[0].evictions, 1u);
  EXPECT_EQ(r.stacks[2].strategies[0].evictions, 0u);
  EXPECT_EQ(r.stacks[1].strategies[0].upstream_bytes, 4096u);
  EXPECT_EQ(r.stacks[1].strategies[0].misses, 1u);
}

TEST(Sites, a_segment_is_charged_to_the_allocation_whose_free_left_it_empty) {
  // pytorch cuts both small requests from one 2 MiB segment; the second free empties it, and
  // under a 21 MiB device the 20 MiB segment of the next request fits only once it is freed.
  Trace trace =
      make_trace({alloc_event(0x1000, 1000, 1), alloc_event(0x2000, 1000, 2), free_event(0x1000, 3),
                  free_event(0x2000, 4), alloc_event(0x3000, 3 << 20, 5)});
  const std::uint32_t first = trace.add_frame({0x10, "first", "prog"});
  const std::uint32_t second = trace.add_frame({0x20, "second", "prog"});
  const std::uint32_t large = trace.add_frame({0x30, "large", "prog"});
  trace.set_stack_id(0, trace.add_stack({first}));
  trace.set_stack_id(1, trace.add_stack({second}));
  trace.set_stack_id(4, trace.add_stack({large}));
  ReplayOptions options;
  options.memory_limit = 21 << 20;
  const SitesResult r = tally_sites(trace, resolve(trace), {"pytorch"}, SitesAt{}, options, 1);
  ASSERT_EQ(r.results[0].metrics.evictions, 1u);
  EXPECT_EQ(r.stacks[2].strategies[0].evictions, 1u);
  EXPECT_EQ(r.stacks[1].strategies[0].misses, 1u);  // the segment's
  EXPECT_EQ(r.stacks[2].strategies[0].misses, 0u);  // cut from it
  EXPECT_EQ(r.stacks[1].strategies[0].upstream_bytes, 2u << 20);
  EXPECT_EQ(r.stacks[3].strategies[0].misses, 1u);
  EXPECT_EQ(r.stacks[3].strategies[0].upstream_bytes, 20u << 20);
}

Trace three_stack_trace() {
  // Stack 1 allocates 100 at t=10 and 200 at t=30 (freed at t=60); stack 2 allocates 5000 at
  // t=20, freed at t=40; one allocation has no stack.
  Trace trace = make_trace({alloc_event(0x10, 100, 10), alloc_event(0x20, 5000, 20),
                            alloc_event(0x30, 200, 30), free_event(0x20, 40),
                            alloc_event(0x40, 7, 50), free_event(0x30, 60)});
  const std::uint32_t main_frame = trace.add_frame({0x400100, "main", "/usr/bin/prog"});
  const std::uint32_t load = trace.add_frame({0x400200, "load", "/usr/bin/prog"});
  const std::uint32_t anon = trace.add_frame({0x7f0020, "", "/lib/libx.so"});
  const std::uint32_t one = trace.add_stack({load, main_frame});
  const std::uint32_t two = trace.add_stack({anon, load, main_frame});
  trace.set_stack_id(0, one);
  trace.set_stack_id(1, two);
  trace.set_stack_id(2, one);
  return trace;
}

TEST(Sites, live_counts_the_allocations_held_at_the_peak) {
  const Trace trace = three_stack_trace();
  const SitesResult r = tally_sites(trace, resolve(trace), {"exact"}, SitesAt{}, {}, 1);
  EXPECT_EQ(r.at_op, 4u);  // the implicit run_begin, then the third alloc: 5300 bytes
  EXPECT_EQ(r.at_time_ns, 20u);
  EXPECT_EQ(r.live_bytes_at, 5300u);
  EXPECT_EQ(r.stacks[1].live_allocations, 2u);
  EXPECT_EQ(r.stacks[1].live_bytes, 300u);
  EXPECT_EQ(r.stacks[2].live_bytes, 5000u);
  EXPECT_EQ(r.stacks[0].live_bytes, 0u);
  EXPECT_EQ(r.stacks[1].allocations, 2u);
  EXPECT_EQ(r.stacks[1].requested_bytes, 300u);
  EXPECT_EQ(r.stacks[0].allocations, 1u);
}

TEST(Sites, live_counts_the_allocations_held_at_a_given_time) {
  const Trace trace = three_stack_trace();
  // 45 ns after the first operation (t=10): the operations up to t=50 ran.
  const SitesResult r = tally_sites(trace, resolve(trace), {"exact"}, SitesAt{false, 40}, {}, 1);
  EXPECT_EQ(r.at_op, 6u);  // the implicit run_begin and five events
  EXPECT_EQ(r.at_time_ns, 40u);
  EXPECT_EQ(r.live_bytes_at, 307u);
  EXPECT_EQ(r.stacks[1].live_bytes, 300u);
  EXPECT_EQ(r.stacks[2].live_allocations, 0u);
  EXPECT_EQ(r.stacks[0].live_bytes, 7u);
  const SitesResult before =
      tally_sites(trace, resolve(trace), {"exact"}, SitesAt{false, 0}, {}, 1);
  EXPECT_EQ(before.at_op, 2u);
  EXPECT_EQ(before.live_bytes_at, 100u);
}

TEST(Sites, folded_stacks_list_frames_root_first_with_the_metric) {
  const Trace trace = three_stack_trace();
  const SitesResult r = tally_sites(trace, resolve(trace), {"exact"}, SitesAt{}, {}, 1);
  std::ostringstream bytes;
  write_folded(bytes, trace, r, SiteMetric::bytes, 0);
  EXPECT_EQ(bytes.str(),
            "[no stack] 7\n"
            "main (prog);load (prog) 300\n"
            "main (prog);load (prog);0x7f0020 (libx.so) 5000\n");
  std::ostringstream live;
  write_folded(live, trace, r, SiteMetric::live, 0);
  EXPECT_EQ(live.str(),
            "main (prog);load (prog) 300\n"
            "main (prog);load (prog);0x7f0020 (libx.so) 5000\n");
  std::ostringstream misses;
  write_folded(misses, trace, r, SiteMetric::misses, 0);
  EXPECT_EQ(misses.str(),
            "[no stack] 1\n"
            "main (prog);load (prog) 2\n"
            "main (prog);load (prog);0x7f0020 (libx.so) 1\n");
}

TEST(Sites, folded_names_lose_their_semicolons_and_line_breaks) {
  Trace trace = make_trace({alloc_event(0x10, 64, 1)});
  const std::uint32_t odd = trace.add_frame({0x1, "op;er\nator", "m"});
  trace.set_stack_id(0, trace.add_stack({odd}));
  const SitesResult r = tally_sites(trace, resolve(trace), {"exact"}, SitesAt{}, {}, 1);
  std::ostringstream out;
  write_folded(out, trace, r, SiteMetric::allocations, 0);
  EXPECT_EQ(out.str(), "op er ator (m) 1\n");
}

TEST(Sites, sites_group_stacks_by_innermost_frame) {
  const Trace trace = three_stack_trace();
  const SitesResult r = tally_sites(trace, resolve(trace), {"exact"}, SitesAt{}, {}, 1);
  const std::vector<Site> sites = group_sites(trace, r, SiteMetric::allocations, 0);
  ASSERT_EQ(sites.size(), 3u);
  EXPECT_EQ(site_name(trace, sites[0]), "load (prog)");
  EXPECT_EQ(sites[0].total.allocations, 2u);
  EXPECT_EQ(sites[0].stacks, std::vector<std::uint32_t>{1});
  const std::vector<Site> by_bytes = group_sites(trace, r, SiteMetric::bytes, 0);
  EXPECT_EQ(site_name(trace, by_bytes[0]), "0x7f0020 (libx.so)");
  EXPECT_EQ(site_name(trace, by_bytes[2]), "[no stack]");
}

TEST(Sites, one_function_called_from_two_places_is_one_site_with_two_chains) {
  Trace trace =
      make_trace({alloc_event(0x10, 64, 1), alloc_event(0x20, 64, 2), alloc_event(0x30, 64, 3)});
  const std::uint32_t make = trace.add_frame({0x100, "make", "prog"});
  const std::uint32_t make_again = trace.add_frame({0x104, "make", "prog"});  // another line
  const std::uint32_t a = trace.add_frame({0x200, "a", "prog"});
  const std::uint32_t b = trace.add_frame({0x300, "b", "prog"});
  trace.set_stack_id(0, trace.add_stack({make, a}));
  trace.set_stack_id(1, trace.add_stack({make_again, b}));
  trace.set_stack_id(2, 2);
  const SitesResult r = tally_sites(trace, resolve(trace), {"exact"}, SitesAt{}, {}, 1);
  const std::vector<Site> sites = group_sites(trace, r, SiteMetric::allocations, 0);
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_EQ(sites[0].total.allocations, 3u);
  EXPECT_EQ(sites[0].stacks, (std::vector<std::uint32_t>{2, 1}));
}

TEST(Sites, allocations_left_out_by_min_size_and_segment_events_take_no_stack) {
  Event segment = alloc_event(0xA000, 1 << 20, 1, DeviceId{0});
  segment.segment = true;
  Trace trace = make_trace({segment, alloc_event(0x10, 16, 2), alloc_event(0x20, 4096, 3),
                            free_event(0x10, 4), alloc_event(0x30, 8192, 5)});
  const std::uint32_t f = trace.add_frame({0x1, "f", "m"});
  const std::uint32_t g = trace.add_frame({0x2, "g", "m"});
  trace.set_stack_id(0, trace.add_stack({f}));
  trace.set_stack_id(2, trace.add_stack({g}));
  trace.set_stack_id(4, 1);
  ResolveOptions options;
  options.min_size = 1024;
  const ResolvedTrace resolved = resolve(trace, "t", options);
  const std::vector<std::uint32_t> stacks = allocation_stacks(trace, resolved);
  ASSERT_EQ(stacks.size(), 2u);
  EXPECT_EQ(stacks[0], 2u);
  EXPECT_EQ(stacks[1], 1u);
}

// The charging rules of replay/sites.hpp written the plain way, a tree of upstream blocks looked
// up at every free: what tally_sites must charge, however it indexes the blocks.
class ReferenceCharges final : public ReplayObserver {
 public:
  ReferenceCharges(const std::vector<std::uint32_t>& stack_of, std::size_t stacks)
      : stack_of_(stack_of), counts(stacks) {}
  void requested(std::size_t, std::uint32_t id, const Block*, const RequestCost& cost) override {
    SiteCounts& c = counts[stack_of_[id]];
    c.misses += cost.hit ? 0 : 1;
    c.slack_bytes += cost.slack_bytes;
    c.upstream_bytes += cost.upstream_bytes;
  }
  void freed(std::size_t lane, std::uint32_t id, const Block& block) override {
    auto& blocks = lanes_[lane];
    auto after = blocks.upper_bound(block.address);
    if (after == blocks.begin()) return;
    auto& [start, held] = *std::prev(after);
    if (block.address - start < held.first) held.second = stack_of_[id];
  }
  void upstream_allocated(std::size_t lane, const Block& block) override {
    lanes_[lane][block.address] = {block.capacity, 0};
  }
  void upstream_freed(std::size_t lane, const Block& block, bool eviction) override {
    auto& blocks = lanes_[lane];
    const auto at = blocks.find(block.address);
    std::uint32_t stack = 0;
    if (at != blocks.end()) {
      stack = at->second.second;
      blocks.erase(at);
    }
    if (eviction) ++counts[stack].evictions;
  }

 private:
  const std::vector<std::uint32_t>& stack_of_;
  // Per lane: upstream block start -> (capacity, stack of the last free inside it).
  std::map<std::size_t, std::map<std::uint64_t, std::pair<std::uint64_t, std::uint32_t>>> lanes_;

 public:
  std::vector<SiteCounts> counts;
};

TEST(Sites, charges_match_the_rules_with_a_hundred_thousand_live_blocks_in_many_segments) {
  // Rounds of 100,000 live blocks, freed in a shuffled order: small ones cut from thousands of
  // 2 MiB segments, then large ones that fit the device only once pytorch gives the cached
  // segments back, each eviction charged to the allocation whose free emptied its segment.
  constexpr std::uint64_t live = 100'000;
  test::SplitMix rng{5};
  std::vector<Event> events;
  std::vector<std::uint32_t> stack_of_event;
  std::uint64_t time = 0;
  for (int round = 0; round < 3; ++round) {
    const bool small = round % 2 == 0;
    std::vector<std::uint64_t> addresses;
    for (std::uint64_t k = 0; k < live; ++k) {
      const std::uint64_t address = 0x100000000000ull * (round + 1) + k * 0x1000000;
      const std::uint64_t size = small ? 200'000 + rng.below(4) * 100'000 : 1'500'000;
      events.push_back(alloc_event(address, size, ++time));
      stack_of_event.push_back(1 + static_cast<std::uint32_t>(rng.below(40)));
      addresses.push_back(address);
    }
    for (std::size_t i = addresses.size(); i > 1; --i)
      std::swap(addresses[i - 1], addresses[rng.below(i)]);
    for (const std::uint64_t address : addresses) {
      events.push_back(free_event(address, ++time));
      stack_of_event.push_back(0);
    }
  }
  Trace trace = make_trace(events);
  std::vector<std::uint32_t> stack_ids{0};
  for (std::uint32_t s = 0; s < 40; ++s)
    stack_ids.push_back(
        trace.add_stack({trace.add_frame({0x10 + 0x10ull * s, "fn_" + std::to_string(s), "p"})}));
  for (std::size_t e = 0; e < events.size(); ++e)
    if (stack_of_event[e]) trace.set_stack_id(e, stack_ids[stack_of_event[e]]);
  const ResolvedTrace resolved = resolve(trace);
  ReplayOptions options;
  options.memory_limit = live * 1'750'000;  // one round of large blocks and little else
  options.stop_at_first_failure = false;

  const SitesResult r = tally_sites(trace, resolved, {"pytorch"}, SitesAt{}, options, 1);
  const std::vector<std::uint32_t> stack_of = allocation_stacks(trace, resolved);
  ReferenceCharges reference(stack_of, r.stacks.size());
  ReplayOptions observed = options;
  observed.observer = &reference;
  const Metrics m = replay_trace(resolved, "pytorch", observed).result.metrics;
  EXPECT_EQ(metrics_json(m), metrics_json(r.results[0].metrics));
  EXPECT_GT(m.evictions, 1000u);
  EXPECT_EQ(m.failed_requests, 0u);
  std::uint64_t charged_stacks = 0;
  for (std::size_t id = 0; id < r.stacks.size(); ++id) {
    const SiteCounts& got = r.stacks[id].strategies[0];
    const SiteCounts& want = reference.counts[id];
    EXPECT_EQ(got.misses, want.misses) << "stack " << id;
    EXPECT_EQ(got.slack_bytes, want.slack_bytes) << "stack " << id;
    EXPECT_EQ(got.upstream_bytes, want.upstream_bytes) << "stack " << id;
    EXPECT_EQ(got.evictions, want.evictions) << "stack " << id;
    charged_stacks += got.evictions > 0;
  }
  EXPECT_GT(charged_stacks, 30u);
}

TEST(Sites, metric_names_read_back) {
  for (SiteMetric m : all_site_metrics()) EXPECT_EQ(parse_site_metric(to_string(m)), m);
  EXPECT_FALSE(parse_site_metric("hits"));
}

TEST(Sites, a_million_event_trace_with_thousands_of_stacks_is_tallied) {
  test::StackedOptions o;
  o.stacks = 4000;
  o.leak_every = 1000;
  const Trace trace = test::stacked_workload(1'010'000, o);
  ASSERT_GE(trace.size(), 1'000'000u);
  const ResolvedTrace resolved = resolve(trace);
  EXPECT_GT(resolved.anomalies.leaks, 100u);
  const std::vector<std::string> specs{"exact", "pytorch"};
  const SitesResult r = tally_sites(trace, resolved, specs, SitesAt{}, {}, 2);
  std::uint64_t stacks_used = 0, leaked_live = 0;
  for (const StackTally& t : r.stacks) stacks_used += t.allocations > 0;
  EXPECT_GT(stacks_used, 3000u);
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const SiteCounts sum = sum_over_stacks(r, i);
    EXPECT_EQ(sum.misses, r.results[i].metrics.misses);
    EXPECT_EQ(sum.slack_bytes, r.results[i].metrics.slack_bytes);
    EXPECT_EQ(sum.evictions, r.results[i].metrics.evictions);
  }
  // At the end, what is live is the leaks.
  const SitesResult end =
      tally_sites(trace, resolved, {"exact"}, SitesAt{false, ~0ull >> 1}, {}, 2);
  EXPECT_EQ(end.at_op, resolved.ops.size());
  for (const StackTally& t : end.stacks) leaked_live += t.live_allocations;
  EXPECT_EQ(leaked_live, resolved.anomalies.leaks);
  EXPECT_EQ(end.live_bytes_at, resolved.anomalies.leaked_bytes);
  const std::vector<Site> sites = group_sites(trace, r, SiteMetric::misses, 1);
  EXPECT_FALSE(sites.empty());
}

}  // namespace
}  // namespace alloclab
