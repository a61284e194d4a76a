#include "alloclab/live/block_table.hpp"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>

namespace alloclab::live {
namespace {

TEST(BlockTable, agrees_with_a_map_over_half_a_million_blocks_inserted_and_erased) {
  BlockTable table;
  std::unordered_map<std::uint64_t, HandedOut> expected;
  std::mt19937_64 random(7);
  std::vector<std::uint64_t> live;
  // Addresses in a narrow range collide in the table's home slots: probe runs wrap and shift.
  for (int step = 0; step < 1'000'000; ++step) {
    const bool add = live.empty() || random() % 3 != 0;
    if (add) {
      std::uint64_t address;
      do address = 0x10000 + (random() % 4'000'000) * 16;
      while (expected.count(address));
      const HandedOut entry{address, random() % 1000 + 1, random() % 1000};
      table.insert(entry);
      expected[address] = entry;
      live.push_back(address);
    } else {
      const std::size_t k = random() % live.size();
      table.erase(live[k]);
      expected.erase(live[k]);
      live[k] = live.back();
      live.pop_back();
    }
  }
  ASSERT_EQ(table.size(), expected.size());
  EXPECT_GT(table.size(), 300'000u);
  for (const auto& [address, entry] : expected) {
    const HandedOut* found = table.find(address);
    ASSERT_NE(found, nullptr) << address;
    EXPECT_EQ(found->capacity, entry.capacity);
    EXPECT_EQ(found->requested, entry.requested);
  }
  for (int k = 0; k < 100'000; ++k) {
    const std::uint64_t address = 0x10000 + (random() % 4'000'000) * 16;
    EXPECT_EQ(table.find(address) != nullptr, expected.count(address) == 1);
  }
  EXPECT_EQ(table.find(0), nullptr);
}

}  // namespace
}  // namespace alloclab::live
