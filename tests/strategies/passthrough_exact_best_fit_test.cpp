// Conformance tests for `passthrough`, `exact` and `best-fit` (docs/strategy-contract.md), worked
// by hand.
#include <gtest/gtest.h>

#include "alloclab/strategies/best_fit.hpp"
#include "alloclab/strategies/exact.hpp"
#include "alloclab/strategies/passthrough.hpp"
#include "strategy_test_support.hpp"

namespace alloclab {
namespace {

using testing::Stack;

TEST(Passthrough, every_alloc_is_a_miss_and_every_free_goes_upstream) {
  Stack s("passthrough");
  const Block a = s.alloc(100);
  EXPECT_EQ(a.capacity, 100u);
  s.free(a);
  EXPECT_EQ(s.upstream().frees, 1u);
  EXPECT_EQ(s.upstream().reserved_bytes, 0u);
  const Block b = s.alloc(100);
  s.free(b);
  EXPECT_EQ(s.stats().requests, 2u);
  EXPECT_EQ(s.stats().hits, 0u);
  EXPECT_EQ(s.stats().cached_bytes, 0u);
  EXPECT_EQ(s.stats().evictions, 0u);
  EXPECT_EQ(s.upstream().allocs, 2u);
  EXPECT_EQ(s.upstream().frees, 2u);
}

TEST(Passthrough, upstream_failure_is_counted_without_retry) {
  SimUpstreamOptions limit;
  limit.limit_bytes = 100;
  Stack s("passthrough", limit);
  EXPECT_FALSE(s.strategy->allocate(101, 0));
  EXPECT_EQ(s.stats().failed, 1u);
  EXPECT_EQ(s.upstream().failed, 1u);  // nothing cached, nothing to retry for
}

TEST(Exact, reuses_only_the_same_capacity_newest_first) {
  Stack s("exact");
  const Block a = s.alloc(64);
  const Block b = s.alloc(64);
  const Block c = s.alloc(128);
  s.free(a);
  s.free(b);
  s.free(c);
  EXPECT_EQ(s.stats().cached_bytes, 256u);
  EXPECT_EQ(s.alloc(64), b);  // LIFO: the most recently freed
  EXPECT_EQ(s.alloc(64), a);
  const Block d = s.alloc(64);  // none left of 64: a miss, even though 128 is cached
  EXPECT_NE(d, c);
  EXPECT_EQ(d.capacity, 64u);
  EXPECT_EQ(s.alloc(100).capacity, 100u);  // 128 is never used for 100
  EXPECT_EQ(s.stats().requests, 7u);
  EXPECT_EQ(s.stats().hits, 2u);
  EXPECT_EQ(s.stats().slack_bytes, 0u);
  EXPECT_EQ(s.stats().cached_bytes, 128u);
  EXPECT_EQ(s.upstream().allocs, 5u);
}

TEST(Exact, is_unbounded_and_never_frees_upstream_before_release) {
  Stack s("exact");
  for (int i = 0; i < 100; ++i) s.drop_in(1000 + static_cast<std::uint64_t>(i));
  EXPECT_EQ(s.upstream().frees, 0u);
  EXPECT_EQ(s.stats().evictions, 0u);
  s.strategy->release();
  EXPECT_EQ(s.upstream().frees, 100u);
  EXPECT_EQ(s.stats().evictions, 0u);  // the final clean-up is not an eviction
  EXPECT_EQ(s.stats().cached_bytes, 0u);
  EXPECT_EQ(s.upstream().reserved_bytes, 0u);
}

TEST(Exact, round_applies_before_matching_and_before_asking_upstream) {
  Stack s("exact:round=256");
  const Block a = s.alloc(100);
  EXPECT_EQ(a.capacity, 256u);  // upstream was asked for the rounded size
  s.free(a);
  EXPECT_EQ(s.alloc(200), a);            // 200 rounds to 256 as well: a hit
  EXPECT_EQ(s.stats().slack_bytes, 0u);  // slack counts against the rounded request
  EXPECT_EQ(s.alloc(0).capacity, 0u);    // 0 stays 0
  EXPECT_EQ(s.alloc(257).capacity, 512u);
}

TEST(Exact, rounding_past_64_bits_fails_the_request) {
  Stack s("exact:round=1KiB");
  EXPECT_FALSE(s.strategy->allocate(UINT64_MAX - 10, 0));
  EXPECT_EQ(s.stats().failed, 1u);
  EXPECT_EQ(s.upstream().allocs + s.upstream().failed, 0u);
}

TEST(Exact, upstream_failure_releases_the_cache_and_retries) {
  SimUpstreamOptions limit;
  limit.limit_bytes = 1000;
  Stack s("exact", limit);
  s.drop_in(300);
  s.drop_in(400);
  const Block live = s.alloc(200);
  EXPECT_EQ(s.upstream().reserved_bytes, 900u);
  // 500 does not fit next to 900 reserved; the cache (700) goes back, then 500 fits.
  const Block big = s.alloc(500);
  EXPECT_EQ(big.capacity, 500u);
  EXPECT_EQ(s.stats().cached_bytes, 0u);
  EXPECT_EQ(s.stats().evictions, 2u);  // returned upstream while cached
  EXPECT_EQ(s.stats().failed, 0u);
  EXPECT_EQ(s.upstream().failed, 1u);
  EXPECT_EQ(s.upstream().frees, 2u);
  EXPECT_EQ(s.upstream().reserved_bytes, 700u);
  // Still too big after the cache is empty: failed, and no retry since nothing was released.
  EXPECT_FALSE(s.strategy->allocate(301, 0));
  EXPECT_EQ(s.stats().failed, 1u);
  EXPECT_EQ(s.upstream().failed, 2u);
  // A request that fails even after releasing a non-empty cache: one retry, then failed.
  s.free(live);
  EXPECT_FALSE(s.strategy->allocate(600, 0));
  EXPECT_EQ(s.stats().evictions, 3u);
  EXPECT_EQ(s.stats().failed, 2u);
  EXPECT_EQ(s.upstream().failed, 4u);
  EXPECT_EQ(s.stats().requests, 6u);
  s.free(big);
}

// The index remembers where the capacity it last looked up is in its own map; a copy must
// look in its own.
TEST(Exact, a_copy_of_the_index_takes_its_blocks_from_its_own_map) {
  detail::ExactIndex original;
  original.add(Block{0x1000, 64});
  ASSERT_TRUE(original.take_newest(64));  // 64 is the capacity looked up last
  original.add(Block{0x2000, 64});
  detail::ExactIndex copy(original);
  const std::optional<Block> taken = copy.take_newest(64);
  ASSERT_TRUE(taken);
  EXPECT_EQ(taken->address, 0x2000u);
  EXPECT_EQ(copy.count(64), 0u);
  EXPECT_EQ(original.count(64), 1u);
  detail::ExactIndex assigned;
  assigned = original;
  assigned.add(Block{0x3000, 64});
  EXPECT_EQ(assigned.count(64), 2u);
  EXPECT_EQ(original.count(64), 1u);
}

TEST(BestFit, takes_the_smallest_capacity_that_fits_newest_first) {
  Stack s("best-fit");
  const Block a = s.alloc(100);
  const Block b = s.alloc(300);
  const Block c = s.alloc(200);
  const Block d = s.alloc(200);
  s.free(a);
  s.free(b);
  s.free(c);
  s.free(d);
  EXPECT_EQ(s.alloc(150), d);  // smallest c >= 150 is 200; among the two, the newest
  EXPECT_EQ(s.alloc(150), c);
  EXPECT_EQ(s.alloc(150), b);              // then 300
  EXPECT_EQ(s.alloc(150).capacity, 150u);  // only 100 is left: a miss
  EXPECT_EQ(s.alloc(100), a);
  EXPECT_EQ(s.stats().hits, 4u);
  EXPECT_EQ(s.stats().slack_bytes, 50u + 50 + 150 + 0);
}

TEST(BestFit, capacity_is_sticky) {
  Stack s("best-fit");
  const Block big = s.alloc(1000);
  s.free(big);
  const Block reused = s.alloc(10);
  EXPECT_EQ(reused, big);  // handed out whole: capacity 1000
  EXPECT_EQ(s.stats().slack_bytes, 990u);
  s.free(reused);
  EXPECT_EQ(s.stats().cached_bytes, 1000u);  // back in the cache at its full capacity
  EXPECT_EQ(s.alloc(1000), big);             // and matches a request of 1000 again
  EXPECT_EQ(s.stats().slack_bytes, 990u);
}

TEST(BestFit, max_ratio_bounds_the_capacity_used) {
  Stack s("best-fit:max_ratio=1.7");
  const Block b17 = s.alloc(17);
  const Block b18 = s.alloc(18);
  s.free(b18);
  s.free(b17);
  // 17 <= 1.7 * 10 exactly (no floating point): a hit on 17, the smallest that fits.
  EXPECT_EQ(s.alloc(10), b17);
  // 18 > 1.7 * 10: a miss.
  EXPECT_EQ(s.alloc(10).capacity, 10u);
  EXPECT_EQ(s.alloc(11), b18);  // 18 <= 18.7
  EXPECT_EQ(s.stats().hits, 2u);
  EXPECT_EQ(s.stats().slack_bytes, 7u + 7);
}

TEST(BestFit, max_ratio_applies_to_the_rounded_request) {
  Stack s("best-fit:round=100,max_ratio=2");
  const Block b = s.alloc(400);
  s.free(b);
  // 150 rounds to 200 and 400 <= 2 * 200: a hit (against the unrounded 150 it would not be).
  EXPECT_EQ(s.alloc(150), b);
  EXPECT_EQ(s.stats().slack_bytes, 200u);  // 400 - 200, against the rounded request
}

TEST(BestFit, max_ratio_below_one_is_rejected) {
  EXPECT_THROW(Stack("best-fit:max_ratio=0.5"), SpecError);
  EXPECT_NO_THROW(Stack("best-fit:max_ratio=1"));
}

TEST(BestFit, upstream_failure_releases_the_cache_and_retries) {
  SimUpstreamOptions limit;
  limit.limit_bytes = 500;
  Stack s("best-fit", limit);
  s.drop_in(100);
  s.drop_in(200);
  EXPECT_EQ(s.alloc(400).capacity, 400u);  // no cached block fits; 300 cached + 400 > 500
  EXPECT_EQ(s.stats().evictions, 2u);
  EXPECT_EQ(s.stats().failed, 0u);
  EXPECT_EQ(s.stats().cached_bytes, 0u);
}

}  // namespace
}  // namespace alloclab
