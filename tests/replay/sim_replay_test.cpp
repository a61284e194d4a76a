#include <gtest/gtest.h>

#include "alloclab/format/formats.hpp"
#include "alloclab/format/synthetic.hpp"
#include "alloclab/replay/report.hpp"
#include "alloclab/replay/report_table.hpp"
#include "alloclab/replay/sim_replay.hpp"
#include "alloclab/strategies/params.hpp"

namespace alloclab {
namespace {

ResolvedTrace tiny() {
  return resolve(read_trace(std::string(ALLOCLAB_TRACES_DIR) + "/tiny.csv"));
}

Metrics replay_metrics(const ResolvedTrace& trace, const std::string& spec) {
  ReplayOptions options;
  options.check_invariants = true;
  return replay_sim(trace, spec, options).result.metrics;
}

// traces/tiny.csv: two runs of alloc A(1 MiB), alloc B(4 KiB), free A, alloc C(2 MiB), free B,
// free C. Every number below is worked out by hand from docs/strategy-contract.md.
TEST(SimReplay, tiny_trace_passthrough_by_hand) {
  const Metrics m = replay_metrics(tiny(), "passthrough");
  EXPECT_EQ(m.requests, 6u);
  EXPECT_EQ(m.hits, 0u);
  EXPECT_EQ(m.upstream_allocs, 6u);
  EXPECT_EQ(m.upstream_frees, 6u);
  EXPECT_EQ(m.evictions, 0u);
  EXPECT_EQ(m.peak_live_bytes, 4096u + 2097152u);
  EXPECT_EQ(m.peak_reserved_bytes, m.peak_live_bytes);
  EXPECT_EQ(m.final_cached_bytes, 0u);
}

TEST(SimReplay, tiny_trace_exact_hits_every_request_of_the_second_run) {
  const Metrics m = replay_metrics(tiny(), "exact");
  EXPECT_EQ(m.hits, 3u);
  EXPECT_EQ(m.misses, 3u);
  EXPECT_DOUBLE_EQ(m.hit_rate(), 0.5);
  EXPECT_EQ(m.upstream_allocs, 3u);
  EXPECT_EQ(m.upstream_frees, 0u);
  EXPECT_EQ(m.peak_reserved_bytes, 1048576u + 4096u + 2097152u);
  EXPECT_EQ(m.final_cached_bytes, m.peak_reserved_bytes);
  EXPECT_EQ(m.slack_bytes, 0u);
}

TEST(SimReplay, tiny_trace_fifo_shrink_at_2MiB_evicts_oldest_drops_first) {
  // Run 0: free A (1 MiB cached), free B, free C -> 3 MiB + 4 KiB > 2 MiB: evict A then B.
  // Run 1: A' misses (only C cached); free A' evicts C; free B' fits; free C' evicts A', B'.
  const Metrics m = replay_metrics(tiny(), "fifo-shrink:max=2MiB");
  EXPECT_EQ(m.hits, 0u);
  EXPECT_EQ(m.evictions, 5u);
  EXPECT_EQ(m.upstream_frees, 5u);
  EXPECT_EQ(m.final_cached_bytes, 2097152u);
}

TEST(SimReplay, tiny_trace_best_fit_reuses_the_2MiB_block_for_1MiB_with_slack) {
  // Run 1: A'(1 MiB) takes the smallest cached block >= 1 MiB, which is A itself: no slack.
  const Metrics exact = replay_metrics(tiny(), "best-fit");
  EXPECT_EQ(exact.hits, 3u);
  EXPECT_EQ(exact.slack_bytes, 0u);
  // With round=3MiB every request becomes 3 MiB: run 0 reserves 2 blocks (A and B live
  // together, C reuses A's block), run 1 hits all three.
  const Metrics rounded = replay_metrics(tiny(), "best-fit:round=3MiB");
  EXPECT_EQ(rounded.upstream_allocs, 2u);
  EXPECT_EQ(rounded.hits, 4u);
  EXPECT_EQ(rounded.slack_bytes, 0u);  // slack is measured against the rounded request
}

TEST(SimReplay, tiny_trace_per_run_pool_releases_everything_at_each_run_end) {
  const ReplayOutcome out = replay_sim(tiny(), "per-run-pool");
  const Metrics& m = out.result.metrics;
  EXPECT_EQ(m.hits, 0u);  // C (2 MiB) cannot use A (1 MiB); runs share nothing
  EXPECT_EQ(m.evictions, 6u);
  EXPECT_EQ(m.final_cached_bytes, 0u);
  ASSERT_EQ(out.result.runs.size(), 2u);
  EXPECT_EQ(out.result.runs[0].label, "step 0");
  EXPECT_EQ(out.result.runs[1].evictions, 3u);
  EXPECT_EQ(out.result.runs[1].upstream_allocs, 3u);
  EXPECT_EQ(out.result.runs[1].peak_reserved_bytes, 1048576u + 4096u + 2097152u);
}

TEST(SimReplay, same_trace_and_spec_give_identical_results) {
  SyntheticOptions options;
  options.shape = SyntheticShape::transformer;
  options.runs = 8;
  const ResolvedTrace trace = resolve(generate_synthetic(options));
  for (const char* spec :
       {"exact", "best-fit", "fifo-shrink:max=4MiB", "per-run-pool", "pytorch"}) {
    const StrategyResult a = replay_sim(trace, spec).result;
    const StrategyResult b = replay_sim(trace, spec).result;
    EXPECT_EQ(a.metrics, b.metrics) << spec;
    EXPECT_EQ(a.runs, b.runs) << spec;
    EXPECT_EQ(a.series, b.series) << spec;
  }
}

TEST(SimReplay, series_has_at_most_the_requested_points_and_keeps_the_peaks) {
  SyntheticOptions options;
  options.runs = 30;
  const ResolvedTrace trace = resolve(generate_synthetic(options));
  ReplayOptions replay_options;
  replay_options.max_series_points = 50;
  const StrategyResult r = replay_sim(trace, "fifo-shrink:max=8MiB", replay_options).result;
  ASSERT_LE(r.series.size(), 50u);
  ASSERT_GE(r.series.size(), 40u);
  std::uint64_t live_peak = 0, reserved_peak = 0;
  for (const SeriesPoint& p : r.series) {
    EXPECT_LE(p.live_min, p.live_max);
    EXPECT_LE(p.reserved_min, p.reserved_max);
    live_peak = std::max(live_peak, p.live_max);
    reserved_peak = std::max(reserved_peak, p.reserved_max);
  }
  EXPECT_EQ(live_peak, r.metrics.peak_live_bytes);
  EXPECT_EQ(reserved_peak, r.metrics.peak_reserved_bytes);
}

TEST(SimReplay, memory_limit_turns_into_failed_requests_not_a_crash) {
  const ResolvedTrace trace = tiny();
  ReplayOptions options;
  options.memory_limit = 2 * 1048576;
  options.stop_at_first_failure = false;
  const Metrics m = replay_sim(trace, "exact", options).result.metrics;
  // Each run's 4 KiB + 2 MiB peak does not fit beside anything else; exact releases its cache
  // and retries, so only requests that cannot fit even alone fail.
  EXPECT_EQ(m.requests, 6u);
  EXPECT_GT(m.failed_requests, 0u);
  EXPECT_LE(m.peak_reserved_bytes, 2u * 1048576u);
  // By default the replay ends there: C (2 MiB) does not fit beside B once A's block is given
  // back, the third request of the first run.
  options.stop_at_first_failure = true;
  const Metrics stopped = replay_sim(trace, "exact", options).result.metrics;
  EXPECT_EQ(stopped.requests, 3u);
  EXPECT_EQ(stopped.failed_requests, 1u);
}

// pytorch's num_alloc_retries and num_ooms: summed over devices, in the report and the table.
TEST(SimReplay, pytorch_counters_are_summed_over_devices_and_reported) {
  Trace t;
  for (const DeviceId device : {0, 1}) {  // on each: 30 MiB, freed, then 40 MiB
    Event e;
    e.device = device;
    e.address = 0x1000;
    e.size = 30 << 20;
    t.push_back(e);
    e.op = Op::free;
    t.push_back(e);
    e.op = Op::alloc;
    e.address = 0x2000;
    e.size = 40 << 20;
    t.push_back(e);
  }
  ReplayOptions options;
  options.memory_limit = 64 << 20;
  const StrategyResult r = replay_sim(resolve(t), "pytorch", options).result;
  // On each device 30 + 40 > 64 fails; the free 30 MiB segment goes and the retry fits.
  const std::map<std::string, std::uint64_t> expected = {{"num_alloc_retries", 2}, {"num_ooms", 0}};
  EXPECT_EQ(r.strategy_counters, expected);
  EXPECT_EQ(r.metrics.failed_requests, 0u);
  EXPECT_EQ(result_from_json(result_json(r), "r.json").strategy_counters, expected);
  EXPECT_NE(results_table_text({r}).find("^ num_alloc_retries 2, num_ooms 0\n"), std::string::npos)
      << results_table_text({r});
  EXPECT_TRUE(replay_sim(resolve(t), "exact", options).result.strategy_counters.empty());
}

TEST(SimReplay, traces_without_markers_are_one_run) {
  SyntheticOptions options;
  options.shape = SyntheticShape::random;
  options.runs = 2;
  const ResolvedTrace trace = resolve(generate_synthetic(options));
  ASSERT_TRUE(trace.implicit_run);
  const StrategyResult r = replay_sim(trace, "per-run-pool").result;
  ASSERT_EQ(r.runs.size(), 1u);
  // The implicit run ends with the trace, after the last operation: its pool is still held at
  // the end (like any cache's) and its release is the uncounted final clean-up.
  EXPECT_EQ(r.metrics.evictions, 0u);
  EXPECT_EQ(r.metrics.upstream_frees, 0u);
  EXPECT_GT(r.metrics.final_cached_bytes, 0u);
  EXPECT_EQ(r.runs[0].requests, r.metrics.requests);
  // Inside its one run per-run-pool is a best-fit cache with earliest-added tie-breaks: it
  // serves as many requests from its pool as best-fit does from its cache.
  EXPECT_EQ(r.metrics.hits, replay_sim(trace, "best-fit").result.metrics.hits);
}

TEST(SimReplay, devices_get_separate_allocators) {
  Trace t;
  Event e;
  e.op = Op::alloc;
  e.address = 0x1000;
  e.size = 100;
  e.device = 0;
  t.push_back(e);
  e.device = 1;
  t.push_back(e);
  e.op = Op::free;
  t.push_back(e);
  e.device = 0;
  t.push_back(e);
  e.op = Op::alloc;
  e.device = 1;
  t.push_back(e);
  const Metrics m = replay_metrics(resolve(t), "exact");
  EXPECT_EQ(m.requests, 3u);
  EXPECT_EQ(m.hits, 1u);  // device 1's freed block serves device 1 again
  EXPECT_EQ(m.peak_reserved_bytes, 200u);
}

TEST(SimReplay, bad_spec_is_a_spec_error) {
  EXPECT_THROW(replay_sim(tiny(), "fifo-shrink:maxx=1"), SpecError);
  EXPECT_THROW(replay_sim(tiny(), "nonsense"), SpecError);
}

TEST(SimReplay, cancel_flag_stops_a_replay) {
  SyntheticOptions options;
  options.min_events = 300'000;
  const ResolvedTrace trace = resolve(generate_synthetic(options));
  std::atomic<bool> cancel{true};
  ReplayOptions replay_options;
  replay_options.cancel = &cancel;
  const ReplayOutcome out = replay_sim(trace, "exact", replay_options);
  EXPECT_TRUE(out.interrupted);
  EXPECT_LT(out.result.metrics.requests, trace.allocation_count());
}

}  // namespace
}  // namespace alloclab
