// Hand-worked cases for the `pytorch` strategy (docs/strategies.md, section `pytorch`). Each test
// names the rule it checks; the comments show the arithmetic.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <vector>

#include "alloclab/strategies/pytorch.hpp"
#include "tests/split_mix.hpp"
#include "tests/strategies/bump_upstream.hpp"

namespace {

using alloclab::Block;
using alloclab::PyTorchBlockInfo;
using alloclab::PyTorchCachingStrategy;
using alloclab::PyTorchOptions;
namespace pt = alloclab::pytorch;
using alloclab::test::BumpUpstream;
using alloclab::test::SplitMix;
using alloclab::test::take;

constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * KiB;

PyTorchOptions max_split(std::uint64_t bytes) {
  PyTorchOptions o;
  o.max_split_size = bytes;
  return o;
}

// --- rounding and segment sizes -----------------------------------------------------------------

TEST(PyTorchStrategy, rounds_requests_up_to_512_bytes) {
  EXPECT_EQ(pt::round_size(0, 0), 512u);
  EXPECT_EQ(pt::round_size(1, 0), 512u);
  EXPECT_EQ(pt::round_size(512, 0), 512u);
  EXPECT_EQ(pt::round_size(513, 0), 1024u);
  EXPECT_EQ(pt::round_size(1 * MiB + 1, 0), 1 * MiB + 512);

  BumpUpstream up;
  PyTorchCachingStrategy s(up, {});
  EXPECT_EQ(take(s, 1).capacity, 512u);
  EXPECT_EQ(take(s, 0).capacity, 512u);
  EXPECT_EQ(take(s, 513).capacity, 1024u);
  EXPECT_EQ(s.allocated_bytes(), 2048u);
}

TEST(PyTorchStrategy, segment_size_depends_on_the_rounded_request) {
  EXPECT_EQ(pt::allocation_size(512), 2 * MiB);
  EXPECT_EQ(pt::allocation_size(1 * MiB), 2 * MiB);         // kSmallSize is still small
  EXPECT_EQ(pt::allocation_size(1 * MiB + 512), 20 * MiB);  // 1 MiB < s < 10 MiB: kLargeBuffer
  EXPECT_EQ(pt::allocation_size(10 * MiB - 512), 20 * MiB);
  EXPECT_EQ(pt::allocation_size(10 * MiB), 10 * MiB);  // >= kMinLargeAlloc: 2 MiB multiple
  EXPECT_EQ(pt::allocation_size(11 * MiB), 12 * MiB);
  EXPECT_EQ(pt::allocation_size(12 * MiB), 12 * MiB);

  // Through the strategy, one stream each so nothing is reused.
  BumpUpstream up;
  PyTorchCachingStrategy s(up, {});
  take(s, 1 * MiB, 1);
  EXPECT_EQ(s.reserved_bytes(), 2 * MiB);
  take(s, 1 * MiB + 1, 2);
  EXPECT_EQ(s.reserved_bytes(), 22 * MiB);
  take(s, 10 * MiB, 3);
  EXPECT_EQ(s.reserved_bytes(), 32 * MiB);
  take(s, 11 * MiB + 1, 4);  // rounds to 11 MiB + 512 -> 12 MiB segment
  EXPECT_EQ(s.reserved_bytes(), 44 * MiB);
  EXPECT_EQ(s.segment_count(), 4u);
  EXPECT_EQ(s.stats().hits, 0u);
}

// --- best fit, splitting ------------------------------------------------------------------------

TEST(PyTorchStrategy, small_requests_share_a_2mib_segment) {
  BumpUpstream up;
  PyTorchCachingStrategy s(up, {});
  const Block a = take(s, 1000);     // miss: 2 MiB segment, split -> 1024 handed out
  const Block b = take(s, 3000);     // hit: front of the rest, 3072
  const Block c = take(s, 1 * MiB);  // hit: 1 MiB
  EXPECT_EQ(a.capacity, 1024u);
  EXPECT_EQ(b.address, a.address + 1024);
  EXPECT_EQ(b.capacity, 3072u);
  EXPECT_EQ(c.address, b.address + 3072);
  EXPECT_EQ(c.capacity, 1 * MiB);
  EXPECT_EQ(s.segment_count(), 1u);
  EXPECT_EQ(up.allocs, 1u);
  EXPECT_EQ(s.stats().requests, 3u);
  EXPECT_EQ(s.stats().hits, 2u);
  EXPECT_EQ(s.stats().slack_bytes, 0u);
  const std::uint64_t rest = 2 * MiB - 1024 - 3072 - 1 * MiB;
  EXPECT_EQ(s.stats().cached_bytes, rest);
  const auto segs = s.segments();
  ASSERT_EQ(segs.size(), 1u);
  EXPECT_TRUE(segs[0].small);
  EXPECT_EQ(segs[0].blocks, (std::vector<PyTorchBlockInfo>{{a.address, 1024, true},
                                                           {b.address, 3072, true},
                                                           {c.address, 1 * MiB, true},
                                                           {c.address + 1 * MiB, rest, false}}));
}

TEST(PyTorchStrategy, small_pool_splits_when_the_rest_is_at_least_512_bytes) {
  BumpUpstream up;
  PyTorchCachingStrategy s(up, {});
  const Block x1 = take(s, 1024);
  const Block x2 = take(s, 1024);
  const Block x3 = take(s, 1 * MiB);
  s.deallocate(x2);  // a free 1024-byte piece between two live ones
  // Best fit for 512: the 1024 piece (the other free piece is ~1 MiB). Rest 512 >= 512: split.
  const Block y1 = take(s, 512);
  EXPECT_EQ(y1.address, x2.address);
  EXPECT_EQ(y1.capacity, 512u);
  // The 512 rest serves the next 512 exactly (rest 0: no split).
  const Block y2 = take(s, 512);
  EXPECT_EQ(y2.address, x2.address + 512);
  EXPECT_EQ(y2.capacity, 512u);
  EXPECT_EQ(s.stats().hits, 4u);
  EXPECT_EQ(s.stats().slack_bytes, 0u);
  EXPECT_EQ(s.segment_count(), 1u);
  (void)x1;
  (void)x3;
}

TEST(PyTorchStrategy, large_pool_splits_only_when_the_rest_exceeds_1mib) {
  BumpUpstream up;
  PyTorchCachingStrategy s(up, {});
  const Block a = take(s, 12 * MiB);  // miss: 12 MiB segment, rest 0
  EXPECT_EQ(a.capacity, 12 * MiB);
  s.deallocate(a);
  // 11 MiB from the 12 MiB block: rest exactly 1 MiB, not > kSmallSize -> whole block, slack 1 MiB.
  const Block b = take(s, 11 * MiB);
  EXPECT_EQ(b.address, a.address);
  EXPECT_EQ(b.capacity, 12 * MiB);
  EXPECT_EQ(s.stats().slack_bytes, 1 * MiB);
  s.deallocate(b);
  // 11 MiB - 512: rest 1 MiB + 512 > 1 MiB -> split.
  const Block c = take(s, 11 * MiB - 512);
  EXPECT_EQ(c.capacity, 11 * MiB - 512);
  EXPECT_EQ(s.stats().cached_bytes, 1 * MiB + 512);
  // The rest is a large-pool piece: 1 MiB + 1 (rounded to 1 MiB + 512) takes it exactly.
  const Block d = take(s, 1 * MiB + 1);
  EXPECT_EQ(d.address, a.address + 11 * MiB - 512);
  EXPECT_EQ(d.capacity, 1 * MiB + 512);
  EXPECT_EQ(s.stats().hits, 3u);
  EXPECT_EQ(s.stats().slack_bytes, 1 * MiB);
  EXPECT_EQ(s.reserved_bytes(), 12 * MiB);
  EXPECT_EQ(s.stats().cached_bytes, 0u);
}

TEST(PyTorchStrategy, a_5mib_request_gets_a_20mib_segment_whose_rest_serves_later_requests) {
  BumpUpstream up;
  PyTorchCachingStrategy s(up, {});
  const Block a = take(s, 5 * MiB);  // miss: 20 MiB segment, split (rest 15 MiB)
  EXPECT_EQ(a.capacity, 5 * MiB);
  EXPECT_EQ(s.reserved_bytes(), 20 * MiB);
  EXPECT_EQ(s.stats().cached_bytes, 15 * MiB);
  const Block b = take(s, 12 * MiB);  // hit: the 15 MiB piece, split (rest 3 MiB)
  EXPECT_EQ(b.address, a.address + 5 * MiB);
  EXPECT_EQ(b.capacity, 12 * MiB);
  const Block c = take(s, 2 * MiB + 512 * KiB);  // hit: the 3 MiB piece, rest 0.5 MiB: no split
  EXPECT_EQ(c.address, a.address + 17 * MiB);
  EXPECT_EQ(c.capacity, 3 * MiB);
  EXPECT_EQ(s.reserved_bytes(), 20 * MiB);
  EXPECT_EQ(up.allocs, 1u);
  EXPECT_EQ(s.stats().requests, 3u);
  EXPECT_EQ(s.stats().hits, 2u);
  EXPECT_EQ(s.stats().slack_bytes, 512 * KiB);
  EXPECT_EQ(s.stats().cached_bytes, 0u);
}

TEST(PyTorchStrategy, eight_16mib_then_four_32mib_reserves_256mib) {
  BumpUpstream up;
  PyTorchCachingStrategy s(up, {});
  std::vector<Block> live;
  for (int i = 0; i < 8; ++i) live.push_back(take(s, 16 * MiB));  // 8 segments of 16 MiB
  for (const Block& b : live) s.deallocate(b);
  live.clear();
  for (int i = 0; i < 4; ++i) live.push_back(take(s, 32 * MiB));  // no block >= 32 MiB: misses
  EXPECT_EQ(up.peak_bytes, 256 * MiB);
  EXPECT_EQ(s.reserved_bytes(), 256 * MiB);
  EXPECT_EQ(s.segment_count(), 12u);
  EXPECT_EQ(s.stats().hits, 0u);
  EXPECT_EQ(s.stats().cached_bytes, 128 * MiB);
}

TEST(PyTorchStrategy, four_32mib_then_eight_16mib_reserves_128mib) {
  BumpUpstream up;
  PyTorchCachingStrategy s(up, {});
  std::vector<Block> live;
  for (int i = 0; i < 4; ++i) live.push_back(take(s, 32 * MiB));
  for (const Block& b : live) s.deallocate(b);
  live.clear();
  // Each 32 MiB block is split (rest 16 MiB > 1 MiB); the rest, the smallest fit, serves the next.
  for (int i = 0; i < 8; ++i) live.push_back(take(s, 16 * MiB));
  EXPECT_EQ(up.peak_bytes, 128 * MiB);
  EXPECT_EQ(s.segment_count(), 4u);
  EXPECT_EQ(s.stats().hits, 8u);
  EXPECT_EQ(s.stats().slack_bytes, 0u);
  EXPECT_EQ(s.stats().cached_bytes, 0u);
  for (const Block& b : live) EXPECT_EQ(b.capacity, 16 * MiB);
}

TEST(PyTorchStrategy, best_fit_takes_the_smallest_block_then_the_lowest_address) {
  BumpUpstream up;
  PyTorchCachingStrategy s(up, {});
  const Block a = take(s, 12 * MiB);
  const Block b = take(s, 14 * MiB);
  const Block c = take(s, 14 * MiB);
  s.deallocate(c);
  s.deallocate(a);
  s.deallocate(b);
  // 13 MiB: 12 is too small; two 14 MiB blocks, the lower address (b) wins. Rest 1 MiB: no split.
  EXPECT_EQ(take(s, 13 * MiB), (Block{b.address, 14 * MiB}));
  EXPECT_EQ(take(s, 13 * MiB), (Block{c.address, 14 * MiB}));
  EXPECT_EQ(take(s, 11 * MiB), (Block{a.address, 12 * MiB}));
  EXPECT_EQ(s.stats().slack_bytes, 3 * MiB);
}

// A split or a merge changes a cached piece's size, and with it its place in the best-fit order
// (the implementation rewrites a key in place only when the order allows it). These two cases
// move a piece past another one. All requests are small (<= 1 MiB): 2 MiB segments.
TEST(PyTorchStrategy, a_split_rest_smaller_than_other_pieces_is_the_next_best_fit) {
  BumpUpstream up;
  PyTorchCachingStrategy s(up, {});
  const Block a = take(s, 256 * KiB);  // segment 1: [a | 1792 KiB]
  take(s, 1 * MiB);                    // hit: [a | 1 MiB | 768 KiB]
  take(s, 768 * KiB);                  // hit, whole: segment 1 is all handed out
  const Block c = take(s, 1 * MiB);    // segment 2: [c | 1 MiB]
  s.deallocate(a);                     // cached: a (256 KiB), segment 2's rest (1 MiB)
  // 900 KiB: the 1 MiB piece, split; its 124 KiB rest is now the smallest cached piece.
  EXPECT_EQ(take(s, 900 * KiB), (Block{c.address + 1 * MiB, 900 * KiB}));
  EXPECT_EQ(take(s, 100 * KiB), (Block{c.address + 1 * MiB + 900 * KiB, 100 * KiB}));
  EXPECT_EQ(take(s, 200 * KiB), (Block{a.address, 200 * KiB}));
  EXPECT_EQ(s.stats().hits, 5u);
  EXPECT_EQ(up.allocs, 2u);
}

TEST(PyTorchStrategy, a_merged_piece_larger_than_other_pieces_is_not_the_best_fit) {
  BumpUpstream up;
  PyTorchCachingStrategy s(up, {});
  const Block a = take(s, 256 * KiB);  // segment 1: [a | 1792 KiB]
  take(s, 1 * MiB);                    // hit: [a | 1 MiB | 768 KiB]
  take(s, 768 * KiB);                  // hit, whole: segment 1 is all handed out
  const Block c = take(s, 128 * KiB);  // segment 2: [c | 1920 KiB]
  const Block d = take(s, 1 * MiB);    // hit: [c | d | 896 KiB]
  take(s, 896 * KiB);                  // hit, whole: segment 2 is all handed out
  s.deallocate(a);                     // cached: a (256 KiB)
  s.deallocate(c);                     // cached: c (128 KiB), a
  s.deallocate(d);                     // c + d merge: a (256 KiB), c + d (1152 KiB)
  EXPECT_EQ(take(s, 200 * KiB), (Block{a.address, 200 * KiB}));
  EXPECT_EQ(take(s, 1 * MiB), (Block{c.address, 1 * MiB}));
  EXPECT_EQ(s.stats().hits, 6u);
  EXPECT_EQ(up.allocs, 2u);
}

// --- coalescing -----------------------------------------------------------------------------

TEST(PyTorchStrategy, freeing_merges_neighbours_back_into_a_whole_segment) {
  BumpUpstream up;
  PyTorchCachingStrategy s(up, {});
  const Block a = take(s, 4 * KiB);
  const Block b = take(s, 4 * KiB);
  const Block c = take(s, 4 * KiB);
  s.deallocate(b);
  ASSERT_EQ(s.segments()[0].blocks.size(), 4u);  // a, b (free), c, rest (free)
  s.deallocate(a);                               // a + b merge
  ASSERT_EQ(s.segments()[0].blocks.size(), 3u);
  EXPECT_EQ(s.segments()[0].blocks[0], (PyTorchBlockInfo{a.address, 8 * KiB, false}));
  s.deallocate(c);  // a+b, c and the rest merge: the whole segment
  const auto segs = s.segments();
  ASSERT_EQ(segs.size(), 1u);
  EXPECT_EQ(segs[0].blocks, (std::vector<PyTorchBlockInfo>{{a.address, 2 * MiB, false}}));
  EXPECT_EQ(s.stats().cached_bytes, 2 * MiB);
  s.release();  // a whole free segment goes back upstream; not an eviction
  EXPECT_EQ(s.segment_count(), 0u);
  EXPECT_EQ(up.frees, 1u);
  EXPECT_EQ(s.stats().evictions, 0u);
  EXPECT_EQ(s.stats().cached_bytes, 0u);
}

TEST(PyTorchStrategy, a_merged_large_segment_serves_a_request_of_its_full_size) {
  BumpUpstream up;
  PyTorchCachingStrategy s(up, {});
  const Block a = take(s, 5 * MiB);
  const Block b = take(s, 5 * MiB);  // hit: 5 MiB of the 15 MiB rest, rest 10 MiB
  s.deallocate(a);
  s.deallocate(b);
  const Block c = take(s, 20 * MiB);  // hit: the merged 20 MiB segment, exactly
  EXPECT_EQ(c, (Block{a.address, 20 * MiB}));
  EXPECT_EQ(up.allocs, 1u);
  EXPECT_EQ(s.stats().hits, 2u);
}

TEST(PyTorchStrategy, merging_never_crosses_segments) {
  BumpUpstream up;  // the two segments are adjacent in address space
  PyTorchCachingStrategy s(up, {});
  const Block a = take(s, 1 * MiB);
  const Block b = take(s, 1 * MiB);  // hit: the rest of the first segment is exactly 1 MiB
  const Block c = take(s, 1 * MiB);  // miss: second segment
  EXPECT_EQ(c.address, a.address + 2 * MiB);
  s.deallocate(a);
  s.deallocate(b);
  s.deallocate(c);
  const auto segs = s.segments();
  ASSERT_EQ(segs.size(), 2u);
  EXPECT_EQ(segs[0].blocks.size(), 1u);
  EXPECT_EQ(segs[1].blocks.size(), 1u);
  EXPECT_EQ(segs[1].blocks[0], (PyTorchBlockInfo{c.address, 2 * MiB, false}));
}

// --- streams --------------------------------------------------------------------------------

TEST(PyTorchStrategy, streams_never_share_blocks) {
  BumpUpstream up;
  PyTorchCachingStrategy s(up, {});
  s.deallocate(take(s, 1 * KiB, 1));
  take(s, 1 * KiB, 2);  // the cached small piece is stream 1's: miss
  EXPECT_EQ(s.segment_count(), 2u);
  EXPECT_EQ(s.stats().hits, 0u);

  // Stream 1 holds 12 MiB, stream 2 holds 32 MiB: a 16 MiB request on stream 1 finds no fit on
  // its own stream and must not take stream 2's block.
  s.deallocate(take(s, 12 * MiB, 1));
  const Block big = take(s, 32 * MiB, 2);
  s.deallocate(big);
  take(s, 16 * MiB, 1);
  EXPECT_EQ(s.stats().hits, 0u);
  EXPECT_EQ(s.reserved_bytes(), 4 * MiB + 12 * MiB + 32 * MiB + 16 * MiB);
  // On stream 2 the same request is a hit that splits the 32 MiB block.
  EXPECT_EQ(take(s, 16 * MiB, 2), (Block{big.address, 16 * MiB}));
  EXPECT_EQ(s.stats().hits, 1u);
  for (const auto& seg : s.segments()) {
    EXPECT_TRUE(seg.stream == 1 || seg.stream == 2);
  }
}

// --- max_split_size -------------------------------------------------------------------------

TEST(PyTorchStrategy, oversize_blocks_are_never_split) {
  {
    // Without max_split_size a 42 MiB block serving 40 MiB is split (rest 2 MiB > 1 MiB).
    BumpUpstream up;
    PyTorchCachingStrategy s(up, {});
    s.deallocate(take(s, 42 * MiB));
    EXPECT_EQ(take(s, 40 * MiB).capacity, 40 * MiB);
  }
  BumpUpstream up;
  PyTorchCachingStrategy s(up, max_split(40 * MiB));
  s.deallocate(take(s, 42 * MiB));
  // 40 MiB >= max_split_size: no split; 42 < 40 + 20, so the oversize block serves it whole.
  const Block b = take(s, 40 * MiB);
  EXPECT_EQ(b.capacity, 42 * MiB);
  EXPECT_EQ(s.stats().slack_bytes, 2 * MiB);
  s.deallocate(b);
  // 50 MiB segment; 45 MiB served from it whole (50 < 45 + 20), slack 5 MiB.
  const Block c = take(s, 50 * MiB);
  s.deallocate(c);
  EXPECT_EQ(take(s, 45 * MiB), (Block{c.address, 50 * MiB}));
  EXPECT_EQ(s.stats().slack_bytes, 7 * MiB);
}

TEST(PyTorchStrategy, an_oversize_block_serves_only_requests_within_20mib_of_it) {
  BumpUpstream up;
  PyTorchCachingStrategy s(up, max_split(40 * MiB));
  const Block a = take(s, 70 * MiB);
  s.deallocate(a);
  // 50 MiB: 70 >= 50 + 20 -> refused: a miss, a new 50 MiB segment.
  const Block b = take(s, 50 * MiB);
  EXPECT_NE(b.address, a.address);
  EXPECT_EQ(s.stats().hits, 0u);
  // 51 MiB: 70 < 51 + 20 -> served whole, slack 19 MiB.
  EXPECT_EQ(take(s, 51 * MiB), (Block{a.address, 70 * MiB}));
  EXPECT_EQ(s.stats().hits, 1u);
  EXPECT_EQ(s.stats().slack_bytes, 19 * MiB);
}

TEST(PyTorchStrategy, requests_below_max_split_size_never_take_an_oversize_block) {
  BumpUpstream up;
  PyTorchCachingStrategy s(up, max_split(40 * MiB));
  // 30 MiB request, cached 50 MiB oversize block: refused.
  s.deallocate(take(s, 50 * MiB));
  take(s, 30 * MiB);
  EXPECT_EQ(s.stats().hits, 0u);
  // 39 MiB gets a 40 MiB segment (rest 1 MiB: not split), which is oversize once cached: the
  // same 39 MiB request cannot reuse it and takes another segment.
  const Block a = take(s, 39 * MiB);
  EXPECT_EQ(a.capacity, 40 * MiB);
  s.deallocate(a);
  const Block b = take(s, 39 * MiB);
  EXPECT_NE(b.address, a.address);
  EXPECT_EQ(s.stats().hits, 0u);
  // Requests below max_split_size still split non-oversize blocks: 5 MiB from a 20 MiB segment.
  EXPECT_EQ(take(s, 5 * MiB).capacity, 5 * MiB);
  EXPECT_EQ(s.reserved_bytes(), (50 + 30 + 40 + 40 + 20) * MiB);
}

TEST(PyTorchStrategy, only_the_smallest_fitting_block_is_considered) {
  BumpUpstream up;
  PyTorchCachingStrategy s(up, max_split(40 * MiB));
  // Cached: 70 MiB (oversize) and 22 MiB. A 41 MiB request's smallest fit is 70 (refused: 70 >=
  // 61); a 21 MiB request's smallest fit is 22 (taken).
  s.deallocate(take(s, 70 * MiB));
  s.deallocate(take(s, 22 * MiB));
  take(s, 41 * MiB);
  EXPECT_EQ(s.stats().hits, 0u);
  EXPECT_EQ(take(s, 21 * MiB).capacity, 22 * MiB);
  EXPECT_EQ(s.stats().hits, 1u);
}

// --- roundup_power2_divisions ---------------------------------------------------------------

TEST(PyTorchStrategy, roundup_power2_divisions_rounds_to_steps_between_powers_of_two) {
  // divisions = 4: sizes <= 512 * 4 = 2048 keep the 512-byte rounding.
  EXPECT_EQ(pt::round_size(1200, 4), 1536u);
  EXPECT_EQ(pt::round_size(2048, 4), 2048u);
  // Above 2048: steps of power2_floor / 4.
  EXPECT_EQ(pt::round_size(2049, 4), 2560u);  // 2048 + 512
  EXPECT_EQ(pt::round_size(4097, 4), 5120u);  // 4096 + 1024 (512 rounding would give 4608)
  EXPECT_EQ(pt::round_size(5120, 4), 5120u);  // already on a step
  EXPECT_EQ(pt::round_size(1 * MiB + 1, 4), 1 * MiB + 256 * KiB);
  EXPECT_EQ(pt::round_size(16 * MiB, 4), 16 * MiB);  // a power of two stays
  EXPECT_EQ(pt::round_size(17 * MiB, 4), 20 * MiB);
  EXPECT_EQ(pt::round_size(4097, 2), 6144u);
  EXPECT_EQ(pt::round_size(4097, 8), 4608u);
  EXPECT_EQ(pt::round_size(4097, 1), 4608u);  // 1 division: off
  EXPECT_EQ(pt::round_size(4097, 0), 4608u);
  EXPECT_EQ(pt::roundup_power2_next_division(1200, 4), 1280u);  // PyTorch's own example

  PyTorchOptions o;
  o.roundup_power2_divisions = 4;
  BumpUpstream up;
  PyTorchCachingStrategy s(up, o);
  const Block a = take(s, 17 * MiB);  // rounded to 20 MiB -> a 20 MiB segment, no rest
  EXPECT_EQ(a.capacity, 20 * MiB);
  s.deallocate(a);
  EXPECT_EQ(take(s, 18 * MiB), a);  // also rounded to 20 MiB: an exact hit, slack 0
  EXPECT_EQ(s.stats().slack_bytes, 0u);
  // The rounded size also picks the pool: 1 MiB - 100 with 8 divisions rounds to 1 MiB (small).
  EXPECT_EQ(pt::round_size(1 * MiB - 100, 8), 1 * MiB);
}

TEST(PyTorchStrategy, division_list_sets_one_interval_per_power_of_two_from_1mib) {
  // Interval k holds requests with floor(log2 s) = 20 + k, clamped to [0, 15].
  EXPECT_EQ(pt::roundup_interval(1 * KiB), 0u);
  EXPECT_EQ(pt::roundup_interval(2 * MiB - 1), 0u);
  EXPECT_EQ(pt::roundup_interval(2 * MiB), 1u);
  EXPECT_EQ(pt::roundup_interval(256 * MiB), 8u);
  EXPECT_EQ(pt::roundup_interval(512 * MiB - 1), 8u);
  EXPECT_EQ(pt::roundup_interval(64 * 1024 * MiB), 15u);
  using Items = std::vector<pt::DivisionListItem>;
  // PyTorch's documented example [256:1,512:2,1024:4,>:8]: 256 fills intervals 0..8 with 1,
  // 512 sets interval 9 to 2, 1024 sets interval 10 to 4, and '>' fills from interval 10
  // (included, as PyTorch does) to the end with 8.
  std::vector<std::uint64_t> want(16, 8);
  for (int k = 0; k <= 8; ++k) want[k] = 1;
  want[9] = 2;
  EXPECT_EQ(pt::division_list(Items{{256, 1}, {512, 2}, {1024, 4}, {std::nullopt, 8}}), want);
  EXPECT_EQ(pt::division_list(Items{{std::nullopt, 4}}), std::vector<std::uint64_t>(16, 4));
  // Only the first bound fills the intervals below it; bounds past 32 GiB clamp to interval 15.
  std::vector<std::uint64_t> two(16, 0);
  for (int k = 0; k <= 6; ++k) two[k] = 4;
  two[15] = 2;
  EXPECT_EQ(pt::division_list(Items{{64, 4}, {128, 0}, {std::uint64_t{1} << 40, 2}}), two);
  EXPECT_THROW(pt::division_list(Items{{3, 2}}), alloclab::SpecError);  // bound not a power of 2
  EXPECT_THROW(pt::division_list(Items{{4, 3}}), alloclab::SpecError);  // divisions neither
  EXPECT_THROW(pt::division_list(Items{}), alloclab::SpecError);
}

TEST(PyTorchStrategy, a_division_list_rounds_each_size_with_its_own_interval) {
  // [4:2,8:4]: intervals 0..2 (below 8 MiB) get 2 divisions, interval 3 (8..16 MiB) 4, the rest
  // none (512-byte rounding).
  PyTorchOptions o;
  o.roundup_power2_division_list = pt::division_list({{4, 2}, {8, 4}});
  EXPECT_EQ(o.divisions_for(5 * MiB + 1), 2u);
  EXPECT_EQ(o.divisions_for(9 * MiB), 4u);
  EXPECT_EQ(o.divisions_for(17 * MiB), 0u);
  BumpUpstream up;
  PyTorchCachingStrategy s(up, o);
  // 5 MiB + 1, 2 divisions: steps of 4 MiB / 2 -> 6 MiB; a 20 MiB segment, split (rest 14 MiB).
  EXPECT_EQ(take(s, 5 * MiB + 1).capacity, 6 * MiB);
  // 9 MiB, 4 divisions: steps of 8 MiB / 4 -> 10 MiB; a hit on the 14 MiB rest, split (rest 4).
  EXPECT_EQ(take(s, 9 * MiB).capacity, 10 * MiB);
  EXPECT_EQ(s.stats().hits, 1u);
  // 17 MiB, no divisions: 17 MiB; no fit (4 MiB cached): an 18 MiB segment, rest 1 MiB kept.
  EXPECT_EQ(take(s, 17 * MiB).capacity, 18 * MiB);
  EXPECT_EQ(s.reserved_bytes(), 38 * MiB);
}

// --- max_non_split_rounding -----------------------------------------------------------------

TEST(PyTorchStrategy, max_non_split_rounding_widens_what_an_oversize_block_may_serve) {
  PyTorchOptions o = max_split(40 * MiB);
  o.max_non_split_rounding = 30 * MiB;
  BumpUpstream up;
  PyTorchCachingStrategy s(up, o);
  const Block a = take(s, 70 * MiB);
  s.deallocate(a);
  // 40 MiB: 70 - 40 = 30, not < 30 -> refused: a new 40 MiB segment.
  const Block b = take(s, 40 * MiB);
  EXPECT_NE(b.address, a.address);
  // 45 MiB: 70 - 45 = 25 < 30 -> served whole (the default 20 MiB would refuse), slack 25 MiB.
  EXPECT_EQ(take(s, 45 * MiB), a);
  EXPECT_EQ(s.stats().hits, 1u);
  EXPECT_EQ(s.stats().slack_bytes, 25 * MiB);
}

// --- per_process_memory_fraction and garbage_collection_threshold ---------------------------

PyTorchOptions fraction(std::uint64_t num, std::uint64_t den, std::uint64_t device) {
  PyTorchOptions o;
  o.per_process_memory_fraction = alloclab::Ratio{num, den};
  o.device_memory = device;
  return o;
}

TEST(PyTorchStrategy, a_memory_fraction_fails_segments_beyond_it_after_freeing_the_cache) {
  BumpUpstream up;                                           // no limit of its own
  PyTorchCachingStrategy s(up, fraction(5, 10, 100 * MiB));  // allowed: 50 MiB
  EXPECT_EQ(s.options().allowed_memory(), 50 * MiB);
  take(s, 30 * MiB);
  s.deallocate(take(s, 12 * MiB));  // reserved 42 MiB, the 12 MiB segment whole and free
  // 16 MiB: no fit; 42 + 16 > 50 fails without asking the upstream; the whole free 12 MiB
  // segment goes back (one eviction); the retry fits: 30 + 16 = 46 <= 50.
  EXPECT_EQ(take(s, 16 * MiB).capacity, 16 * MiB);
  EXPECT_EQ(s.stats().evictions, 1u);
  EXPECT_EQ(s.reserved_bytes(), 46 * MiB);
  EXPECT_EQ(up.calls, 3u);
  // 6 MiB wants a 20 MiB segment: 46 + 20 > 50 and nothing is cached: it fails.
  EXPECT_EQ(s.allocate(6 * MiB, 0), std::nullopt);
  EXPECT_EQ(s.stats().failed, 1u);
  EXPECT_EQ(up.calls, 3u);
  // A fraction of 0 allows no segment at all.
  PyTorchCachingStrategy none(up, fraction(0, 1, 100 * MiB));
  EXPECT_EQ(none.allocate(512, 0), std::nullopt);
  EXPECT_EQ(up.calls, 3u);
}

TEST(PyTorchStrategy, garbage_collection_frees_the_oldest_whole_segments_above_the_threshold) {
  PyTorchOptions o = fraction(1, 1, 100 * MiB);             // allowed 100 MiB
  o.garbage_collection_threshold = alloclab::Ratio{5, 10};  // collect above 50 MiB reserved
  BumpUpstream up;
  PyTorchCachingStrategy s(up, o);
  // Each large request is one search of the large pool (the clock of the ages).
  const Block a = take(s, 20 * MiB);  // search 1: reserved 20
  const Block b = take(s, 22 * MiB);  // search 2: reserved 42
  const Block c = take(s, 24 * MiB);  // search 3: 42 <= 50, no collection; reserved 66
  s.deallocate(a);                    // cached at search 3
  s.deallocate(b);                    // cached at search 3
  // Search 4: 21 MiB takes b's 22 MiB piece whole (rest 1 MiB: not split); freed again at 4.
  s.deallocate(take(s, 21 * MiB));
  EXPECT_EQ(s.stats().hits, 1u);
  // Search 5: 30 MiB, no fit. 66 > 50: collect 16 MiB. Ages: a 5-3 = 2, b 5-4 = 1; average 1.5:
  // a goes (20 >= 16 reclaimed), b stays although it is the best fit for nothing here.
  const Block e = take(s, 30 * MiB);
  EXPECT_EQ(s.stats().evictions, 1u);
  EXPECT_EQ(s.reserved_bytes(), 76 * MiB);  // b 22 + c 24 + e 30
  auto segs = s.segments();
  ASSERT_EQ(segs.size(), 3u);
  EXPECT_EQ(segs[0].address, b.address);
  s.deallocate(c);  // cached at search 5
  s.deallocate(e);  // cached at search 5
  // Search 6: 40 MiB, no fit. 76 > 50: collect 26 MiB. Ages b 2, c 1, e 1; average 4/3: b goes
  // (22 < 26). Second pass: ages c 1, e 1, average 1: both go (a pass does not stop at the
  // target). Then the 40 MiB segment.
  take(s, 40 * MiB);
  EXPECT_EQ(s.stats().evictions, 4u);
  EXPECT_EQ(s.reserved_bytes(), 40 * MiB);
  EXPECT_EQ(s.segment_count(), 1u);
}

TEST(PyTorchStrategy, garbage_collection_waits_for_the_threshold_and_spares_split_segments) {
  PyTorchOptions o = fraction(1, 1, 100 * MiB);
  o.garbage_collection_threshold = alloclab::Ratio{5, 10};
  BumpUpstream up;
  PyTorchCachingStrategy s(up, o);
  const Block a = take(s, 5 * MiB);  // a 20 MiB segment, split: its 15 MiB rest stays cached
  s.deallocate(take(s, 30 * MiB));   // reserved 50, the 30 MiB segment whole and free
  // 16 MiB: best fit is the 30 MiB piece (15 < 16) -> a hit; no collection on a hit.
  const Block b = take(s, 16 * MiB);
  s.deallocate(b);  // merged back: the 30 MiB segment whole again
  // 40 MiB: no fit; 50 <= 50: no collection; a 40 MiB segment (reserved 90).
  take(s, 40 * MiB);
  EXPECT_EQ(s.stats().evictions, 0u);
  // 35 MiB: no fit (30 < 35). 90 > 50: collect. Freeable: only the whole 30 MiB segment (the
  // 15 MiB rest belongs to a's split segment). It goes; 60 + 36 <= 100.
  take(s, 35 * MiB);
  EXPECT_EQ(s.stats().evictions, 1u);
  EXPECT_EQ(s.reserved_bytes(), (20 + 40 + 36) * MiB);
  (void)a;
}

// --- out of memory --------------------------------------------------------------------------

TEST(PyTorchStrategy, on_upstream_failure_whole_free_segments_are_released_and_the_call_retried) {
  BumpUpstream up(64 * MiB);
  PyTorchCachingStrategy s(up, {});
  const Block a = take(s, 5 * MiB);   // 20 MiB segment
  const Block b = take(s, 12 * MiB);  // hit, rest 3 MiB stays cached in the split segment
  s.deallocate(take(s, 30 * MiB));    // 30 MiB segment, whole and free: reserved 50 MiB
  s.deallocate(take(s, 1 * KiB));     // a 2 MiB small segment, whole and free: reserved 52 MiB
  // 40 MiB: no fit; 52 + 40 > 64 fails; the whole free segments (30 MiB, 2 MiB) go; retry works.
  const Block c = take(s, 40 * MiB);
  EXPECT_EQ(c.capacity, 40 * MiB);
  EXPECT_EQ(s.stats().evictions, 2u);
  EXPECT_EQ(s.reserved_bytes(), 60 * MiB);
  EXPECT_EQ(up.calls, up.allocs + 1);  // one failed upstream call
  EXPECT_EQ(s.stats().failed, 0u);
  // 10 MiB: 60 + 10 > 64; only the split 20 MiB segment's 3 MiB rest is cached: it cannot be
  // released, the retry fails too -> nullopt.
  EXPECT_EQ(s.allocate(10 * MiB, 0), std::nullopt);
  EXPECT_EQ(s.stats().failed, 1u);
  EXPECT_EQ(s.stats().requests, 6u);
  EXPECT_EQ(s.stats().evictions, 2u);
  EXPECT_EQ(s.reserved_bytes(), 60 * MiB);
  EXPECT_EQ(s.stats().cached_bytes, 3 * MiB);
  (void)a;
  (void)b;
}

TEST(PyTorchStrategy, with_max_split_size_oom_first_releases_one_fitting_oversize_block) {
  BumpUpstream up(160 * MiB);
  PyTorchCachingStrategy s(up, max_split(40 * MiB));
  const Block a = take(s, 70 * MiB);
  const Block b = take(s, 80 * MiB);
  s.deallocate(a);
  s.deallocate(b);
  // 45 MiB: smallest fit 70 is refused (70 >= 65); 150 + 46 > 160 fails. The smallest oversize
  // block >= max(45, 40) MiB, the 70 MiB one, goes; the retry fits (80 + 46 <= 160).
  const Block c = take(s, 45 * MiB);
  EXPECT_EQ(c.capacity, 46 * MiB);
  EXPECT_EQ(s.stats().evictions, 1u);
  EXPECT_EQ(s.reserved_bytes(), 126 * MiB);
  const auto segs = s.segments();
  ASSERT_EQ(segs.size(), 2u);
  EXPECT_EQ(segs[0].address, b.address);
}

TEST(PyTorchStrategy, with_max_split_size_oom_releases_largest_oversize_blocks_until_enough) {
  BumpUpstream up(150 * MiB);
  PyTorchCachingStrategy s(up, max_split(40 * MiB));
  const Block small = take(s, 5 * MiB);  // a 20 MiB segment (not oversize)
  const Block a = take(s, 42 * MiB);
  const Block b = take(s, 44 * MiB);
  s.deallocate(small);
  s.deallocate(a);
  s.deallocate(b);  // reserved 106 MiB, all free
  // 60 MiB: no block >= 60; 106 + 60 > 150 fails. No single oversize block >= 60, so release
  // from the largest down: 44 (total 44 < 60), 42 (total 86 >= 60). Retry: 20 + 60 <= 150.
  take(s, 60 * MiB);
  EXPECT_EQ(s.stats().evictions, 2u);
  EXPECT_EQ(s.reserved_bytes(), 80 * MiB);
  EXPECT_EQ(s.segments()[0].address, small.address);
}

TEST(PyTorchStrategy, with_max_split_size_a_short_oversize_release_falls_back_to_all) {
  BumpUpstream up(110 * MiB);
  PyTorchCachingStrategy s(up, max_split(40 * MiB));
  const Block small = take(s, 5 * MiB);  // 20 MiB segment
  const Block a = take(s, 42 * MiB);
  s.deallocate(small);
  s.deallocate(a);
  // 100 MiB: 62 + 100 > 110. Oversize release frees 42 (< 100: not enough, but it stays freed);
  // then every whole free segment goes (the 20 MiB one); the retry fits.
  take(s, 100 * MiB);
  EXPECT_EQ(s.stats().evictions, 2u);
  EXPECT_EQ(s.reserved_bytes(), 100 * MiB);
  EXPECT_EQ(up.calls, up.allocs + 1);  // the first call failed; no retry after the short release
}

TEST(PyTorchStrategy, release_keeps_segments_that_hold_live_blocks) {
  BumpUpstream up;
  PyTorchCachingStrategy s(up, {});
  const Block live = take(s, 5 * MiB);  // 20 MiB segment, 15 MiB cached in it
  s.deallocate(take(s, 1 * KiB));       // 2 MiB small segment, whole and free
  s.deallocate(take(s, 12 * MiB, 7));   // 12 MiB segment on stream 7, whole and free
  s.release();
  EXPECT_EQ(s.segment_count(), 1u);
  EXPECT_EQ(s.reserved_bytes(), 20 * MiB);
  EXPECT_EQ(s.stats().cached_bytes, 15 * MiB);
  EXPECT_EQ(s.stats().evictions, 0u);
  EXPECT_EQ(up.frees, 2u);
  s.deallocate(live);
  s.release();
  EXPECT_EQ(s.segment_count(), 0u);
  EXPECT_EQ(up.live_bytes, 0u);
}

TEST(PyTorchStrategy, huge_requests_fail_without_asking_the_upstream) {
  BumpUpstream up;
  PyTorchCachingStrategy s(up, {});
  EXPECT_EQ(s.allocate(pt::kMaxRequest + 1, 0), std::nullopt);
  EXPECT_EQ(s.allocate(~std::uint64_t{0}, 0), std::nullopt);
  EXPECT_EQ(up.calls, 0u);
  EXPECT_EQ(s.stats().failed, 2u);
  EXPECT_EQ(s.stats().requests, 2u);
}

// --- num_alloc_retries and num_ooms ----------------------------------------------------------

std::uint64_t retries(const PyTorchCachingStrategy& s) {
  return s.counters().at("num_alloc_retries");
}
std::uint64_t ooms(const PyTorchCachingStrategy& s) {
  return s.counters().at("num_ooms");
}

// PyTorch counts a retry when malloc calls alloc_block with isRetry, the attempt that follows
// release_cached_blocks, before it knows the outcome; an OOM when that attempt fails too.
TEST(PyTorchStrategy,
     counts_a_retry_for_each_attempt_after_freeing_the_cache_and_an_oom_per_failure) {
  BumpUpstream up(64 * MiB);
  PyTorchCachingStrategy s(up, {});
  EXPECT_EQ(s.counters(), (alloclab::StrategyCounters{{"num_alloc_retries", 0}, {"num_ooms", 0}}));
  const Block a = take(s, 5 * MiB);   // 20 MiB segment, 15 MiB cached in it
  const Block b = take(s, 12 * MiB);  // hit: 3 MiB stays cached in the split segment
  s.deallocate(take(s, 30 * MiB));    // reserved 50 MiB; the 30 MiB segment whole and free
  EXPECT_EQ(retries(s), 0u);          // no upstream failure yet
  // 40 MiB: 50 + 40 > 64 fails; no max_split_size, so straight to release_cached_blocks (the
  // 30 MiB segment goes) and the retry (counted) fits: 20 + 40 <= 64.
  take(s, 40 * MiB);
  EXPECT_EQ(retries(s), 1u);
  EXPECT_EQ(ooms(s), 0u);
  // 10 MiB: 60 + 10 > 64; nothing whole to free; the retry (counted) fails: an OOM.
  EXPECT_EQ(s.allocate(10 * MiB, 0), std::nullopt);
  EXPECT_EQ(retries(s), 2u);
  EXPECT_EQ(ooms(s), 1u);
  // Again: each failed request is one more retry and one more OOM.
  EXPECT_EQ(s.allocate(10 * MiB, 0), std::nullopt);
  EXPECT_EQ(retries(s), 3u);
  EXPECT_EQ(ooms(s), 2u);
  EXPECT_EQ(s.stats().failed, 2u);
  // Freeing a and b makes their 20 MiB segment whole again. 24 MiB: no fit; 60 + 24 > 64
  // fails; the 20 MiB segment goes and the retry (counted, no OOM) fits: 40 + 24 <= 64.
  s.deallocate(a);
  s.deallocate(b);
  take(s, 24 * MiB);
  EXPECT_EQ(retries(s), 4u);
  EXPECT_EQ(ooms(s), 2u);
  EXPECT_EQ(s.reserved_bytes(), 64 * MiB);
}

// alloc_block after release_available_cached_blocks is not a retry in PyTorch (isRetry is
// false): only when that step frees too little and release_cached_blocks follows is one counted.
TEST(PyTorchStrategy, a_retry_after_releasing_one_oversize_block_is_not_counted) {
  BumpUpstream up(160 * MiB);
  PyTorchCachingStrategy s(up, max_split(40 * MiB));
  const Block a = take(s, 70 * MiB);
  const Block b = take(s, 80 * MiB);
  s.deallocate(a);
  s.deallocate(b);
  // 45 MiB: 150 + 46 > 160 fails; the 70 MiB block goes; the second attempt fits: no retry.
  take(s, 45 * MiB);
  EXPECT_EQ(retries(s), 0u);
  EXPECT_EQ(ooms(s), 0u);

  BumpUpstream up2(110 * MiB);
  PyTorchCachingStrategy t(up2, max_split(40 * MiB));
  const Block small = take(t, 5 * MiB);  // 20 MiB segment
  const Block c = take(t, 42 * MiB);
  t.deallocate(small);
  t.deallocate(c);
  // 100 MiB: 62 + 100 > 110; the oversize release frees 42 MiB (< 100: not enough), so
  // release_cached_blocks runs and its attempt (counted) fits.
  take(t, 100 * MiB);
  EXPECT_EQ(retries(t), 1u);
  EXPECT_EQ(ooms(t), 0u);
}

TEST(PyTorchStrategy, a_memory_fraction_failure_counts_as_a_retry_and_an_oom) {
  BumpUpstream up;
  PyTorchCachingStrategy s(up, fraction(5, 10, 100 * MiB));  // allowed: 50 MiB
  take(s, 30 * MiB);
  s.deallocate(take(s, 12 * MiB));
  take(s, 16 * MiB);  // 42 + 16 > 50: the 12 MiB segment goes, the retry fits
  EXPECT_EQ(retries(s), 1u);
  EXPECT_EQ(s.allocate(6 * MiB, 0), std::nullopt);  // 46 + 20 > 50, nothing to free
  EXPECT_EQ(retries(s), 2u);
  EXPECT_EQ(ooms(s), 1u);
}

// The model refuses these without touching its cache (docs/strategies.md, rule 1): an OOM, and
// no retry since none is made.
TEST(PyTorchStrategy, a_huge_request_is_an_oom_without_a_retry) {
  BumpUpstream up;
  PyTorchCachingStrategy s(up, {});
  EXPECT_EQ(s.allocate(pt::kMaxRequest + 1, 0), std::nullopt);
  EXPECT_EQ(retries(s), 0u);
  EXPECT_EQ(ooms(s), 1u);
}

// --- contract -------------------------------------------------------------------------------

TEST(PyTorchStrategy, deallocating_a_block_it_did_not_hand_out_throws) {
  BumpUpstream up;
  PyTorchCachingStrategy s(up, {});
  const Block a = take(s, 1 * KiB);
  EXPECT_THROW(s.deallocate(Block{a.address + 512, 512}), std::invalid_argument);
  EXPECT_THROW(s.deallocate(Block{a.address, 512}), std::invalid_argument);  // wrong capacity
  s.deallocate(a);
  EXPECT_THROW(s.deallocate(a), std::invalid_argument);  // twice
}

TEST(PyTorchStrategy, options_are_validated) {
  BumpUpstream up;
  auto make = [&](std::uint64_t max_split_size, std::uint64_t divisions) {
    PyTorchOptions o;
    o.max_split_size = max_split_size;
    o.roundup_power2_divisions = divisions;
    PyTorchCachingStrategy s(up, o);
  };
  EXPECT_NO_THROW(make(pt::kUnlimited, 0));
  EXPECT_NO_THROW(make(20 * MiB, 0));
  EXPECT_NO_THROW(make(64 * MiB, 1));
  EXPECT_NO_THROW(make(pt::kUnlimited, 2));
  EXPECT_NO_THROW(make(pt::kUnlimited, pt::kMaxDivisions));
  EXPECT_THROW(make(19 * MiB, 0), alloclab::SpecError);
  EXPECT_THROW(make(20 * MiB + 512, 0), alloclab::SpecError);  // PyTorch takes whole MiB
  EXPECT_THROW(make(pt::kUnlimited, 3), alloclab::SpecError);
  EXPECT_THROW(make(pt::kUnlimited, pt::kMaxDivisions * 2), alloclab::SpecError);
}

TEST(PyTorchStrategy, memory_and_rounding_options_are_validated) {
  BumpUpstream up;
  auto make = [&](const PyTorchOptions& o) { PyTorchCachingStrategy s(up, o); };
  PyTorchOptions o;
  o.max_non_split_rounding = 19 * MiB;  // PyTorch: at least 20 MiB
  EXPECT_THROW(make(o), alloclab::SpecError);
  o.max_non_split_rounding = 64 * MiB;
  EXPECT_NO_THROW(make(o));
  EXPECT_NO_THROW(make(fraction(1, 1, 80 * MiB)));
  EXPECT_THROW(make(fraction(11, 10, 80 * MiB)), alloclab::SpecError);  // above 1
  EXPECT_THROW(make(fraction(1, 2, 0)), alloclab::SpecError);           // no device memory
  PyTorchOptions device_only;
  device_only.device_memory = 80 * MiB;
  EXPECT_THROW(make(device_only), alloclab::SpecError);
  PyTorchOptions gc = fraction(1, 2, 80 * MiB);
  for (const alloclab::Ratio bad : {alloclab::Ratio{0, 1}, alloclab::Ratio{1, 1}}) {
    gc.garbage_collection_threshold = bad;
    EXPECT_THROW(make(gc), alloclab::SpecError);
  }
  gc.garbage_collection_threshold = alloclab::Ratio{8, 10};
  EXPECT_NO_THROW(make(gc));
  PyTorchOptions gc_alone;
  gc_alone.garbage_collection_threshold = alloclab::Ratio{8, 10};
  EXPECT_THROW(make(gc_alone), alloclab::SpecError);  // PyTorch collects only with a fraction
  PyTorchOptions short_list;
  short_list.roundup_power2_division_list = {4, 4};
  EXPECT_THROW(make(short_list), alloclab::SpecError);
}

// --- invariants under a random workload ----------------------------------------------------

struct Live {
  Block block;
  std::uint64_t stream;
};

void check_invariants(const PyTorchCachingStrategy& s, const BumpUpstream& up,
                      const std::vector<Live>& live) {
  std::uint64_t reserved = 0;
  std::uint64_t allocated = 0;
  std::map<std::uint64_t, std::uint64_t> allocated_blocks;
  for (const auto& seg : s.segments()) {
    reserved += seg.size;
    if (seg.small) {
      EXPECT_EQ(seg.size, pt::kSmallBuffer);
    }
    std::uint64_t at = seg.address;
    bool previous_free = false;
    for (const auto& b : seg.blocks) {
      ASSERT_EQ(b.address, at) << "pieces of a segment are contiguous";
      ASSERT_FALSE(previous_free && !b.allocated) << "free neighbours are always merged";
      ASSERT_EQ(b.size % pt::kMinBlockSize, 0u);
      if (!b.allocated && b.size >= s.options().max_split_size) {
        ASSERT_EQ(seg.blocks.size(), 1u) << "a cached oversize block is a whole segment";
      }
      if (b.allocated) {
        allocated += b.size;
        allocated_blocks.emplace(b.address, b.size);
      }
      previous_free = !b.allocated;
      at += b.size;
    }
    ASSERT_EQ(at, seg.address + seg.size);
  }
  ASSERT_EQ(reserved, s.reserved_bytes());
  ASSERT_EQ(reserved, up.live_bytes);
  ASSERT_EQ(allocated, s.allocated_bytes());
  ASSERT_EQ(s.stats().cached_bytes, reserved - allocated);
  ASSERT_EQ(allocated_blocks.size(), live.size());
  for (const Live& l : live) {
    auto it = allocated_blocks.find(l.block.address);
    ASSERT_TRUE(it != allocated_blocks.end());
    ASSERT_EQ(it->second, l.block.capacity);
  }
  // Every miss is exactly one successful upstream allocation.
  ASSERT_EQ(up.allocs, s.stats().requests - s.stats().hits - s.stats().failed);
  ASSERT_EQ(up.frees, s.stats().evictions);
}

void run_random_workload(PyTorchOptions options, std::uint64_t seed) {
  BumpUpstream up(768 * MiB);
  PyTorchCachingStrategy s(up, options);
  SplitMix rng{seed};
  std::vector<Live> live;
  for (int op = 0; op < 10000; ++op) {
    if (live.empty() || rng.below(100) < 55) {
      std::uint64_t size = 0;
      switch (rng.below(4)) {
        case 0:
          size = 1 + rng.below(64 * KiB);
          break;
        case 1:
          size = 1 + rng.below(2 * MiB);
          break;
        case 2:
          size = 1 + rng.below(12 * MiB);
          break;
        default:
          size = 1 + rng.below(90 * MiB);
          break;
      }
      const std::uint64_t stream = rng.below(3);
      if (std::optional<Block> b = s.allocate(size, stream)) {
        ASSERT_GE(b->capacity, size);
        live.push_back({*b, stream});
      }
    } else {
      const std::size_t i = rng.below(live.size());
      s.deallocate(live[i].block);
      live[i] = live.back();
      live.pop_back();
    }
    ASSERT_NO_FATAL_FAILURE(check_invariants(s, up, live)) << "after op " << op;
  }
  EXPECT_GT(s.stats().hits, 0u);
  EXPECT_GT(s.stats().evictions, 0u);
  for (const Live& l : live) s.deallocate(l.block);
  s.release();
  EXPECT_EQ(s.segment_count(), 0u);
  EXPECT_EQ(up.live_bytes, 0u);
}

TEST(PyTorchStrategy, invariants_hold_under_a_random_workload) {
  run_random_workload({}, 1);
}

TEST(PyTorchStrategy, invariants_hold_under_a_random_workload_with_both_options) {
  PyTorchOptions o;
  o.max_split_size = 24 * MiB;
  o.roundup_power2_divisions = 4;
  run_random_workload(o, 2);
  o.max_split_size = 20 * MiB;
  run_random_workload(o, 3);
}

TEST(PyTorchStrategy, invariants_hold_under_a_random_workload_with_memory_options) {
  // A fraction below the upstream's 768 MiB makes the fraction, not the upstream, fail first.
  PyTorchOptions o = fraction(6, 10, 1024 * MiB);
  o.max_split_size = 24 * MiB;
  o.max_non_split_rounding = 40 * MiB;
  o.garbage_collection_threshold = alloclab::Ratio{5, 10};
  o.roundup_power2_division_list = pt::division_list({{2, 2}, {8, 4}, {std::nullopt, 8}});
  run_random_workload(o, 4);
}

}  // namespace
