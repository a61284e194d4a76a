#include <gtest/gtest.h>

#include "alloclab/format/resolve.hpp"
#include "alloclab/format/trim.hpp"
#include "trace_test_util.hpp"

namespace alloclab {
namespace {

using test::alloc_event;
using test::free_event;
using test::marker;

TEST(Trim, keeps_the_runs_and_drops_frees_of_blocks_allocated_before_them) {
  const Trace t = test::make_trace(
      {alloc_event(0x10, 100),  // weights: allocated before the runs
       alloc_event(0x20, 5), free_event(0x20), marker(Op::run_begin, "one"), alloc_event(0x30, 8),
       free_event(0x10),                         // dropped
       free_event(0x30), alloc_event(0x10, 64),  // 0x10 reused inside the window: kept
       marker(Op::run_end), marker(Op::run_begin, "two"), free_event(0x10), marker(Op::run_end),
       alloc_event(0x40, 1), free_event(0x40)});
  TrimStats stats;
  const Trace trimmed = trim_to_runs(t, &stats);
  EXPECT_EQ(stats.dropped_before, 3u);
  EXPECT_EQ(stats.dropped_after, 2u);
  EXPECT_EQ(stats.dropped_frees_of_earlier_blocks, 1u);
  EXPECT_EQ(trimmed.size(), 8u);
  EXPECT_EQ(trimmed.op(0), Op::run_begin);
  EXPECT_EQ(trimmed.label(0), "one");
  const ResolvedTrace r = resolve(trimmed);
  EXPECT_EQ(r.anomalies.total(), 0u);
  EXPECT_EQ(r.anomalies.leaks, 0u);
  EXPECT_EQ(r.runs.size(), 2u);
  EXPECT_EQ(trimmed.metadata["trimmed"]["dropped_frees_of_earlier_blocks"], 1);
}

TEST(Trim, a_trace_without_runs_is_unchanged) {
  const Trace t = test::make_trace({alloc_event(0x10, 1), free_event(0x10)});
  EXPECT_TRUE(trim_to_runs(t) == t);
}

}  // namespace
}  // namespace alloclab
