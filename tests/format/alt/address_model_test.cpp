// Versions 4 and 5 of the .alt format: sizes in byte planes and allocation addresses coded
// through the freed-block model and the chunk's recent frees (format/alt/freed_blocks.hpp),
// with files of earlier versions still loading.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <random>

#include "alloclab/format/alt/alt.hpp"
#include "alloclab/format/resolve.hpp"
#include "format/alt/codec.hpp"
#include "tests/format/trace_test_util.hpp"

namespace alloclab {
namespace {

using test::TempFile;

// Events shaped like a real allocator's: per-size free lists handed out newest first (but not
// always: sometimes deeper than the model looks, sometimes another class's block), a bump
// pointer for fresh memory, and the awkward cases: blocks from before the trace, free(NULL),
// failed allocations, an allocation over a live block, SIZE_MAX requests, markers.
Trace allocator_like_trace(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<std::uint64_t>> free_lists(40);
  std::vector<std::pair<std::uint64_t, std::size_t>> live;  // address, class
  std::uint64_t top = 0x5555'0000'0000ull;
  Trace t;
  Event e;
  e.time_ns = 1000;
  for (std::size_t i = 0; i < n; ++i) {
    e.time_ns += rng() % 300;
    e.label.clear();
    e.alignment = 0;
    const unsigned pick = static_cast<unsigned>(rng() % 1000);
    if (pick < 480 || live.empty()) {
      const std::size_t cls = rng() % free_lists.size();
      e.op = Op::alloc;
      e.size = cls * 16 + rng() % 16 + 1;
      std::vector<std::uint64_t>& list = free_lists[cls];
      const unsigned how = static_cast<unsigned>(rng() % 10);
      if (how < 6 && !list.empty()) {
        // Newest first, now and then a little deeper (past the model's 8 ranks too).
        std::size_t depth = rng() % 4 == 0 ? rng() % list.size() : 0;
        e.address = list[list.size() - 1 - depth];
        list.erase(list.end() - 1 - static_cast<std::ptrdiff_t>(depth));
      } else if (how < 7) {
        std::vector<std::uint64_t>& other = free_lists[rng() % free_lists.size()];
        if (other.empty()) {
          e.address = top += 4096;
        } else {
          e.address = other.back();
          other.pop_back();
        }
      } else if (how < 8 && !live.empty()) {
        e.address = live[rng() % live.size()].first;  // over a live block (an anomaly)
      } else if (how < 9 && rng() % 8 == 0) {
        e.address = 0;  // failed
        e.size = rng() % 2 ? ~std::uint64_t{0} : std::uint64_t{1} << 40;
      } else {
        e.address = top += (e.size + 31) & ~std::uint64_t{15};
      }
      if (e.address != 0) live.emplace_back(e.address, cls);
    } else if (pick < 960) {
      e.op = Op::free;
      e.size = 0;
      if (rng() % 50 == 0) {
        e.address = rng() % 2 ? 0 : 0x1000'0000 + (rng() % 1000) * 64;  // NULL, or older
      } else {
        const std::size_t k = rng() % live.size();
        e.address = live[k].first;
        free_lists[live[k].second].push_back(e.address);
        live[k] = live.back();
        live.pop_back();
      }
    } else {
      e.op = static_cast<Op>(2 + rng() % 3);
      e.size = 0;
      e.address = rng() % 4 == 0 ? rng() : 0;
      if (rng() % 2) e.label = "step " + std::to_string(i);
    }
    t.push_back(e);
  }
  return t;
}

TEST(AltAddressModel, allocator_like_traces_round_trip_at_every_chunk_size) {
  const Trace original = allocator_like_trace(20'000, 3);
  for (const std::size_t per_chunk : {std::size_t{65536}, std::size_t{1}, std::size_t{2},
                                      std::size_t{9}, std::size_t{700}, std::size_t{5000}}) {
    const Trace loaded = test::written_and_read(original, per_chunk);
    EXPECT_TRUE(loaded.warnings.empty()) << per_chunk;
    ASSERT_EQ(loaded.size(), original.size()) << per_chunk;
    for (std::size_t i = 0; i < original.size(); ++i)
      ASSERT_EQ(loaded.event(i), original.event(i)) << "event " << i << ", chunks of " << per_chunk;
  }
}

TEST(AltAddressModel, many_seeds_round_trip) {
  for (std::uint64_t seed = 10; seed < 40; ++seed) {
    const Trace original = allocator_like_trace(3000, seed);
    EXPECT_TRUE(test::written_and_read(original, 100 + seed * 37) == original) << "seed " << seed;
  }
}

TEST(AltAddressModel, freed_blocks_rank_newest_first_and_forget_the_oldest) {
  using detail::FreedBlocks;
  detail::FreedBlocks freed;
  const std::uint32_t ring = FreedBlocks::ring_for(100);
  EXPECT_EQ(FreedBlocks::ring_for(104), ring);  // the same glibc class (112-byte chunks)
  EXPECT_NE(FreedBlocks::ring_for(400), ring);
  EXPECT_LT(FreedBlocks::ring_for(~std::uint64_t{0}), FreedBlocks::ring_count);
  for (std::uint64_t a = 1; a <= 10; ++a) freed.freed(ring, a * 0x1000);
  // Ten freed, eight kept: 0xA000 is rank 0, 0x3000 rank 7, 0x1000 and 0x2000 are gone.
  EXPECT_EQ(freed.take(ring, 0xA000), 0);
  EXPECT_EQ(freed.take(ring, 0x3000), 6);  // 0xA000 left: everything older moved up
  EXPECT_EQ(freed.take(ring, 0x2000), -1);
  EXPECT_EQ(freed.take(ring, 0x9000), 0);
  EXPECT_EQ(freed.take(FreedBlocks::ring_for(400), 0x8000), -1);  // another ring
  EXPECT_EQ(freed.take(ring, 0), -1);
  EXPECT_EQ(freed.take_rank(ring, 1), 0x7000u);  // after 0x8000
  EXPECT_EQ(freed.take_rank(ring, 4), 0u);       // only 0x8000, 0x6000, 0x5000, 0x4000 left
  EXPECT_EQ(freed.take_rank(ring, 3), 0x4000u);
  freed.clear();
  EXPECT_EQ(freed.take_rank(ring, 0), 0u);
}

// A program that frees eight blocks of one size and takes them back, newest first: every
// reallocation costs a one-byte rank and no address delta.
TEST(AltAddressModel, reallocating_a_just_freed_block_needs_no_address_delta) {
  std::mt19937_64 rng(5);
  Trace t;
  Event e;
  std::vector<std::uint64_t> blocks;
  for (int k = 0; k < 8; ++k) {
    e.op = Op::alloc;
    e.size = 256;
    e.address = (rng() % (std::uint64_t{1} << 40)) * 16;
    blocks.push_back(e.address);
    t.push_back(e);
  }
  for (int round = 0; round < 100; ++round) {
    for (const std::uint64_t address : blocks) {
      e.op = Op::free;
      e.size = 0;
      e.address = address;
      t.push_back(e);
    }
    for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
      e.op = Op::alloc;
      e.size = 250;
      e.address = *it;
      t.push_back(e);
    }
  }
  detail::EncodeScratch scratch;
  detail::StackCursor cursor;
  std::vector<std::uint8_t> raw;
  detail::encode_chunk(t, 0, t.size(), cursor, raw, scratch);
  // Only the first eight allocations carry deltas (six bytes each at most for 2^44 spans).
  EXPECT_LE(scratch.deltas.size(), 8u * 7);
  ASSERT_EQ(scratch.reuse.size(), 808u);
  for (std::size_t k = 8; k < scratch.reuse.size(); ++k) ASSERT_EQ(scratch.reuse[k], 1) << k;

  Trace back;
  detail::DecodeScratch decode;
  std::string error;
  ASSERT_TRUE(detail::decode_chunk(raw.data(), raw.size(), static_cast<std::uint32_t>(t.size()),
                                   alt_format_version, back, decode, error))
      << error;
  EXPECT_EQ(back, t);
}

// Sections of an encoded chunk, counted from its end: the delta stream, then the byte planes
// (low bytes first) of the allocations back and the recent frees, the reuse codes, and the
// planes of the free references.
constexpr std::size_t after_low_section = 4;
constexpr std::size_t recent_low_section = 7;
constexpr std::size_t reuse_section = 8;
constexpr std::size_t free_refs_low_section = 11;

struct BytePatch {
  std::size_t section_from_end;
  std::size_t offset;
  std::uint8_t value;
};

// The encoded chunk of `t` with bytes of its sections replaced, decoded again.
std::string decode_with_patches(const Trace& t, std::initializer_list<BytePatch> patches) {
  detail::EncodeScratch scratch;
  detail::StackCursor cursor;
  std::vector<std::uint8_t> raw;
  detail::encode_chunk(t, 0, t.size(), cursor, raw, scratch);
  const std::vector<std::size_t>& ends = scratch.section_ends;
  for (const BytePatch& patch : patches) {
    const std::size_t start = ends[ends.size() - patch.section_from_end - 1];
    EXPECT_LT(start + patch.offset, ends[ends.size() - patch.section_from_end]);
    raw[start + patch.offset] = patch.value;
  }
  Trace back;
  detail::DecodeScratch decode;
  std::string error;
  EXPECT_FALSE(detail::decode_chunk(raw.data(), raw.size(), static_cast<std::uint32_t>(t.size()),
                                    alt_format_version, back, decode, error));
  EXPECT_EQ(back.size(), 0u);
  return error;
}

std::string decode_with_patch(const Trace& t, std::size_t section_from_end, std::size_t offset,
                              std::uint8_t value) {
  return decode_with_patches(t, {{section_from_end, offset, value}});
}

TEST(AltAddressModel, impossible_ranks_and_references_are_errors) {
  // The second allocation takes rank 0 of its ring: the block just freed.
  const Trace t = test::make_trace(
      {test::alloc_event(0x10000, 64), test::free_event(0x10000), test::alloc_event(0x10000, 64)});
  EXPECT_EQ(decode_with_patch(t, reuse_section, 1, 11), "reuse code 11 out of range");
  EXPECT_EQ(decode_with_patch(t, reuse_section, 0, 1), "reuse rank 1 of no freed block");
  EXPECT_EQ(decode_with_patch(t, reuse_section, 1, 2), "reuse rank 2 of no freed block");
  EXPECT_EQ(decode_with_patch(t, free_refs_low_section, 0, 5), "free reference 5 out of range");
  // Here it takes the block freed with another size: the latest free (0 frees after it).
  const Trace other_size =
      test::make_trace({test::alloc_event(0x10000, 64), test::free_event(0x10000),
                        test::alloc_event(0x10000, 4000)});
  EXPECT_EQ(decode_with_patch(other_size, recent_low_section, 0, 1), "recent free 1 out of range");
  // The first allocation takes the second one's recent free (which keeps the counts of both
  // streams as they were).
  EXPECT_EQ(decode_with_patches(other_size, {{reuse_section, 0, 9}, {reuse_section, 1, 0}}),
            "recent free 0 out of range")
      << "the first allocation cannot take a block nobody freed";
  EXPECT_EQ(decode_with_patch(other_size, reuse_section, 0, 9), "payload ends early")
      << "one more recent free than the stream holds";
  // Here the second allocation starts where the first one's glibc chunk ends (64 + 8 -> 80).
  const Trace next =
      test::make_trace({test::alloc_event(0x10000, 64), test::alloc_event(0x10000 + 80, 64)});
  EXPECT_EQ(decode_with_patch(next, after_low_section, 0, 2), "allocation 2 back out of range");
  EXPECT_EQ(decode_with_patch(next, after_low_section, 0, 0), "allocation 0 back out of range");
}

// A heap that grows by splitting its top: each allocation starts where the one before ends, or
// where an earlier one ends once the block after it is split again. Each costs how many
// allocations back that one was instead of an address delta.
TEST(AltAddressModel, an_allocation_right_after_an_earlier_one_needs_no_address_delta) {
  std::mt19937_64 rng(4);
  Trace t;
  std::uint64_t top = 0x7000'0000'0000ull;
  std::vector<std::uint64_t> ends;
  for (int k = 0; k < 2000; ++k) {
    const std::uint64_t size = 16 + rng() % 3000;
    std::uint64_t address = top;
    if (k > 100 && rng() % 4 == 0) address = ends[ends.size() - 1 - rng() % 100];
    t.push_back(test::alloc_event(address, size));
    const std::uint64_t end = detail::FreedBlocks::end_of(address, size);
    ends.push_back(end);
    if (address == top) top = end;
  }
  detail::EncodeScratch scratch;
  detail::StackCursor cursor;
  std::vector<std::uint8_t> raw;
  detail::encode_chunk(t, 0, t.size(), cursor, raw, scratch);
  EXPECT_LE(scratch.deltas.size(), 7u) << "only the first allocation carries a delta";
  for (std::size_t k = 1; k < scratch.reuse.size(); ++k) ASSERT_EQ(scratch.reuse[k], 10) << k;
  EXPECT_EQ(scratch.after[0], 1);
  EXPECT_EQ(test::written_and_read(t, 65536), t);
  EXPECT_EQ(test::written_and_read(t, 77), t);
}

// Blocks taken back with sizes of other classes, in no particular order, and blocks pushed out
// of their ring by more than eight frees of one size: each costs how many frees ago its block
// was freed instead of an address delta.
TEST(AltAddressModel, reusing_a_block_of_another_size_needs_no_address_delta) {
  std::mt19937_64 rng(11);
  Trace t;
  std::vector<std::uint64_t> blocks;
  for (int k = 0; k < 40; ++k) {
    blocks.push_back((rng() % (std::uint64_t{1} << 40)) * 16);
    t.push_back(test::alloc_event(blocks.back(), 256));
  }
  for (int round = 0; round < 50; ++round) {
    for (const std::uint64_t address : blocks) t.push_back(test::free_event(address));
    std::shuffle(blocks.begin(), blocks.end(), rng);
    for (const std::uint64_t address : blocks)
      t.push_back(test::alloc_event(address, 256 + 16 * (1 + rng() % 4) * (round % 2)));
  }
  detail::EncodeScratch scratch;
  detail::StackCursor cursor;
  std::vector<std::uint8_t> raw;
  detail::encode_chunk(t, 0, t.size(), cursor, raw, scratch);
  EXPECT_LE(scratch.deltas.size(), 40u * 7) << "only the first allocations carry deltas";
  std::size_t recent = 0;
  for (std::size_t k = 40; k < scratch.reuse.size(); ++k) {
    ASSERT_NE(scratch.reuse[k], 0) << k;
    recent += scratch.reuse[k] == 9;
  }
  EXPECT_GT(recent, 25u * 40);
  EXPECT_EQ(test::written_and_read(t, 65536), t);
  EXPECT_EQ(test::written_and_read(t, 333), t);
}

TEST(AltAddressModel, recent_frees_count_back_from_the_latest_free) {
  using detail::RecentFrees;
  RecentFrees recent;
  recent.freed(0x1000, 3);
  recent.freed(0x2000, RecentFrees::no_ring);
  recent.freed(0x3000, 7);
  EXPECT_EQ(recent.frees(), 3u);
  EXPECT_EQ(recent.before_latest(0).address, 0x3000u);
  EXPECT_EQ(recent.before_latest(2).address, 0x1000u);
  EXPECT_EQ(recent.before_latest(2).ring, 3u);
  EXPECT_EQ(recent.before_latest(1).ring, RecentFrees::no_ring);
  recent.clear();
  EXPECT_EQ(recent.frees(), 0u);
}

// Which free the encoder counts back to: the latest of the address, never one whose block was
// allocated again since, and frees whose allocation is in an earlier chunk as well.
TEST(AltAddressModel, recent_free_distances_follow_each_address_latest_free) {
  const Trace t = test::make_trace({
      test::free_event(0x5000),         // allocated before the chunk: free 0
      test::alloc_event(0x1000, 64),    //
      test::free_event(0x1000),         // free 1
      test::alloc_event(0x2000, 64),    //
      test::free_event(0x2000),         // free 2
      test::alloc_event(0x5000, 4000),  // free 0 is 2 frees before the latest
      test::alloc_event(0x1000, 4000),  // free 1: 1 before
      test::free_event(0x1000),         // free 3
      test::alloc_event(0x1000, 9000),  // free 3: the latest, 0
  });
  detail::EncodeScratch scratch;
  detail::StackCursor cursor;
  std::vector<std::uint8_t> raw;
  detail::encode_chunk(t, 0, t.size(), cursor, raw, scratch);
  ASSERT_EQ(scratch.reuse.size(), 5u);
  EXPECT_EQ(scratch.reuse[0], 0);
  EXPECT_EQ(scratch.reuse[1], 0);
  EXPECT_EQ(scratch.reuse[2], 9);
  EXPECT_EQ(scratch.reuse[3], 9);
  EXPECT_EQ(scratch.reuse[4], 9);
  ASSERT_EQ(scratch.recent.size(), 3u);
  EXPECT_EQ(scratch.recent[0], 2);
  EXPECT_EQ(scratch.recent[1], 1);
  EXPECT_EQ(scratch.recent[2], 0);
  EXPECT_EQ(test::written_and_read(t, 65536), t);
}

// A file written by an earlier alloclab loads whole, resolves cleanly, and written again (in the
// current version) reads back the same.
void expect_old_file_loads(const std::string& name, std::uint32_t version, std::size_t events,
                           std::size_t allocations) {
  const std::string path = std::string(ALLOCLAB_TEST_DATA) + "/" + name;
  ASSERT_EQ(test::alt_file_version(path), version);
  AltLoadStats stats;
  const Trace t = read_alt(path, &stats);
  ASSERT_EQ(t.size(), events);
  EXPECT_TRUE(t.warnings.empty());
  const ResolvedTrace r = resolve(t);
  EXPECT_EQ(r.anomalies.total(), 0u);
  EXPECT_EQ(r.allocation_count(), allocations);
  TempFile again("rewritten.alt");
  write_alt(t, again.path());
  EXPECT_EQ(test::alt_file_version(again.path()), alt_format_version);
  EXPECT_EQ(read_alt(again.path()), t);
}

TEST(AltAddressModel, version_3_files_still_load) {
  // `alloclab generate --shape random --events 3000 --seed 5` before version 4.
  expect_old_file_loads("alt-v3/random-3000.alt", 3, 3130, 1565);
}

TEST(AltAddressModel, version_4_files_still_load) {
  // The same command, and `generate --shape cnn --runs 2` (mostly reuse ranks), before version 5.
  expect_old_file_loads("alt-v4/random-3000.alt", 4, 3130, 1565);
  expect_old_file_loads("alt-v4/cnn-2-runs.alt", 4, 376, 186);
}

TEST(AltAddressModel, version_5_files_still_load) {
  // `alloclab record -- malloc_churn 3000 256` before version 6: free references, recent frees
  // and allocations back, all as varints.
  expect_old_file_loads("alt-v5/churn-3000.alt", 5, 6004, 3003);
}

TEST(AltAddressModel, version_6_files_still_load) {
  // The same command before version 7: references count back over every allocation and every
  // free, chunks stand alone.
  expect_old_file_loads("alt-v6/churn-3000.alt", 6, 6004, 3003);
}

}  // namespace
}  // namespace alloclab
