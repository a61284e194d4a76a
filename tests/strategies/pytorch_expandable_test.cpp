// Hand-worked cases for the `pytorch` strategy with expandable segments (docs/strategies.md,
// section `pytorch`, "Expandable segments"). Each test names the rule it checks; the comments
// show the arithmetic. Addresses: with no device_memory the model's device is 1 TiB, so a range
// is 9/8 TiB in whole pages (58983 pages of 20 MiB, or 589824 of 2 MiB) and a slot 2 TiB: the
// first segment starts at 2^60, the second at 2^60 + 2^41.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <vector>

#include "alloclab/strategies/pytorch.hpp"
#include "alloclab/strategies/upstream/counting.hpp"
#include "tests/split_mix.hpp"
#include "tests/strategies/bump_upstream.hpp"

namespace {

using alloclab::Block;
using alloclab::CountingUpstream;
using alloclab::PyTorchBlockInfo;
using alloclab::PyTorchCachingStrategy;
using alloclab::PyTorchOptions;
using alloclab::PyTorchSegmentInfo;
using alloclab::UpstreamCall;
namespace pt = alloclab::pytorch;
using alloclab::test::BumpUpstream;
using alloclab::test::SplitMix;
using alloclab::test::take;

constexpr std::uint64_t MiB = std::uint64_t{1} << 20;
constexpr std::uint64_t kBase = pt::kExpandableBase;
constexpr std::uint64_t kSecond = kBase + (std::uint64_t{1} << 41);
constexpr std::uint64_t kLargeRange = 58983 * 20 * MiB;
constexpr std::uint64_t kSmallRange = 589824 * 2 * MiB;

PyTorchOptions expandable() {
  PyTorchOptions o;
  o.expandable_segments = true;
  return o;
}

PyTorchBlockInfo free_piece(std::uint64_t address, std::uint64_t size) {
  return {address, size, false, true};
}
PyTorchBlockInfo live_piece(std::uint64_t address, std::uint64_t size) {
  return {address, size, true, true};
}
PyTorchBlockInfo unmapped(std::uint64_t address, std::uint64_t end) {
  return {address, end - address, false, false};
}

TEST(PyTorchExpandable, the_first_request_maps_one_page_of_its_pool) {
  BumpUpstream up;
  CountingUpstream counting(up);
  std::vector<UpstreamCall> log;
  counting.log_calls(&log);
  PyTorchCachingStrategy s(counting, expandable());
  // 5 MiB: large pool, a page of 20 MiB; the rest of the page is a cached piece.
  EXPECT_EQ(take(s, 5 * MiB), (Block{kBase, 5 * MiB}));
  // 1000 B: rounded to 1024, small pool, its own segment (the second slot), a page of 2 MiB.
  EXPECT_EQ(take(s, 1000), (Block{kSecond, 1024}));
  EXPECT_EQ(up.allocs, 2u);
  EXPECT_EQ(log, (std::vector<UpstreamCall>{{false, 20 * MiB}, {false, 2 * MiB}}));
  EXPECT_EQ(s.reserved_bytes(), 22 * MiB);
  EXPECT_EQ(s.allocated_bytes(), 5 * MiB + 1024);
  const std::vector<PyTorchSegmentInfo> segs = s.segments();
  ASSERT_EQ(segs.size(), 2u);
  EXPECT_TRUE(segs[0].expandable);
  EXPECT_FALSE(segs[0].small);
  EXPECT_EQ(segs[0].size, kLargeRange);
  EXPECT_EQ(segs[0].blocks, (std::vector<PyTorchBlockInfo>{
                                live_piece(kBase, 5 * MiB), free_piece(kBase + 5 * MiB, 15 * MiB),
                                unmapped(kBase + 20 * MiB, kBase + kLargeRange)}));
  EXPECT_TRUE(segs[1].small);
  EXPECT_EQ(segs[1].size, kSmallRange);
  EXPECT_EQ(segs[1].blocks,
            (std::vector<PyTorchBlockInfo>{live_piece(kSecond, 1024),
                                           free_piece(kSecond + 1024, 2 * MiB - 1024),
                                           unmapped(kSecond + 2 * MiB, kSecond + kSmallRange)}));
}

TEST(PyTorchExpandable, a_second_request_grows_the_segment_by_one_mapping) {
  BumpUpstream up;
  CountingUpstream counting(up);
  std::vector<UpstreamCall> log;
  counting.log_calls(&log);
  PyTorchCachingStrategy s(counting, expandable());
  take(s, 5 * MiB);
  // 30 MiB: the cached 15 MiB piece is too small; it is followed by unmapped space, so the
  // missing 15 MiB are mapped after it: ceil(15 / 20) = 1 page. The piece, now 35 MiB, is
  // split: 30 MiB handed out at 5 MiB, 5 MiB cached.
  EXPECT_EQ(take(s, 30 * MiB), (Block{kBase + 5 * MiB, 30 * MiB}));
  EXPECT_EQ(log, (std::vector<UpstreamCall>{{false, 20 * MiB}, {false, 20 * MiB}}));
  EXPECT_EQ(s.reserved_bytes(), 40 * MiB);
  EXPECT_EQ(s.segment_count(), 1u);
  EXPECT_EQ(
      s.segments()[0].blocks,
      (std::vector<PyTorchBlockInfo>{
          live_piece(kBase, 5 * MiB), live_piece(kBase + 5 * MiB, 30 * MiB),
          free_piece(kBase + 35 * MiB, 5 * MiB), unmapped(kBase + 40 * MiB, kBase + kLargeRange)}));
  EXPECT_EQ(s.stats().hits, 0u);
}

TEST(PyTorchExpandable, a_request_above_a_page_maps_whole_pages_in_one_call) {
  BumpUpstream up;
  CountingUpstream counting(up);
  std::vector<UpstreamCall> log;
  counting.log_calls(&log);
  PyTorchCachingStrategy s(counting, expandable());
  // 50 MiB: ceil(50 / 20) = 3 pages, asked one by one, logged as one mapping of 60 MiB. The
  // mapping is of the rounded request, not of get_allocation_size (50 MiB, no page rounding).
  EXPECT_EQ(take(s, 50 * MiB), (Block{kBase, 50 * MiB}));
  EXPECT_EQ(up.allocs, 3u);
  EXPECT_EQ(counting.allocs(), 3u);
  EXPECT_EQ(log, (std::vector<UpstreamCall>{{false, 60 * MiB}}));
  // A rest of 10 MiB is split off although fixed segments would not split a 50 MiB segment for
  // a 50 MiB request: with expandable segments any rest of at least 512 B is.
  EXPECT_EQ(s.segments()[0].blocks[1], free_piece(kBase + 50 * MiB, 10 * MiB));
}

TEST(PyTorchExpandable, each_stream_and_pool_has_its_own_segment) {
  BumpUpstream up;
  PyTorchCachingStrategy s(up, expandable());
  EXPECT_EQ(take(s, 5 * MiB, 0), (Block{kBase, 5 * MiB}));
  EXPECT_EQ(take(s, 5 * MiB, 1), (Block{kSecond, 5 * MiB}));
  // Stream 0 again: its own segment still has room (15 MiB cached).
  EXPECT_EQ(take(s, 5 * MiB, 0), (Block{kBase + 5 * MiB, 5 * MiB}));
  const std::vector<PyTorchSegmentInfo> segs = s.segments();
  ASSERT_EQ(segs.size(), 2u);
  EXPECT_EQ(segs[0].stream, 0u);
  EXPECT_EQ(segs[1].stream, 1u);
  EXPECT_EQ(up.allocs, 2u);
}

TEST(PyTorchExpandable, a_large_piece_splits_at_512_bytes) {
  BumpUpstream up;
  PyTorchCachingStrategy s(up, expandable());
  const Block a = take(s, 5 * MiB);
  s.deallocate(a);  // merges with the cached 15 MiB: one 20 MiB piece
  // 20 MiB - 1536: the rest, 1536 B, is split off (fixed segments keep large rests <= 1 MiB).
  EXPECT_EQ(take(s, 20 * MiB - 1536), (Block{kBase, 20 * MiB - 1536}));
  EXPECT_EQ(s.stats().hits, 1u);
  EXPECT_EQ(s.segments()[0].blocks[1], free_piece(kBase + 20 * MiB - 1536, 1536));
  EXPECT_EQ(up.allocs, 1u);
}

TEST(PyTorchExpandable, best_fit_prefers_a_piece_that_cannot_grow) {
  BumpUpstream up;
  PyTorchCachingStrategy s(up, expandable());
  const Block a = take(s, 10 * MiB);  // at 0; 10 MiB cached after it
  take(s, 2 * MiB);                   // at 10 MiB; 8 MiB cached at 12 MiB, before unmapped space
  s.deallocate(a);                    // 10 MiB cached at 0, between nothing and a live piece
  // 6 MiB: the smallest fitting piece is the 8 MiB one, but it could grow to the whole range;
  // the 10 MiB piece, which cannot grow, has the smaller "expandable size" and is taken.
  EXPECT_EQ(take(s, 6 * MiB), (Block{kBase, 6 * MiB}));
  EXPECT_EQ(up.allocs, 1u);
}

TEST(PyTorchExpandable, release_unmaps_whole_free_pages_only) {
  BumpUpstream up;
  CountingUpstream counting(up);
  std::vector<UpstreamCall> log;
  counting.log_calls(&log);
  PyTorchCachingStrategy s(counting, expandable());
  take(s, 5 * MiB);                   // page 0: [0, 5) live
  const Block b = take(s, 30 * MiB);  // pages 0-1: [5, 35) live, [35, 40) cached
  s.deallocate(b);                    // [5, 40) cached
  log.clear();
  s.release();
  // Of the cached [5, 40) only page 1, [20, 40), is whole: it is unmapped; [5, 20) stays cached
  // on page 0, which still holds the live piece.
  EXPECT_EQ(log, (std::vector<UpstreamCall>{{true, 20 * MiB}}));
  EXPECT_EQ(s.reserved_bytes(), 20 * MiB);
  EXPECT_EQ(up.live_bytes, 20 * MiB);
  EXPECT_EQ(s.segments()[0].blocks,
            (std::vector<PyTorchBlockInfo>{live_piece(kBase, 5 * MiB),
                                           free_piece(kBase + 5 * MiB, 15 * MiB),
                                           unmapped(kBase + 20 * MiB, kBase + kLargeRange)}));
  EXPECT_EQ(s.stats().evictions, 0u);  // an empty_cache is not an eviction
}

TEST(PyTorchExpandable, release_forgets_a_segment_left_with_no_page) {
  BumpUpstream up;
  CountingUpstream counting(up);
  std::vector<UpstreamCall> log;
  counting.log_calls(&log);
  PyTorchCachingStrategy s(counting, expandable());
  const Block a = take(s, 5 * MiB);
  const Block b = take(s, 30 * MiB);
  s.deallocate(a);
  // Cached: [0, 5) and [35, 40); neither holds a whole page, so nothing is unmapped.
  s.release();
  EXPECT_EQ(s.reserved_bytes(), 40 * MiB);
  EXPECT_EQ(log.size(), 2u);
  s.deallocate(b);  // [0, 40) cached: pages 0 and 1, unmapped as one call of 40 MiB
  s.release();
  EXPECT_EQ(log.back(), (UpstreamCall{true, 40 * MiB}));
  EXPECT_EQ(counting.frees(), 2u);  // two pages
  EXPECT_EQ(s.segment_count(), 0u);
  EXPECT_EQ(s.reserved_bytes(), 0u);
  EXPECT_EQ(up.live_bytes, 0u);
  // The slot is free again: a new segment starts at the first one.
  EXPECT_EQ(take(s, 5 * MiB), (Block{kBase, 5 * MiB}));
}

TEST(PyTorchExpandable, a_failed_mapping_releases_the_cache_and_retries) {
  BumpUpstream up(40 * MiB);
  PyTorchCachingStrategy s(up, expandable());
  const Block a = take(s, 30 * MiB, 0);  // stream 0: pages 0-1 (40 MiB), the whole limit
  // Stream 1 needs a page: its new segment's mapping fails; releasing the cache frees nothing
  // ([30, 40) of stream 0 holds no whole page); the retry fails too: an OOM.
  EXPECT_FALSE(s.allocate(5 * MiB, 1).has_value());
  EXPECT_EQ(s.counters().at("num_alloc_retries"), 1u);
  EXPECT_EQ(s.counters().at("num_ooms"), 1u);
  EXPECT_EQ(s.stats().failed, 1u);
  // Stream 1's segment stays, with no page mapped (PyTorch keeps it until a release finds a
  // cached piece of it).
  ASSERT_EQ(s.segment_count(), 2u);
  EXPECT_EQ(s.segments()[1].blocks,
            (std::vector<PyTorchBlockInfo>{unmapped(kSecond, kSecond + kLargeRange)}));
  s.deallocate(a);
  // Again: the mapping fails, the release unmaps stream 0's two pages (an eviction) and
  // forgets its segment, and the retry maps a page of stream 1's segment.
  EXPECT_EQ(take(s, 5 * MiB, 1), (Block{kSecond, 5 * MiB}));
  EXPECT_EQ(s.counters().at("num_alloc_retries"), 2u);
  EXPECT_EQ(s.counters().at("num_ooms"), 1u);
  EXPECT_EQ(s.stats().evictions, 1u);
  EXPECT_EQ(s.segment_count(), 1u);
  EXPECT_EQ(s.reserved_bytes(), 20 * MiB);
  EXPECT_EQ(up.live_bytes, 20 * MiB);
}

TEST(PyTorchExpandable, an_oversize_piece_is_unmapped_not_released_and_its_gap_reused_first) {
  BumpUpstream up(100 * MiB);
  PyTorchOptions o = expandable();
  o.max_split_size = 40 * MiB;
  PyTorchCachingStrategy s(up, o);
  const Block a = take(s, 60 * MiB);  // pages 0-2, [0, 60)
  take(s, 30 * MiB);                  // pages 3-4: [60, 90) live, [90, 100) cached; 100 MiB held
  s.deallocate(a);                    // [0, 60) cached: oversize (>= 40 MiB)
  // 35 MiB (< max_split_size) may not take the oversize piece. The place after [90, 100) needs
  // two more pages: the upstream fails. Rule 5.1 passes over the oversize piece (a piece of an
  // expandable segment is never a whole segment); rule 5.2 unmaps its three pages (one
  // eviction); the retry finds the lowest place, the unmapped [0, 60), and maps two pages.
  EXPECT_EQ(take(s, 35 * MiB), (Block{kBase, 35 * MiB}));
  EXPECT_EQ(s.counters().at("num_alloc_retries"), 1u);
  EXPECT_EQ(s.stats().evictions, 1u);
  EXPECT_EQ(s.reserved_bytes(), 80 * MiB);
  EXPECT_EQ(up.live_bytes, 80 * MiB);
  EXPECT_EQ(s.segments()[0].blocks,
            (std::vector<PyTorchBlockInfo>{
                live_piece(kBase, 35 * MiB), free_piece(kBase + 35 * MiB, 5 * MiB),
                unmapped(kBase + 40 * MiB, kBase + 60 * MiB),
                live_piece(kBase + 60 * MiB, 30 * MiB), free_piece(kBase + 90 * MiB, 10 * MiB),
                unmapped(kBase + 100 * MiB, kBase + kLargeRange)}));
}

TEST(PyTorchExpandable, the_memory_fraction_is_checked_against_the_segment_size) {
  PyTorchOptions o = expandable();
  o.per_process_memory_fraction = alloclab::Ratio{1, 2};
  o.device_memory = 100 * MiB;  // allowed: 50 MiB
  BumpUpstream up;
  PyTorchCachingStrategy s(up, o);
  // 30 MiB: get_allocation_size is 30 MiB <= 50, so it maps ceil(30 / 20) = 2 pages (40 MiB).
  take(s, 30 * MiB);
  EXPECT_EQ(s.reserved_bytes(), 40 * MiB);
  // 12 MiB on stream 1: 40 + 12 > 50 fails before any mapping, though one 20 MiB page would
  // also have exceeded it; the OOM path frees nothing.
  EXPECT_FALSE(s.allocate(12 * MiB, 1).has_value());
  EXPECT_EQ(up.allocs, 2u);
  // 1.5 MiB on stream 0: the cached 10 MiB piece serves it; no mapping, so no check.
  EXPECT_EQ(take(s, 3 * MiB / 2, 0), (Block{kBase + 30 * MiB, 3 * MiB / 2}));
  // The range is 9/8 of device_memory in whole pages: ceil(112.5 / 20) = 6 pages.
  EXPECT_EQ(s.segments()[0].size, 120 * MiB);
}

// --- invariants under a random workload -------------------------------------------------------

void check_expandable_invariants(const PyTorchCachingStrategy& s, const BumpUpstream& up,
                                 const std::map<std::uint64_t, std::uint64_t>& live) {
  std::uint64_t mapped = 0;
  std::uint64_t allocated = 0;
  std::map<std::uint64_t, std::uint64_t> handed_out;
  for (const PyTorchSegmentInfo& seg : s.segments()) {
    ASSERT_TRUE(seg.expandable);
    const std::uint64_t page = seg.small ? pt::kSmallBuffer : pt::kLargeBuffer;
    std::uint64_t at = seg.address;
    const PyTorchBlockInfo* previous = nullptr;
    for (const PyTorchBlockInfo& b : seg.blocks) {
      ASSERT_EQ(b.address, at) << "pieces cover the range in order";
      ASSERT_EQ(b.size % pt::kMinBlockSize, 0u);
      ASSERT_FALSE(b.allocated && !b.mapped);
      if (previous != nullptr) {
        ASSERT_FALSE(!previous->mapped && !b.mapped) << "unmapped neighbours are merged";
        ASSERT_FALSE(previous->mapped && !previous->allocated && b.mapped && !b.allocated)
            << "cached neighbours are merged";
      }
      if (!b.mapped) {
        ASSERT_EQ((b.address - seg.address) % page, 0u) << "unmapped ranges are whole pages";
        ASSERT_EQ(b.size % page, 0u);
      } else {
        mapped += b.size;
      }
      if (b.allocated) {
        allocated += b.size;
        handed_out.emplace(b.address, b.size);
      }
      previous = &b;
      at += b.size;
    }
    ASSERT_EQ(at, seg.address + seg.size);
  }
  ASSERT_EQ(mapped, s.reserved_bytes()) << "reserved bytes are the mapped pages";
  ASSERT_EQ(mapped, up.live_bytes);
  ASSERT_EQ(allocated, s.allocated_bytes());
  ASSERT_LE(allocated, mapped);
  ASSERT_EQ(s.stats().cached_bytes, mapped - allocated);
  ASSERT_EQ(handed_out, live);
}

void run_expandable_workload(PyTorchOptions options, std::uint64_t seed) {
  BumpUpstream up(768 * MiB);
  PyTorchCachingStrategy s(up, options);
  SplitMix rng{seed};
  std::map<std::uint64_t, std::uint64_t> live;
  std::vector<Block> blocks;
  for (int op = 0; op < 6000; ++op) {
    const std::uint64_t roll = rng.below(1000);
    if (roll < 5) {
      s.release();
    } else if (blocks.empty() || roll < 560) {
      static constexpr std::uint64_t kLimits[] = {64 * 1024, 2 * MiB, 12 * MiB, 90 * MiB};
      const std::uint64_t size = 1 + rng.below(kLimits[rng.below(4)]);
      if (std::optional<Block> b = s.allocate(size, rng.below(3))) {
        ASSERT_GE(b->capacity, size);
        blocks.push_back(*b);
        live.emplace(b->address, b->capacity);
      }
    } else {
      const std::size_t i = rng.below(blocks.size());
      s.deallocate(blocks[i]);
      live.erase(blocks[i].address);
      blocks[i] = blocks.back();
      blocks.pop_back();
    }
    ASSERT_NO_FATAL_FAILURE(check_expandable_invariants(s, up, live)) << "after op " << op;
  }
  EXPECT_GT(s.stats().hits, 0u);
  EXPECT_GT(s.stats().failed, 0u) << "the workload reaches the upstream's limit";
  for (const Block& b : blocks) s.deallocate(b);
  s.release();
  EXPECT_EQ(s.reserved_bytes(), 0u);
  EXPECT_EQ(up.live_bytes, 0u);
  // What may remain: segments that never got a page (a failed first mapping).
  for (const PyTorchSegmentInfo& seg : s.segments()) {
    ASSERT_EQ(seg.blocks.size(), 1u);
    EXPECT_FALSE(seg.blocks[0].mapped);
  }
}

TEST(PyTorchExpandable, invariants_hold_under_a_random_workload) {
  run_expandable_workload(expandable(), 11);
}

TEST(PyTorchExpandable, invariants_hold_under_a_random_workload_with_other_options) {
  PyTorchOptions o = expandable();
  o.max_split_size = 24 * MiB;
  o.roundup_power2_divisions = 4;
  o.per_process_memory_fraction = alloclab::Ratio{6, 10};
  o.device_memory = 1024 * MiB;
  o.garbage_collection_threshold = alloclab::Ratio{5, 10};
  run_expandable_workload(o, 12);
}

TEST(PyTorchExpandable, blocks_are_not_upstream_memory) {
  BumpUpstream up;
  EXPECT_FALSE(PyTorchCachingStrategy(up, expandable()).hands_out_upstream_memory());
  EXPECT_TRUE(PyTorchCachingStrategy(up, PyTorchOptions{}).hands_out_upstream_memory());
}

}  // namespace
