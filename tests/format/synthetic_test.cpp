#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

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

TEST(Synthetic, stacks_leave_the_events_as_they_were) {
  SyntheticOptions options;
  options.shape = SyntheticShape::transformer;
  options.runs = 3;
  const Trace plain = generate_synthetic(options);
  options.stacks = 500;
  const Trace stacked = generate_synthetic(options);
  ASSERT_EQ(plain.size(), stacked.size());
  for (std::size_t i = 0; i < plain.size(); ++i) {
    ASSERT_EQ(plain.op(i), stacked.op(i)) << i;
    ASSERT_EQ(plain.address(i), stacked.address(i)) << i;
    ASSERT_EQ(plain.size_of(i), stacked.size_of(i)) << i;
    ASSERT_EQ(plain.time_ns(i), stacked.time_ns(i)) << i;
    ASSERT_EQ(plain.stack_id(i), 0u);
  }
  EXPECT_TRUE(plain.stacks().empty());
}

// The shape of a program's stacks: every allocation has one, all of the asked depth, all
// different, sharing their outer frames and parting at the inner ones; a few make most.
TEST(Synthetic, stacks_form_a_tree_and_a_few_allocate_most) {
  SyntheticOptions options;
  options.shape = SyntheticShape::transformer;
  options.min_events = 1'000'000;
  options.stacks = 4000;
  options.stack_depth = 16;
  const Trace t = generate_synthetic(options);
  ASSERT_EQ(t.stacks().size(), 4000u);
  std::set<std::vector<std::uint32_t>> distinct(t.stacks().begin(), t.stacks().end());
  EXPECT_EQ(distinct.size(), 4000u) << "stacks repeat";
  std::set<std::uint32_t> outermost, innermost;
  for (const std::vector<std::uint32_t>& stack : t.stacks()) {
    ASSERT_EQ(stack.size(), 16u);
    outermost.insert(stack.back());
    innermost.insert(stack.front());
  }
  EXPECT_EQ(outermost.size(), 1u) << "every stack starts in the same function";
  EXPECT_EQ(innermost.size(), 4000u);
  std::vector<std::uint64_t> per_stack(4001, 0);
  std::uint64_t allocations = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t.op(i) != Op::alloc) continue;
    ++allocations;
    const std::uint32_t id = t.stack_id(i);
    ASSERT_GE(id, 1u) << "allocation " << i << " has no stack";
    ASSERT_LE(id, 4000u);
    ++per_stack[id];
  }
  std::uint64_t first_32 = 0;
  for (std::uint32_t id = 1; id <= 32; ++id) first_32 += per_stack[id];
  EXPECT_GT(first_32, allocations * 7 / 10) << "32 stacks make three allocations in four";
  EXPECT_GT(
      std::count_if(per_stack.begin() + 33, per_stack.end(), [](std::uint64_t n) { return n > 0; }),
      3000)
      << "the others are used too";
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
