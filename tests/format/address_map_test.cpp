// AddressMap: every operation against std::unordered_map, and the sizes and churn at which an
// open-addressing map breaks if its growth, deletion or clearing is wrong. A probe loop that
// never ends fails the test through the watchdog.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <unordered_map>
#include <vector>

#include "alloclab/format/address_map.hpp"
#include "tests/watchdog.hpp"

namespace alloclab {
namespace {

using Reference = std::unordered_map<std::uint64_t, std::uint64_t>;

void expect_same(const AddressMap<std::uint64_t>& map, const Reference& reference) {
  ASSERT_EQ(map.size(), reference.size());
  for (const auto& [key, value] : reference) {
    const std::uint64_t* found = map.find(key);
    ASSERT_NE(found, nullptr) << "key " << key;
    ASSERT_EQ(*found, value) << "key " << key;
  }
  std::size_t visited = 0;
  map.for_each([&](std::uint64_t key, const std::uint64_t& value) {
    ++visited;
    const auto it = reference.find(key);
    ASSERT_NE(it, reference.end()) << "key " << key;
    EXPECT_EQ(it->second, value);
  });
  EXPECT_EQ(visited, reference.size());
}

TEST(AddressMap, agrees_with_unordered_map_under_random_operations) {
  test::Watchdog watchdog(60, "random operations");
  AddressMap<std::uint64_t> map;
  Reference reference;
  std::mt19937_64 rng(7);
  for (std::uint64_t step = 0; step < 400'000; ++step) {
    // Few distinct keys (0 included, small ids, and multiples of 256 like addresses), so probe
    // runs collide, wrap around the end of the array and erases shift entries back.
    const std::uint64_t key = rng() % 2 ? rng() % 3000 * 256 : rng() % 50;
    const std::uint64_t roll = rng() % 20;
    if (roll < 7) {
      auto [value, inserted] = map.try_emplace(key);
      const auto [it, fresh] = reference.emplace(key, step);
      ASSERT_EQ(inserted, fresh);
      if (inserted) {
        ASSERT_EQ(*value, 0u) << "a new entry is value-initialised";
        *value = step;
      }
      ASSERT_EQ(*value, it->second);
    } else if (roll < 10) {
      map.insert_or_assign(key, step);
      reference[key] = step;
    } else if (roll < 15) {
      ASSERT_EQ(map.erase(key), reference.erase(key) == 1);
    } else if (roll < 17) {
      std::uint64_t into = 12345;
      const bool taken = map.take_into(key, into);
      const auto it = reference.find(key);
      ASSERT_EQ(taken, it != reference.end());
      ASSERT_EQ(into, taken ? it->second : 12345u) << "untouched when absent";
      if (taken) reference.erase(it);
    } else if (roll < 19) {
      const std::optional<std::uint64_t> taken = map.take(key);
      const auto it = reference.find(key);
      ASSERT_EQ(taken.has_value(), it != reference.end());
      if (taken) {
        ASSERT_EQ(*taken, it->second);
        reference.erase(it);
      }
    } else if (step % 97 == 0) {
      const std::uint64_t modulus = 2 + rng() % 5;
      auto drop = [&](std::uint64_t k, std::uint64_t v) { return (k + v) % modulus == 0; };
      const std::size_t erased = std::erase_if(
          reference, [&](const auto& entry) { return drop(entry.first, entry.second); });
      ASSERT_EQ(map.erase_if(drop), erased);
    }
    const std::uint64_t probe = rng() % 2 ? rng() % 3000 * 256 : rng() % 50;
    ASSERT_EQ(map.contains(probe), reference.count(probe) == 1) << "step " << step;
    if (step % 4999 == 0) expect_same(map, reference);
    ASSERT_EQ(map.size(), reference.size());
  }
  expect_same(map, reference);
}

TEST(AddressMap, erase_if_asks_about_each_entry_once) {
  AddressMap<std::uint64_t> map;
  // Dense keys fill long probe runs, some wrapping around the end of the array.
  for (std::uint64_t key = 0; key < 5000; ++key) map.insert_or_assign(key * 64, key);
  std::unordered_map<std::uint64_t, int> asked;
  const std::size_t erased = map.erase_if([&](std::uint64_t key, std::uint64_t value) {
    ++asked[key];
    return value % 3 != 0;
  });
  EXPECT_EQ(asked.size(), 5000u);
  for (const auto& [key, times] : asked) EXPECT_EQ(times, 1) << "key " << key;
  EXPECT_EQ(erased, 5000u - 1667u);
  EXPECT_EQ(map.size(), 1667u);
  for (std::uint64_t key = 0; key < 5000; ++key) {
    EXPECT_EQ(map.contains(key * 64), key % 3 == 0) << "key " << key * 64;
  }
}

TEST(AddressMap, grows_from_empty_to_a_million_entries) {
  test::Watchdog watchdog(60, "growth to a million entries");
  AddressMap<std::uint64_t> map;
  constexpr std::uint64_t n = 1'000'000;
  // Addresses 256 bytes apart, as the simulated upstream hands them out, then random keys.
  std::mt19937_64 rng(11);
  std::vector<std::uint64_t> keys;
  for (std::uint64_t i = 0; i < n / 2; ++i) keys.push_back(0x10000000 + i * 256);
  while (keys.size() < n) keys.push_back(rng() | 1);  // odd: apart from the addresses above
  for (std::size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE(map.try_emplace(keys[i]).second) << "entry " << i;
    *map.find(keys[i]) = i;
  }
  EXPECT_EQ(map.size(), n);
  EXPECT_LE(map.slot_count(), 4 * n) << "at most four slots per entry";
  EXPECT_GE(map.slot_count(), 2 * n) << "at most half the slots full";
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::uint64_t* value = map.find(keys[i]);
    ASSERT_NE(value, nullptr) << "entry " << i;
    ASSERT_EQ(*value, i);
  }
  EXPECT_FALSE(map.contains(0x10000000 + n * 256));
  EXPECT_FALSE(map.contains(0));
}

TEST(AddressMap, churn_at_a_constant_size_neither_grows_nor_loses_entries) {
  test::Watchdog watchdog(60, "churn");
  // The allocation pattern of a long replay: a window of live blocks, the oldest freed as each
  // new one arrives, for millions of operations.
  AddressMap<std::uint64_t> map;
  constexpr std::uint64_t live = 1000;
  for (std::uint64_t i = 0; i < live; ++i) map.insert_or_assign(0x10000000 + i * 256, i);
  const std::size_t slots = map.slot_count();
  std::mt19937_64 rng(5);
  for (std::uint64_t i = live; i < 3'000'000; ++i) {
    const std::uint64_t oldest = 0x10000000 + (i - live) * 256;
    ASSERT_EQ(map.take(oldest), std::optional<std::uint64_t>(i - live)) << "operation " << i;
    map.insert_or_assign(0x10000000 + i * 256, i);
    ASSERT_FALSE(map.contains(0x10000000 + (rng() % i + i + 1) * 256));  // a miss, too
  }
  EXPECT_EQ(map.size(), live);
  EXPECT_EQ(map.slot_count(), slots);
  for (std::uint64_t i = 3'000'000 - live; i < 3'000'000; ++i) {
    ASSERT_EQ(map.find(0x10000000 + i * 256) ? *map.find(0x10000000 + i * 256) : 0, i);
  }
}

TEST(AddressMap, churn_of_random_keys_at_a_constant_size_keeps_every_entry_reachable) {
  test::Watchdog watchdog(60, "churn");
  AddressMap<std::uint64_t> map;
  Reference reference;
  std::vector<std::uint64_t> keys;
  std::mt19937_64 rng(9);
  for (int i = 0; i < 4096; ++i) {
    keys.push_back(rng() << 8);
    map.insert_or_assign(keys.back(), keys.back() / 3);
    reference[keys.back()] = keys.back() / 3;
  }
  const std::size_t slots = map.slot_count();
  for (int step = 0; step < 2'000'000; ++step) {
    std::uint64_t& key = keys[rng() % keys.size()];
    ASSERT_TRUE(map.erase(key));
    reference.erase(key);
    key = rng() << 8;
    map.insert_or_assign(key, key / 3);
    reference[key] = key / 3;
  }
  EXPECT_EQ(map.slot_count(), slots);
  expect_same(map, reference);
}

TEST(AddressMap, one_key_inserted_and_erased_again_and_again) {
  test::Watchdog watchdog(60, "reinsertion");
  AddressMap<std::uint64_t> map;
  for (std::uint64_t key = 1; key <= 7; ++key) {
    if (key != 5) map.insert_or_assign(key << 12, key);
  }
  const std::size_t slots = map.slot_count();
  for (int i = 0; i < 1'000'000; ++i) {
    for (const std::uint64_t key : {std::uint64_t{0x5000}, std::uint64_t{0}, std::uint64_t{42}}) {
      const auto [value, inserted] = map.try_emplace(key);
      ASSERT_TRUE(inserted);
      ASSERT_EQ(*value, 0u);
      *value = 99;
    }
    ASSERT_EQ(map.size(), 9u);
    ASSERT_TRUE(map.erase(42));
    ASSERT_EQ(map.take(0), std::optional<std::uint64_t>(99));
    ASSERT_FALSE(map.erase(0));
    ASSERT_EQ(map.take(0x5000), std::optional<std::uint64_t>(99));
    ASSERT_FALSE(map.take(0x5000).has_value());
  }
  EXPECT_EQ(map.size(), 6u);
  EXPECT_EQ(map.slot_count(), slots);
  for (std::uint64_t key = 1; key <= 7; ++key) {
    if (key == 5) continue;
    EXPECT_EQ(*map.find(key << 12), key);
  }
}

TEST(AddressMap, clear_empties_and_the_map_is_used_again) {
  test::Watchdog watchdog(60, "clear and reuse");
  AddressMap<std::uint64_t> map;
  for (int round = 0; round < 4; ++round) {
    const std::uint64_t base = 0x7f0000000000 + static_cast<std::uint64_t>(round) * 0x10000000;
    for (std::uint64_t i = 0; i < 100'000; ++i) map.insert_or_assign(base + i * 64, i);
    map.insert_or_assign(0, 1);
    ASSERT_EQ(map.size(), 100'001u);
    const std::size_t slots = map.slot_count();
    map.clear();
    EXPECT_TRUE(map.empty());
    EXPECT_EQ(map.slot_count(), slots) << "clear keeps the slots";
    EXPECT_FALSE(map.contains(0));
    for (std::uint64_t i = 0; i < 100'000; i += 997) ASSERT_FALSE(map.contains(base + i * 64));
    int visited = 0;
    map.for_each([&](std::uint64_t, std::uint64_t) { ++visited; });
    EXPECT_EQ(visited, 0);
    // Refilled with other keys: what was there before must not show through.
    for (std::uint64_t i = 0; i < 1000; ++i) {
      const auto [value, inserted] = map.try_emplace(base + i * 64 + 8);
      ASSERT_TRUE(inserted);
      ASSERT_EQ(*value, 0u);
      *value = i + 1;
    }
    for (std::uint64_t i = 0; i < 1000; ++i) ASSERT_EQ(*map.find(base + i * 64 + 8), i + 1);
    map.clear();
  }
  map.clear();  // clearing an empty map
  EXPECT_TRUE(map.empty());
}

TEST(AddressMap, reserve_makes_room_without_losing_entries) {
  test::Watchdog watchdog(60, "reserve");
  AddressMap<std::uint64_t> map;
  map.insert_or_assign(0, 10);
  map.insert_or_assign(77, 11);
  map.reserve(100'000);
  const std::size_t slots = map.slot_count();
  EXPECT_GE(slots, 200'000u);
  for (std::uint64_t i = 1; i < 100'000; ++i) map.insert_or_assign(i * 4096, i);
  EXPECT_EQ(map.slot_count(), slots) << "no growth within what was reserved";
  EXPECT_EQ(*map.find(0), 10u);
  EXPECT_EQ(*map.find(77), 11u);
  map.reserve(10);  // never shrinks
  EXPECT_EQ(map.slot_count(), slots);
  for (std::uint64_t i = 1; i < 100'000; ++i) ASSERT_EQ(*map.find(i * 4096), i);
}

TEST(AddressMap, key_zero_is_an_ordinary_key) {
  AddressMap<std::uint64_t> map;
  EXPECT_FALSE(map.contains(0));
  EXPECT_FALSE(map.erase(0));
  EXPECT_TRUE(map.try_emplace(0).second);
  EXPECT_FALSE(map.try_emplace(0).second);
  EXPECT_EQ(map.size(), 1u);
  *map.find(0) = 5;
  map.insert_or_assign(256, 6);
  std::vector<std::uint64_t> keys;
  map.for_each([&](std::uint64_t key, std::uint64_t&) { keys.push_back(key); });
  EXPECT_EQ(keys.size(), 2u);
  EXPECT_EQ(map.erase_if([](std::uint64_t key, std::uint64_t) { return key == 0; }), 1u);
  EXPECT_FALSE(map.contains(0));
  EXPECT_EQ(*map.find(256), 6u);
  EXPECT_EQ(*map.try_emplace(0).first, 0u) << "value-initialised again";
}

TEST(AddressMap, values_are_released_when_their_entries_go) {
  auto owned = std::make_shared<int>(1);
  AddressMap<std::shared_ptr<int>> map;
  for (std::uint64_t key = 0; key < 300; ++key) map.insert_or_assign(key * 8, owned);
  EXPECT_EQ(owned.use_count(), 301);
  map.erase(8);
  map.erase(0);
  EXPECT_EQ(owned.use_count(), 299);
  EXPECT_EQ(*map.take(16).value(), 1);
  EXPECT_EQ(owned.use_count(), 298);
  map.erase_if([](std::uint64_t key, const std::shared_ptr<int>&) { return key % 16 == 0; });
  EXPECT_EQ(owned.use_count(), 1 + 149);
  map.clear();
  EXPECT_EQ(owned.use_count(), 1);
  // A reused slot starts from an empty value.
  EXPECT_EQ(*map.try_emplace(8).first, nullptr);
}

TEST(AddressMap, holds_values_that_can_only_be_moved) {
  AddressMap<std::unique_ptr<std::uint64_t>> map;
  for (std::uint64_t key = 1; key < 10'000; ++key) {
    *map.try_emplace(key * 512).first = std::make_unique<std::uint64_t>(key);
  }
  for (std::uint64_t key = 1; key < 10'000; key += 2) ASSERT_TRUE(map.erase(key * 512));
  for (std::uint64_t key = 2; key < 10'000; key += 2) ASSERT_EQ(**map.find(key * 512), key);
  std::optional<std::unique_ptr<std::uint64_t>> taken = map.take(2 * 512);
  ASSERT_TRUE(taken && *taken);
  EXPECT_EQ(**taken, 2u);
}

}  // namespace
}  // namespace alloclab
