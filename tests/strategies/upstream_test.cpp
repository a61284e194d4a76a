// SimUpstream and CountingUpstream, and the FlatMap behind SimUpstream and the exact index.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <stdexcept>

#include "alloclab/strategies/detail/flat_map.hpp"
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

TEST(FlatMap, matches_std_map_under_random_inserts_and_erases) {
  detail::FlatMap<std::uint64_t> map;
  std::map<std::uint64_t, std::uint64_t> reference;
  std::mt19937_64 rng(7);
  for (std::uint64_t i = 0; i < 200000; ++i) {
    // Few distinct keys (0 included, and multiples of 256 like addresses), so probe runs
    // collide and erases shift entries back.
    const std::uint64_t key = rng() % 2 ? rng() % 3000 * 256 : rng() % 50;
    const std::uint64_t roll = rng() % 10;
    if (roll < 5) {
      auto [value, inserted] = map.try_emplace(key);
      const bool fresh = reference.emplace(key, i).second;
      ASSERT_EQ(inserted, fresh);
      if (inserted) *value = i;
    } else if (roll < 9) {
      ASSERT_EQ(map.erase(key), reference.erase(key) == 1);
    } else if (roll == 9 && i % 101 == 0) {
      map.erase_if([](std::uint64_t k, std::uint64_t) { return k % 3 == 0; });
      std::erase_if(reference, [](const auto& kv) { return kv.first % 3 == 0; });
    }
    if (i % 997 == 0) {
      for (const auto& [k, v] : reference) {
        const std::uint64_t* found = map.find(k);
        ASSERT_NE(found, nullptr);
        EXPECT_EQ(*found, v);
      }
      std::uint64_t visited = 0;
      map.for_each([&](std::uint64_t k, std::uint64_t v) {
        ++visited;
        EXPECT_EQ(reference.at(k), v);
      });
      EXPECT_EQ(visited, reference.size());
    }
    ASSERT_EQ(map.size(), reference.size());
  }
  EXPECT_EQ(map.find(123456789), nullptr);
  map.clear();
  EXPECT_TRUE(map.empty());
  EXPECT_EQ(map.find(0), nullptr);
}

}  // namespace
}  // namespace alloclab
