// A replay cursor: stepped to any operation, in steps of any size, it holds the state the whole
// replay had there (reserved and live bytes after each operation, as a series of one point per
// operation records them), the strategy's segments add up to that reserved figure, and the first
// failure under a memory limit is the replay's.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>

#include "alloclab/format/resolve.hpp"
#include "alloclab/format/synthetic.hpp"
#include "alloclab/replay/replay_cursor.hpp"
#include "alloclab/replay/sim_replay.hpp"
#include "alloclab/strategies/pytorch.hpp"

namespace alloclab {
namespace {

ResolvedTrace synthetic_trace(SyntheticShape shape, std::uint64_t runs) {
  SyntheticOptions options;
  options.shape = shape;
  options.runs = runs;
  options.seed = 7;
  return resolve(generate_synthetic(options));
}

std::uint64_t segment_bytes(const ReplayCursor& cursor) {
  std::uint64_t total = 0;
  for (std::size_t lane = 0; lane < cursor.lane_count(); ++lane) {
    const auto& strategy = dynamic_cast<const PyTorchCachingStrategy&>(cursor.lane_strategy(lane));
    for (const PyTorchSegmentInfo& s : strategy.segments()) {
      std::uint64_t pieces = 0;
      for (const PyTorchBlockInfo& b : s.blocks) pieces += b.size;
      EXPECT_EQ(pieces, s.size) << "segment at " << s.address;
      total += s.size;
    }
  }
  return total;
}

TEST(ReplayCursor, stepped_in_uneven_steps_it_has_the_replays_state_after_every_operation) {
  const ResolvedTrace trace = synthetic_trace(SyntheticShape::transformer, 40);
  ASSERT_GT(trace.ops.size(), 1000u);
  ReplayOptions options;
  options.max_series_points = trace.ops.size();  // one point per operation: its exact state
  const StrategyResult whole = replay_sim(trace, "pytorch", options).result;
  ASSERT_EQ(whole.series.size(), trace.ops.size());

  ReplayCursor cursor(trace, "pytorch");
  EXPECT_EQ(cursor.position(), 0u);
  EXPECT_EQ(cursor.reserved_bytes(), 0u);
  std::mt19937_64 random(3);
  std::size_t checked = 0;
  while (cursor.position() < trace.ops.size()) {
    cursor.advance_to(cursor.position() + 1 + random() % 97);
    const std::uint64_t k = cursor.position() - 1;  // the state is the one after operation k
    ASSERT_EQ(cursor.reserved_bytes(), whole.series[k].reserved_max) << "after operation " << k;
    ASSERT_EQ(cursor.live_bytes(), whole.series[k].live_max) << "after operation " << k;
    ASSERT_EQ(segment_bytes(cursor), cursor.reserved_bytes()) << "after operation " << k;
    ++checked;
  }
  EXPECT_GT(checked, 10u);
  // Past the end it stays at the end; it never goes back.
  cursor.advance_to(trace.ops.size() + 10);
  EXPECT_EQ(cursor.position(), trace.ops.size());
  cursor.advance_to(1);
  EXPECT_EQ(cursor.position(), trace.ops.size());
}

TEST(ReplayCursor, under_a_memory_limit_it_finds_the_replays_first_failure) {
  const ResolvedTrace trace = synthetic_trace(SyntheticShape::cnn, 4);
  ReplayOptions unlimited;
  const std::uint64_t peak =
      replay_sim(trace, "pytorch", unlimited).result.metrics.peak_reserved_bytes;
  ASSERT_GT(peak, 0u);
  ReplayOptions options;
  options.memory_limit = peak / 2;
  options.stop_at_first_failure = false;
  const StrategyResult whole = replay_sim(trace, "pytorch", options).result;
  ASSERT_TRUE(whole.first_failure.has_value());

  ReplayCursor cursor(trace, "pytorch", options);
  cursor.advance_to(whole.first_failure->op_index);
  EXPECT_FALSE(cursor.first_failure().has_value()) << "before the failed request";
  cursor.advance_to(whole.first_failure->op_index + 1);
  ASSERT_TRUE(cursor.first_failure().has_value());
  EXPECT_EQ(*cursor.first_failure(), *whole.first_failure);
  EXPECT_LE(cursor.reserved_bytes(), peak / 2);
  // Keep-going: the cursor goes on past it.
  cursor.advance_to(trace.ops.size());
  EXPECT_EQ(cursor.position(), trace.ops.size());
}

TEST(ReplayCursor, stops_at_the_first_failure_when_the_program_would_die_there) {
  const ResolvedTrace trace = synthetic_trace(SyntheticShape::cnn, 4);
  ReplayOptions options;
  options.memory_limit = 4 << 20;
  const StrategyResult whole = replay_sim(trace, "pytorch", options).result;
  ASSERT_TRUE(whole.stopped_at_first_failure);
  ReplayCursor cursor(trace, "pytorch", options);
  cursor.advance_to(trace.ops.size());
  EXPECT_EQ(cursor.position(), whole.first_failure->op_index + 1);
}

TEST(ReplayCursor, refuses_a_real_upstream_and_a_bad_spec) {
  const ResolvedTrace trace = synthetic_trace(SyntheticShape::cnn, 1);
  ReplayOptions real;
  real.upstream = "host-malloc";
  EXPECT_THROW(ReplayCursor(trace, "pytorch", real), std::invalid_argument);
  EXPECT_ANY_THROW(ReplayCursor(trace, "pytorch:no_such_key=1"));
}

}  // namespace
}  // namespace alloclab
