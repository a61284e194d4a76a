// SortedRanges (replay/sorted_ranges.hpp), the ordered index of upstream blocks the site tally
// looks frees up in: held against std::map at the size of a cache of hundreds of thousands of
// blocks, with bursts of removals as when a cache is given back.
#include "replay/sorted_ranges.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <vector>

#include "tests/real_size.hpp"
#include "tests/split_mix.hpp"

namespace alloclab {
namespace {

// The range of `ranges` (start -> size) holding `address`, as a tree answers it.
std::optional<SortedRanges::Range> reference_find(
    const std::map<std::uint64_t, std::uint64_t>& ranges, std::uint64_t address) {
  auto after = ranges.upper_bound(address);
  if (after == ranges.begin()) return std::nullopt;
  const auto& [start, size] = *std::prev(after);
  if (address - start >= size) return std::nullopt;
  return SortedRanges::Range{start, size};
}

void expect_same_lookup(SortedRanges& index, const std::map<std::uint64_t, std::uint64_t>& ref,
                        std::uint64_t address) {
  const std::optional<SortedRanges::Range> got = index.find_containing(address);
  const std::optional<SortedRanges::Range> want = reference_find(ref, address);
  ASSERT_EQ(got.has_value(), want.has_value()) << "address " << address;
  if (want) {
    EXPECT_EQ(got->start, want->start) << "address " << address;
    EXPECT_EQ(got->size, want->size) << "address " << address;
  }
}

TEST(SortedRanges, finds_the_range_holding_an_address_and_nothing_in_a_gap) {
  SortedRanges index;
  index.assign(0x1000, 0x100);
  index.assign(0x3000, 0x1000);
  index.assign(0x2000, 0x10);  // before the last: inserted in order
  EXPECT_EQ(index.size(), 3u);
  EXPECT_EQ(index.find_containing(0x1000)->start, 0x1000u);
  EXPECT_EQ(index.find_containing(0x10ff)->start, 0x1000u);
  EXPECT_FALSE(index.find_containing(0x1100));  // one past its end
  EXPECT_FALSE(index.find_containing(0xfff));   // before every range
  EXPECT_EQ(index.find_containing(0x200f)->start, 0x2000u);
  EXPECT_EQ(index.find_containing(0x3fff)->size, 0x1000u);
  EXPECT_FALSE(index.find_containing(0x4000));
  EXPECT_TRUE(index.erase(0x2000));
  EXPECT_FALSE(index.erase(0x2000));  // already gone
  EXPECT_FALSE(index.erase(0x2001));  // never a start
  EXPECT_FALSE(index.find_containing(0x2000));
  EXPECT_EQ(index.size(), 2u);
  index.assign(0x2000, 0x20);  // a removed start comes back, with a new size
  EXPECT_EQ(index.find_containing(0x201f)->size, 0x20u);
  index.assign(0x3000, 0x10);  // resized in place
  EXPECT_FALSE(index.find_containing(0x3010));
  EXPECT_EQ(index.size(), 3u);
}

TEST(SortedRanges, agrees_with_a_tree_over_hundreds_of_thousands_of_ranges_and_evictions) {
  // Disjoint ranges on a grid of 1 MiB slots: each slot holds at most one range, of a random
  // size within the slot, so that starts come back (an address an upstream hands out again)
  // and gaps lie between ranges.
  // At a quarter of the size under AddressSanitizer (tests/real_size.hpp): a range added between
  // others moves those after it, and the instrumented moves take most of that build's time.
  constexpr std::uint64_t slot = 1 << 20, slots = test::real_size(600'000);
  test::SplitMix rng{11};
  SortedRanges index;
  std::map<std::uint64_t, std::uint64_t> ref;
  const auto add = [&](std::uint64_t s) {
    const std::uint64_t start = 0x10000000 + s * slot + rng.below(4) * 256;
    if (ref.contains(start)) return;
    // A slot holds one range: drop one at another offset first.
    auto in_slot = ref.lower_bound(0x10000000 + s * slot);
    if (in_slot != ref.end() && in_slot->first < 0x10000000 + (s + 1) * slot) {
      EXPECT_TRUE(index.erase(in_slot->first));
      ref.erase(in_slot);
    }
    const std::uint64_t size = 1 + rng.below(slot - 1024);
    index.assign(start, size);
    ref[start] = size;
  };
  // Grown in address order (a bump allocator), then out of order.
  for (std::uint64_t s = 0; s < slots / 2; ++s) add(s);
  for (std::uint64_t k = 0; k < slots / 6; ++k) add(rng.below(slots));
  ASSERT_EQ(index.size(), ref.size());
  ASSERT_GT(ref.size(), slots / 2);
  for (int round = 0; round < 6; ++round) {
    // A burst of evictions (a third of the ranges), then frees looked up, then new ranges
    // taken one at a time between lookups.
    std::vector<std::uint64_t> starts;
    for (const auto& [start, size] : ref)
      if (rng.below(3) == 0) starts.push_back(start);
    for (const std::uint64_t start : starts) {
      ASSERT_TRUE(index.erase(start));
      ref.erase(start);
    }
    for (int k = 0; k < 20'000; ++k) {
      const std::uint64_t address = 0x10000000 + rng.below(slots * slot + slot);
      expect_same_lookup(index, ref, address);
      // Exactly at a start, and at the last byte, of a live range.
      if (auto at = ref.lower_bound(address); at != ref.end()) {
        expect_same_lookup(index, ref, at->first);
        expect_same_lookup(index, ref, at->first + at->second - 1);
        expect_same_lookup(index, ref, at->first + at->second);
      }
      if (k % 4 == 0) add(rng.below(slots));
    }
    ASSERT_EQ(index.size(), ref.size());
  }
  // Rebuilt in one go from an unordered list, as the tally does the first time it needs it.
  std::vector<SortedRanges::Range> listed;
  for (const auto& [start, size] : ref) listed.push_back({start, size});
  for (std::size_t i = listed.size(); i > 1; --i) std::swap(listed[i - 1], listed[rng.below(i)]);
  SortedRanges rebuilt(listed);
  EXPECT_EQ(rebuilt.size(), ref.size());
  for (int k = 0; k < 20'000; ++k)
    expect_same_lookup(rebuilt, ref, 0x10000000 + rng.below(slots * slot));
}

}  // namespace
}  // namespace alloclab
