#include <gtest/gtest.h>

#include <random>
#include <unordered_map>

#include "format/address_map.hpp"

namespace alloclab {
namespace {

TEST(AddressMap, agrees_with_unordered_map_under_random_insert_and_erase) {
  std::mt19937_64 rng(3);
  detail::AddressMap map;
  std::unordered_map<std::uint64_t, std::uint32_t> reference;
  for (int step = 0; step < 200'000; ++step) {
    // A small key space forces collisions, long probe runs and wrap-around.
    const std::uint64_t key = 1 + rng() % 5000;
    if (rng() % 3) {
      const auto value = static_cast<std::uint32_t>(rng());
      map.put(key, value);
      reference[key] = value;
    } else {
      EXPECT_EQ(map.erase(key), reference.erase(key) == 1);
    }
    const std::uint64_t probe = 1 + rng() % 5000;
    const std::uint32_t* found = map.find(probe);
    auto it = reference.find(probe);
    ASSERT_EQ(found != nullptr, it != reference.end()) << "step " << step;
    if (found) {
      ASSERT_EQ(*found, it->second);
    }
  }
  EXPECT_EQ(map.size(), reference.size());
}

}  // namespace
}  // namespace alloclab
