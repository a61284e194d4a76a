// SimUpstream and CountingUpstream.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "alloclab/strategies/upstream/counting.hpp"
#include "alloclab/strategies/upstream/sim.hpp"

namespace alloclab {
namespace {

TEST(SimUpstream, hands_out_exact_capacity_at_increasing_aligned_addresses) {
  SimUpstream sim;
  std::uint64_t previous_end = 0;
  for (std::uint64_t size : {1u, 255u, 256u, 257u, 4096u, 0u, 3u}) {
    const std::optional<Block> block = sim.allocate(size);
    ASSERT_TRUE(block);
    EXPECT_EQ(block->capacity, size);
    EXPECT_NE(block->address, 0u);
    EXPECT_EQ(block->address % SimUpstream::kAlignment, 0u);
    EXPECT_GE(block->address, previous_end);  // ranges never overlap
    previous_end = block->address + std::max<std::uint64_t>(size, 1);
  }
  EXPECT_EQ(sim.live_blocks(), 7u);
  EXPECT_EQ(sim.reserved_bytes(), 1u + 255 + 256 + 257 + 4096 + 0 + 3);
}

TEST(SimUpstream, never_reuses_an_address) {
  SimUpstream sim;
  const Block a = *sim.allocate(512);
  sim.deallocate(a);
  const Block b = *sim.allocate(512);
  EXPECT_GT(b.address, a.address);
  EXPECT_EQ(sim.reserved_bytes(), 512u);
}

TEST(SimUpstream, starts_at_the_configured_base) {
  SimUpstreamOptions options;
  options.base_address = 0x4000;
  SimUpstream sim(options);
  EXPECT_EQ(sim.allocate(1)->address, 0x4000u);
  EXPECT_EQ(sim.allocate(1)->address, 0x4100u);
  options.base_address = 0;
  EXPECT_THROW(SimUpstream{options}, std::invalid_argument);
  options.base_address = 100;
  EXPECT_THROW(SimUpstream{options}, std::invalid_argument);
}

TEST(SimUpstream, fails_beyond_the_limit_and_recovers_after_frees) {
  SimUpstreamOptions options;
  options.limit_bytes = 1000;
  SimUpstream sim(options);
  const Block a = *sim.allocate(600);
  EXPECT_FALSE(sim.allocate(401));
  const Block b = *sim.allocate(400);  // exactly at the limit is fine
  EXPECT_FALSE(sim.allocate(1));
  EXPECT_TRUE(sim.allocate(0));
  sim.deallocate(a);
  EXPECT_TRUE(sim.allocate(600));
  sim.deallocate(b);
  EXPECT_EQ(sim.reserved_bytes(), 600u);
}

TEST(SimUpstream, fails_cleanly_when_the_address_space_runs_out) {
  SimUpstream sim;
  EXPECT_FALSE(sim.allocate(UINT64_MAX));
  EXPECT_FALSE(sim.allocate(UINT64_MAX - 100));
  EXPECT_TRUE(sim.allocate(1ULL << 62));
  EXPECT_TRUE(sim.allocate(1ULL << 62));
  EXPECT_TRUE(sim.allocate(1ULL << 62));
  EXPECT_FALSE(sim.allocate(1ULL << 62));  // the base plus 4 * 2^62 does not fit
}

TEST(SimUpstream, detects_deallocation_of_blocks_it_does_not_hold) {
  SimUpstream sim;
  const Block a = *sim.allocate(100);
  EXPECT_THROW(sim.deallocate(Block{a.address + 256, 100}), std::logic_error);  // never handed out
  EXPECT_THROW(sim.deallocate(Block{a.address, 99}), std::logic_error);         // wrong capacity
  EXPECT_THROW(sim.deallocate(Block{0, 0}), std::logic_error);
  EXPECT_TRUE(sim.owns(a));
  sim.deallocate(a);
  EXPECT_FALSE(sim.owns(a));
  EXPECT_THROW(sim.deallocate(a), std::logic_error);  // twice
  EXPECT_EQ(sim.reserved_bytes(), 0u);
}

TEST(CountingUpstream, counts_allocs_frees_failures_and_reserved_bytes) {
  SimUpstreamOptions options;
  options.limit_bytes = 300;
  SimUpstream sim(options);
  CountingUpstream counting(sim);
  const Block a = *counting.allocate(100);
  const Block b = *counting.allocate(150);
  EXPECT_FALSE(counting.allocate(100));
  EXPECT_EQ(counting.allocs(), 2u);
  EXPECT_EQ(counting.failed(), 1u);
  EXPECT_EQ(counting.reserved_bytes(), 250u);
  counting.deallocate(a);
  EXPECT_EQ(counting.frees(), 1u);
  EXPECT_EQ(counting.reserved_bytes(), 150u);
  counting.deallocate(b);
  const UpstreamCounters& c = counting.counters();
  EXPECT_EQ(c.allocs, 2u);
  EXPECT_EQ(c.frees, 2u);
  EXPECT_EQ(c.failed, 1u);
  EXPECT_EQ(c.reserved_bytes, 0u);
  EXPECT_EQ(sim.reserved_bytes(), 0u);
}

TEST(CountingUpstream, logs_each_call_that_succeeded_while_a_log_is_given) {
  SimUpstreamOptions options;
  options.limit_bytes = 300;
  SimUpstream sim(options);
  CountingUpstream counting(sim);
  const Block before = *counting.allocate(10);  // no log yet
  std::vector<UpstreamCall> log;
  counting.log_calls(&log);
  const Block a = *counting.allocate(100);
  EXPECT_FALSE(counting.allocate(250));  // failed: a recorded allocator records nothing either
  counting.deallocate(a);
  counting.deallocate(before);
  counting.log_calls(nullptr);
  (void)counting.allocate(20);
  EXPECT_EQ(log, (std::vector<UpstreamCall>{{false, 100}, {true, 100}, {true, 10}}));
}

}  // namespace
}  // namespace alloclab
