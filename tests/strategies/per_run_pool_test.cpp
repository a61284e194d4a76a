// Conformance tests for `per-run-pool` and the `rten` preset (docs/strategy-contract.md), worked by
// hand.
#include <gtest/gtest.h>

#include "alloclab/strategies/per_run_pool.hpp"
#include "strategy_test_support.hpp"

namespace alloclab {
namespace {

using testing::Stack;

TEST(PerRunPool, takes_smallest_capacity_that_fits) {
  Stack s("per-run-pool");
  s.strategy->begin_run();
  const Block a = s.alloc(300);
  const Block b = s.alloc(100);
  const Block c = s.alloc(200);
  s.free(a);
  s.free(b);
  s.free(c);
  EXPECT_EQ(s.alloc(150), c);  // 200 is the smallest >= 150, though 300 was added first
  EXPECT_EQ(s.alloc(50), b);
  EXPECT_EQ(s.alloc(250), a);
  EXPECT_EQ(s.stats().hits, 3u);
  EXPECT_EQ(s.stats().slack_bytes, 50u + 50 + 50);
  EXPECT_EQ(s.alloc(10).capacity, 10u);  // the pool is empty: a miss
}

TEST(PerRunPool, ties_go_to_the_block_added_earliest) {
  Stack s("per-run-pool");
  s.strategy->begin_run();
  const Block a = s.alloc(100);
  const Block b = s.alloc(100);
  const Block c = s.alloc(100);
  s.free(b);
  s.free(a);
  s.free(c);
  EXPECT_EQ(s.alloc(100), b);  // FIFO among equal capacities (rten), unlike exact's LIFO
  EXPECT_EQ(s.alloc(60), a);
  s.free(b);  // b goes to the back
  EXPECT_EQ(s.alloc(100), c);
  EXPECT_EQ(s.alloc(100), b);
}

TEST(PerRunPool, min_size_applies_to_requests_and_to_freed_blocks) {
  Stack s("per-run-pool:min_size=128");
  s.strategy->begin_run();
  const Block small = s.alloc(100);
  const Block big = s.alloc(1000);
  s.free(small);  // capacity 100 < 128: straight back upstream, not cached
  EXPECT_EQ(s.upstream().frees, 1u);
  EXPECT_EQ(s.stats().cached_bytes, 0u);
  EXPECT_EQ(s.stats().evictions, 0u);
  s.free(big);
  EXPECT_EQ(s.stats().cached_bytes, 1000u);
  // A request below min_size is a miss even though the 1000 block would fit.
  EXPECT_EQ(s.alloc(127).capacity, 127u);
  EXPECT_EQ(s.stats().hits, 0u);
  EXPECT_EQ(s.alloc(128), big);  // at min_size it may use the pool
}

TEST(PerRunPool, min_size_is_checked_after_round) {
  Stack s("per-run-pool:round=100,min_size=128");
  s.strategy->begin_run();
  const Block b = s.alloc(500);
  s.free(b);
  EXPECT_EQ(s.alloc(101), b);  // 101 -> 200 >= 128: uses the pool
  EXPECT_EQ(s.stats().slack_bytes, 300u);
}

TEST(PerRunPool, run_end_returns_every_pooled_block_as_evictions) {
  Stack s("per-run-pool");
  s.strategy->begin_run();
  const Block a = s.alloc(100);
  const Block b = s.alloc(200);
  const Block live = s.alloc(300);
  s.free(a);
  s.free(b);
  s.strategy->end_run();
  EXPECT_EQ(s.stats().evictions, 2u);
  EXPECT_EQ(s.upstream().frees, 2u);
  EXPECT_EQ(s.stats().cached_bytes, 0u);
  EXPECT_EQ(s.upstream().reserved_bytes, 300u);  // the live block stays live
  EXPECT_TRUE(s.sim.owns(live));
}

TEST(PerRunPool, outside_a_run_alloc_is_a_miss_and_free_goes_upstream) {
  Stack s("per-run-pool");
  const Block a = s.alloc(100);
  s.free(a);
  EXPECT_EQ(s.upstream().frees, 1u);
  EXPECT_EQ(s.stats().evictions, 0u);
  EXPECT_EQ(s.stats().cached_bytes, 0u);
  s.alloc(100);
  EXPECT_EQ(s.stats().hits, 0u);
  // After a run ended, the same holds.
  s.strategy->begin_run();
  s.drop_in(50);
  s.strategy->end_run();
  s.alloc(50);
  EXPECT_EQ(s.stats().hits, 0u);
}

TEST(PerRunPool, blocks_live_across_run_end_enter_a_later_runs_pool) {
  Stack s("per-run-pool");
  s.strategy->begin_run();
  const Block carried = s.alloc(400);
  s.strategy->end_run();
  s.strategy->begin_run();
  s.free(carried);  // freed during the second run: pooled there
  EXPECT_EQ(s.stats().cached_bytes, 400u);
  EXPECT_EQ(s.alloc(400), carried);
  EXPECT_EQ(s.stats().hits, 1u);
}

TEST(PerRunPool, begin_run_inside_a_run_ends_it_first_and_stray_run_end_is_ignored) {
  Stack s("per-run-pool");
  s.strategy->end_run();  // outside a run: nothing happens
  s.strategy->begin_run();
  s.drop_in(100);
  s.strategy->begin_run();  // ends the first run: its pool goes upstream
  EXPECT_EQ(s.stats().evictions, 1u);
  EXPECT_EQ(s.stats().cached_bytes, 0u);
  s.drop_in(100);
  EXPECT_EQ(s.stats().cached_bytes, 100u);  // the second run pools again
  s.strategy->end_run();
  s.strategy->end_run();
  EXPECT_EQ(s.stats().evictions, 2u);
}

TEST(PerRunPool, release_returns_the_pool_without_evictions) {
  Stack s("per-run-pool");
  s.strategy->begin_run();
  s.drop_in(100);
  s.strategy->release();
  EXPECT_EQ(s.stats().evictions, 0u);
  EXPECT_EQ(s.upstream().frees, 1u);
  EXPECT_EQ(s.upstream().reserved_bytes, 0u);
}

TEST(PerRunPool, upstream_failure_releases_the_pool_and_retries) {
  SimUpstreamOptions limit;
  limit.limit_bytes = 1000;
  Stack s("per-run-pool", limit);
  s.strategy->begin_run();
  s.drop_in(300);
  const Block b = s.alloc(400);  // 300 does not fit 400: a miss
  s.free(b);
  EXPECT_EQ(s.stats().cached_bytes, 700u);
  EXPECT_EQ(s.alloc(800).capacity, 800u);
  EXPECT_EQ(s.stats().evictions, 2u);
  EXPECT_EQ(s.stats().failed, 0u);
  EXPECT_FALSE(s.strategy->allocate(300, 0));
  EXPECT_EQ(s.stats().failed, 1u);
}

TEST(Rten, is_per_run_pool_with_min_size_128) {
  Stack s("rten");
  s.strategy->begin_run();
  const Block small = s.alloc(127);
  s.free(small);
  EXPECT_EQ(s.stats().cached_bytes, 0u);  // below 128: straight upstream
  s.drop_in(128);
  EXPECT_EQ(s.stats().cached_bytes, 128u);
  EXPECT_EQ(s.alloc(100).capacity, 100u);  // request below 128: a miss
  EXPECT_EQ(s.stats().hits, 0u);
  Stack overridden("rten:min_size=0,round=64");
  overridden.strategy->begin_run();
  const Block a = overridden.alloc(10);
  EXPECT_EQ(a.capacity, 64u);
  overridden.free(a);
  EXPECT_EQ(overridden.alloc(20), a);
}

}  // namespace
}  // namespace alloclab
