// Properties that must hold for every strategy on thousands of random traces
// (docs/strategy-contract.md).
#include <gtest/gtest.h>

#include "alloclab/format/synthetic.hpp"
#include "alloclab/replay/sim_replay.hpp"

namespace alloclab {
namespace {

// Small random traces with runs, reuse of sizes, sizes spanning bytes to megabytes.
ResolvedTrace random_trace(std::uint64_t seed) {
  SyntheticOptions options;
  options.seed = seed;
  switch (seed % 3) {
    case 0:
      options.shape = SyntheticShape::random;
      options.min_events = 300 + seed % 500;
      break;
    case 1:
      options.shape = SyntheticShape::transformer;
      options.runs = 1 + seed % 4;
      break;
    default:
      options.shape = SyntheticShape::cnn;
      options.runs = 1 + seed % 3;
      break;
  }
  return resolve(generate_synthetic(options));
}

Metrics checked(const ResolvedTrace& trace, const std::string& spec) {
  ReplayOptions options;
  options.check_invariants = true;  // reserved >= live, no block handed out twice
  options.max_series_points = 16;
  return replay_sim(trace, spec, options).result.metrics;
}

TEST(ReplayProperties, hold_for_every_strategy_on_random_traces) {
  const std::vector<std::string> specs = {"passthrough",
                                          "exact",
                                          "best-fit",
                                          "best-fit:max_ratio=1.5",
                                          "fifo-shrink:max=1MiB",
                                          "fifo-shrink:max=4MiB,match=best-fit",
                                          "fifo-shrink:max_items=8",
                                          "per-run-pool",
                                          "rten",
                                          "exact:round=512",
                                          "pytorch",
                                          "pytorch:max_split_size=20MiB"};
  for (std::uint64_t seed = 1; seed <= 120; ++seed) {
    const ResolvedTrace trace = random_trace(seed);
    Metrics live_reference;
    for (const std::string& spec : specs) {
      const Metrics m = checked(trace, spec);
      SCOPED_TRACE(spec + " seed " + std::to_string(seed));
      EXPECT_EQ(m.hits + m.misses, m.requests);
      EXPECT_EQ(m.requests, trace.allocation_count());
      EXPECT_GE(m.peak_reserved_bytes, m.peak_live_bytes);
      EXPECT_LE(m.evictions, m.upstream_frees);
      EXPECT_LE(m.upstream_frees, m.upstream_allocs);
      if (spec == "passthrough") {
        live_reference = m;
        EXPECT_EQ(m.peak_reserved_bytes, m.peak_live_bytes);
        EXPECT_EQ(m.hits, 0u);
      } else {
        EXPECT_EQ(m.peak_live_bytes, live_reference.peak_live_bytes);  // same for every strategy
      }
    }
  }
}

TEST(ReplayProperties, unlimited_fifo_shrink_equals_exact_and_best_fit) {
  for (std::uint64_t seed = 1; seed <= 150; ++seed) {
    const ResolvedTrace trace = random_trace(seed);
    SCOPED_TRACE("seed " + std::to_string(seed));
    EXPECT_EQ(checked(trace, "fifo-shrink"), checked(trace, "exact"));
    EXPECT_EQ(checked(trace, "fifo-shrink:match=best-fit"), checked(trace, "best-fit"));
    EXPECT_EQ(checked(trace, "best-fit:max_ratio=1"), checked(trace, "exact"));
    EXPECT_EQ(checked(trace, "dfdx"), checked(trace, "exact"));
    EXPECT_EQ(checked(trace, "rten"), checked(trace, "per-run-pool:min_size=128"));
  }
}

TEST(ReplayProperties, a_larger_limit_never_reserves_less_than_the_live_peak) {
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    const ResolvedTrace trace = random_trace(seed);
    const Metrics unlimited = checked(trace, "exact");
    const Metrics tight = checked(trace, "fifo-shrink:max=1");
    EXPECT_LE(tight.hits, unlimited.hits);
    EXPECT_LE(tight.peak_reserved_bytes, unlimited.peak_reserved_bytes);
    EXPECT_LE(tight.final_cached_bytes, 1u);
  }
}

}  // namespace
}  // namespace alloclab
