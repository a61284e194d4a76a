#include <gtest/gtest.h>

#include "alloclab/format/resolve.hpp"
#include "alloclab/format/summary.hpp"
#include "alloclab/format/synthetic.hpp"

namespace alloclab {
namespace {

TEST(Synthetic, same_options_give_the_same_trace) {
  SyntheticOptions options;
  options.shape = SyntheticShape::transformer;
  options.runs = 5;
  options.seed = 9;
  EXPECT_TRUE(generate_synthetic(options) == generate_synthetic(options));
  SyntheticOptions other = options;
  other.seed = 10;
  EXPECT_FALSE(generate_synthetic(options) == generate_synthetic(other));
}

TEST(Synthetic, every_shape_resolves_without_anomalies_or_leaks) {
  for (const std::string& name : synthetic_shape_names()) {
    SyntheticOptions options;
    options.shape = *parse_synthetic_shape(name);
    options.runs = 4;
    const ResolvedTrace r = resolve(generate_synthetic(options));
    EXPECT_EQ(r.anomalies.total(), 0u) << name;
    EXPECT_EQ(r.anomalies.leaks, 0u) << name;
    EXPECT_GT(r.allocation_count(), 100u) << name;
  }
}

TEST(Synthetic, cnn_runs_have_identical_allocation_counts) {
  SyntheticOptions options;
  options.runs = 3;
  const Trace t = generate_synthetic(options);
  const TraceSummary s = summarize(t, resolve(t));
  ASSERT_EQ(s.runs.size(), 3u);
  EXPECT_FALSE(s.implicit_run);
  EXPECT_EQ(s.runs[0].allocations, s.runs[1].allocations);
  EXPECT_EQ(s.runs[0].peak_live_bytes, s.runs[2].peak_live_bytes);
}

TEST(Synthetic, min_events_completes_the_last_run) {
  SyntheticOptions options;
  options.min_events = 1000;
  const Trace t = generate_synthetic(options);
  EXPECT_GE(t.size(), 1000u);
  EXPECT_EQ(t.op(t.size() - 1), Op::run_end);
}

}  // namespace
}  // namespace alloclab
