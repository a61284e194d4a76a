// Conformance tests for `fifo-shrink` (docs/strategy-contract.md; dfdx PR #709), worked by hand.
#include <gtest/gtest.h>

#include "alloclab/strategies/fifo_shrink.hpp"
#include "strategy_test_support.hpp"

namespace alloclab {
namespace {

using testing::Stack;

struct FifoStack : Stack {
  explicit FifoStack(std::string_view spec) : Stack(spec) {
    fifo = dynamic_cast<FifoShrinkStrategy*>(strategy.get());
  }
  void check() const { fifo->check_invariants(); }
  FifoShrinkStrategy* fifo = nullptr;
};

// dfdx PR #709, test_shrink: limit 16 bytes; blocks of 1, 1, 2, 4, 8 bytes dropped in, then 8,
// 1 and 12. Every block is allocated first (all misses: nothing is cached yet), so that the
// frees drop exactly these blocks into the cache in this order.
//   free 1,1,2,4,8   size 16, queue [1 1 2 4 8]; 16 > 16 is false: nothing evicted
//   free 8           size 24, queue [1 1 2 4 8 8]; evict 1, 1, 2, 4 (4 evictions) -> 16
//   free 1           size 17, queue [8 8 1]; evict an 8 (5) -> 9
//   free 12          size 21, queue [8 1 12]; evict the other 8 (6) -> 13
TEST(FifoShrink, dfdx_709_test_shrink_13_bytes_after_6_evictions) {
  FifoStack s("fifo-shrink:max=16");
  std::vector<Block> blocks;
  for (std::uint64_t size : {1, 1, 2, 4, 8, 8, 1, 12}) blocks.push_back(s.alloc(size));
  EXPECT_EQ(s.stats().hits, 0u);
  for (int i = 0; i < 5; ++i) s.free(blocks[static_cast<std::size_t>(i)]);
  EXPECT_EQ(s.fifo->cached_blocks(), 5u);
  EXPECT_EQ(s.stats().cached_bytes, 16u);
  EXPECT_EQ(s.stats().evictions, 0u);
  s.free(blocks[5]);
  EXPECT_EQ(s.fifo->cached_blocks(), 2u);
  EXPECT_EQ(s.stats().cached_bytes, 16u);
  EXPECT_EQ(s.stats().evictions, 4u);
  s.free(blocks[6]);
  EXPECT_EQ(s.fifo->cached_blocks(), 2u);
  EXPECT_EQ(s.stats().cached_bytes, 9u);
  EXPECT_EQ(s.stats().evictions, 5u);
  s.free(blocks[7]);
  EXPECT_EQ(s.fifo->cached_blocks(), 2u);
  EXPECT_EQ(s.stats().cached_bytes, 13u);
  EXPECT_EQ(s.stats().evictions, 6u);
  EXPECT_EQ(s.upstream().frees, 6u);
  EXPECT_EQ(s.upstream().reserved_bytes, 13u);
  s.check();
}

// dfdx PR #709, test_pop_and_shrink: as above, but a 1 and the 2 are reused before the second
// 8 is dropped in.
//   free 1a,1b,2,4,8  size 16, queue [1 1 2 4 8]
//   alloc 1 -> 1b     size 15, ignore[1] = 1
//   alloc 2 -> 2      size 13, ignore[2] = 1
//   free 8'           size 21, queue [1 1 2 4 8 8']:
//                     1 tombstone; 1 evicts 1a (1); 2 tombstone; 4 evicts 4 (2) -> 16
//   alloc 8 -> 8'     size 8 (the newest 8)
//   free 4'           size 12
TEST(FifoShrink, dfdx_709_test_pop_and_shrink_16_bytes_after_2_evictions) {
  FifoStack s("fifo-shrink:max=16");
  const Block a1 = s.alloc(1);
  const Block b1 = s.alloc(1);
  const Block two = s.alloc(2);
  const Block four = s.alloc(4);
  const Block eight = s.alloc(8);
  const Block eight2 = s.alloc(8);
  const Block four2 = s.alloc(4);
  for (const Block& b : {a1, b1, two, four, eight}) s.free(b);
  EXPECT_EQ(s.stats().cached_bytes, 16u);
  EXPECT_EQ(s.alloc(1), b1);
  EXPECT_EQ(s.alloc(2), two);
  EXPECT_EQ(s.fifo->cached_blocks(), 3u);
  EXPECT_EQ(s.stats().cached_bytes, 13u);
  s.check();
  s.free(eight2);
  EXPECT_EQ(s.fifo->cached_blocks(), 2u);
  EXPECT_EQ(s.stats().cached_bytes, 16u);
  EXPECT_EQ(s.stats().evictions, 2u);
  EXPECT_FALSE(s.sim.owns(a1));    // the older 1 went upstream...
  EXPECT_FALSE(s.sim.owns(four));  // ...and the 4
  EXPECT_EQ(s.fifo->queue_length(), 2u);
  s.check();
  EXPECT_EQ(s.alloc(8), eight2);
  EXPECT_EQ(s.stats().cached_bytes, 8u);
  s.free(four2);
  EXPECT_EQ(s.fifo->cached_blocks(), 2u);
  EXPECT_EQ(s.stats().cached_bytes, 12u);
  EXPECT_EQ(s.stats().evictions, 2u);
  s.check();
}

TEST(FifoShrink, evicts_oldest_drop_first) {
  FifoStack s("fifo-shrink:max=300");
  const Block a = s.alloc(100);
  const Block b = s.alloc(200);
  const Block c = s.alloc(150);
  s.free(a);
  s.free(b);
  s.free(c);  // 450 > 300: a (dropped first) goes, 350 > 300: b goes -> 150
  EXPECT_FALSE(s.sim.owns(a));
  EXPECT_FALSE(s.sim.owns(b));
  EXPECT_TRUE(s.sim.owns(c));
  EXPECT_EQ(s.stats().evictions, 2u);
  EXPECT_EQ(s.stats().cached_bytes, 150u);
  s.check();
}

TEST(FifoShrink, size_equal_to_max_is_kept) {
  FifoStack s("fifo-shrink:max=300");
  s.drop_in(100);
  const Block b = s.alloc(200);
  s.free(b);
  EXPECT_EQ(s.stats().cached_bytes, 300u);
  EXPECT_EQ(s.stats().evictions, 0u);
}

TEST(FifoShrink, a_block_larger_than_max_is_evicted_at_once) {
  FifoStack s("fifo-shrink:max=1000");
  s.drop_in(100);
  const Block big = s.alloc(5000);
  s.free(big);
  // Shrink pops in drop order: the older 100 first (still over), then the big block itself.
  EXPECT_FALSE(s.sim.owns(big));
  EXPECT_EQ(s.stats().evictions, 2u);
  EXPECT_EQ(s.stats().cached_bytes, 0u);
  EXPECT_EQ(s.fifo->queue_length(), 0u);
  s.check();
}

TEST(FifoShrink, max_items_bounds_the_number_of_blocks) {
  FifoStack s("fifo-shrink:max_items=2");
  const Block a = s.alloc(10);
  const Block b = s.alloc(20);
  const Block c = s.alloc(30);
  s.free(a);
  s.free(b);
  EXPECT_EQ(s.stats().evictions, 0u);
  s.free(c);  // 3 items > 2: the oldest (a) goes
  EXPECT_FALSE(s.sim.owns(a));
  EXPECT_EQ(s.stats().evictions, 1u);
  EXPECT_EQ(s.fifo->cached_blocks(), 2u);
  EXPECT_EQ(s.stats().cached_bytes, 50u);
  s.check();
}

TEST(FifoShrink, either_limit_triggers_eviction) {
  FifoStack s("fifo-shrink:max=1000,max_items=3");
  // One block dropped in four times: queue [100 100 100 100], ignore[100] = 3, one block.
  for (int i = 0; i < 4; ++i) s.drop_in(100);
  EXPECT_EQ(s.fifo->cached_blocks(), 1u);
  EXPECT_EQ(s.fifo->queue_length(), 4u);
  s.check();
  const Block a = s.alloc(100);  // the cached one (ignore[100] = 4)
  const Block b = s.alloc(100);
  const Block c = s.alloc(100);
  const Block d = s.alloc(100);
  // Freeing d makes 4 items > 3: four tombstones are popped, then the fifth entry evicts the
  // newest 100, d itself.
  for (const Block& x : {a, b, c, d}) s.free(x);
  EXPECT_EQ(s.fifo->cached_blocks(), 3u);
  EXPECT_EQ(s.stats().evictions, 1u);
  EXPECT_FALSE(s.sim.owns(d));
  EXPECT_EQ(s.fifo->queue_length(), 3u);
  s.check();
  // 1200 bytes > 1000 (and 4 items): evict c (1100 bytes, 3 items), then b (1000, 2 items).
  const Block e = s.alloc(900);
  s.free(e);
  EXPECT_EQ(s.stats().evictions, 3u);
  EXPECT_EQ(s.stats().cached_bytes, 1000u);
  EXPECT_EQ(s.fifo->cached_blocks(), 2u);
  EXPECT_TRUE(s.sim.owns(a));
  EXPECT_FALSE(s.sim.owns(b));
  EXPECT_FALSE(s.sim.owns(c));
  EXPECT_TRUE(s.sim.owns(e));
  s.check();
}

TEST(FifoShrink, hit_leaves_a_tombstone_that_the_next_shrink_consumes) {
  FifoStack s("fifo-shrink:max=250");
  const Block a = s.alloc(100);
  const Block b = s.alloc(100);
  const Block c = s.alloc(200);
  s.free(a);
  s.free(b);                   // queue [100 100], size 200
  EXPECT_EQ(s.alloc(100), b);  // the newest; ignore[100] = 1, queue unchanged
  EXPECT_EQ(s.fifo->queue_length(), 2u);
  s.check();
  s.free(c);  // size 300, queue [100 100 200]: front 100 is a tombstone; next 100 evicts a
  EXPECT_FALSE(s.sim.owns(a));
  EXPECT_EQ(s.stats().evictions, 1u);
  EXPECT_EQ(s.stats().cached_bytes, 200u);
  EXPECT_EQ(s.fifo->queue_length(), 1u);
  s.check();
}

TEST(FifoShrink, round_applies_to_matching_upstream_and_the_limit) {
  FifoStack s("fifo-shrink:round=64,max=128");
  const Block a = s.alloc(10);
  EXPECT_EQ(a.capacity, 64u);
  s.free(a);
  EXPECT_EQ(s.alloc(60), a);
  EXPECT_EQ(s.stats().slack_bytes, 0u);
  const Block b = s.alloc(65);
  EXPECT_EQ(b.capacity, 128u);
  s.free(a);
  s.free(b);  // 192 > 128: a evicted
  EXPECT_EQ(s.stats().evictions, 1u);
  EXPECT_EQ(s.stats().cached_bytes, 128u);
}

TEST(FifoShrink, best_fit_match_with_max_ratio) {
  FifoStack s("fifo-shrink:match=best-fit,max_ratio=2,max=10000");
  const Block a = s.alloc(300);
  const Block b = s.alloc(1000);
  s.free(a);
  s.free(b);
  EXPECT_EQ(s.alloc(200), a);  // 300 <= 400
  EXPECT_EQ(s.stats().slack_bytes, 100u);
  EXPECT_EQ(s.alloc(400).capacity, 400u);  // 1000 > 800: a miss
  EXPECT_EQ(s.alloc(500), b);
  EXPECT_EQ(s.stats().slack_bytes, 600u);
  s.check();
  s.free(b);  // sticky: back at 1000
  EXPECT_EQ(s.stats().cached_bytes, 1000u);
  s.check();
}

TEST(FifoShrink, max_ratio_needs_best_fit_matching) {
  EXPECT_THROW(Stack("fifo-shrink:max_ratio=2"), SpecError);
  EXPECT_THROW(Stack("fifo-shrink:match=best-fit,max_ratio=0.9"), SpecError);
}

TEST(FifoShrink, queue_stays_bounded_with_many_hits) {
  FifoStack s("fifo-shrink:max=1GiB");
  // A block freed and reused over and over: without compaction every cycle would leave a
  // tombstone entry in the queue forever.
  for (int i = 0; i < 100000; ++i) s.drop_in(4096);
  EXPECT_LE(s.fifo->queue_length(), 2048u);
  s.check();
  EXPECT_EQ(s.stats().hits, 99999u);
}

TEST(FifoShrink, upstream_failure_releases_the_cache_and_retries) {
  SimUpstreamOptions limit;
  limit.limit_bytes = 1000;
  Stack s("fifo-shrink:max=800", limit);
  s.drop_in(300);
  s.drop_in(400);
  EXPECT_EQ(s.alloc(500).capacity, 500u);
  EXPECT_EQ(s.stats().evictions, 2u);
  EXPECT_EQ(s.stats().cached_bytes, 0u);
  dynamic_cast<FifoShrinkStrategy&>(*s.strategy).check_invariants();
  EXPECT_EQ(dynamic_cast<FifoShrinkStrategy&>(*s.strategy).queue_length(), 0u);
}

TEST(FifoShrink, release_empties_cache_and_queue_without_evictions) {
  FifoStack s("fifo-shrink:max=1000");
  s.drop_in(100);
  s.drop_in(200);
  s.strategy->release();
  EXPECT_EQ(s.stats().evictions, 0u);
  EXPECT_EQ(s.upstream().frees, 2u);
  EXPECT_EQ(s.fifo->queue_length(), 0u);
  s.check();
}

}  // namespace
}  // namespace alloclab
