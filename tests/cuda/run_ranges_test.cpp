// NVTX ranges -> runs (record --run-range), on constructed calls.
#include <gtest/gtest.h>

#include "tracer/cuda/run_ranges.hpp"

namespace alloclab::cuda {
namespace {

TEST(CudaRunRanges, matching_push_and_its_pop_make_one_run) {
  RunRanges runs("step");
  const auto begin = runs.push(1, 10, "step");
  ASSERT_TRUE(begin);
  EXPECT_EQ(begin->op, Op::run_begin);
  EXPECT_EQ(begin->label, "step");
  EXPECT_EQ(begin->time_ns, 10u);
  EXPECT_TRUE(runs.in_run());
  const auto end = runs.pop(1, 20);
  ASSERT_TRUE(end);
  EXPECT_EQ(end->op, Op::run_end);
  EXPECT_EQ(end->time_ns, 20u);
  EXPECT_FALSE(runs.in_run());
}

TEST(CudaRunRanges, other_names_are_ignored_and_their_pops_do_not_end_the_run) {
  RunRanges runs("step");
  EXPECT_FALSE(runs.push(1, 1, "forward"));
  EXPECT_FALSE(runs.pop(1, 2));
  ASSERT_TRUE(runs.push(1, 3, "step"));
  EXPECT_FALSE(runs.push(1, 4, "layer1"));  // inside the run
  EXPECT_FALSE(runs.pop(1, 5));             // pops layer1
  EXPECT_TRUE(runs.in_run());
  EXPECT_TRUE(runs.pop(1, 6));  // pops step
}

TEST(CudaRunRanges, nested_matching_ranges_make_one_run) {
  RunRanges runs("run*");
  ASSERT_TRUE(runs.push(1, 1, "run"));
  EXPECT_FALSE(runs.push(1, 2, "run-inner"));
  EXPECT_FALSE(runs.pop(1, 3));
  EXPECT_TRUE(runs.pop(1, 4));
}

TEST(CudaRunRanges, another_threads_pop_does_not_end_the_run) {
  RunRanges runs("step");
  ASSERT_TRUE(runs.push(1, 1, "step"));
  EXPECT_FALSE(runs.push(2, 2, "step"));  // a run is open already
  EXPECT_FALSE(runs.pop(2, 3));
  EXPECT_TRUE(runs.in_run());
  EXPECT_TRUE(runs.pop(1, 4));
}

TEST(CudaRunRanges, pop_without_push_is_ignored) {
  RunRanges runs("*");
  EXPECT_FALSE(runs.pop(1, 1));
  ASSERT_TRUE(runs.push(1, 2, "x"));
  EXPECT_TRUE(runs.pop(1, 3));
  EXPECT_FALSE(runs.pop(1, 4));
}

TEST(CudaRunRanges, start_end_ranges_are_matched_by_id_across_threads) {
  RunRanges runs("epoch");
  ASSERT_TRUE(runs.start(77, 1, 1, "epoch"));
  EXPECT_FALSE(runs.end(78, 1, 2));     // some other range
  const auto end = runs.end(77, 2, 3);  // ended by another thread
  ASSERT_TRUE(end);
  EXPECT_EQ(end->thread, 2u);
  EXPECT_FALSE(runs.in_run());
}

TEST(CudaRunRanges, glob_patterns_and_empty_names) {
  RunRanges runs("iter_[0-9]*");
  EXPECT_TRUE(runs.matches("iter_3"));
  EXPECT_FALSE(runs.matches("iter_x"));
  EXPECT_FALSE(runs.matches(""));
  EXPECT_FALSE(RunRanges("").matches("anything"));
}

}  // namespace
}  // namespace alloclab::cuda
