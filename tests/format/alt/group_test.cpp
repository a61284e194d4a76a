// Version 7 of the .alt format: chunks in groups that share their address state, frees coded by
// their rank among the live allocations, recent frees by theirs among the blocks still free.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <system_error>

#include "alloclab/format/alt/alt.hpp"
#include "alloclab/format/alt/stream_writer.hpp"
#include "format/alt/codec.hpp"
#include "format/alt/layout.hpp"
#include "format/alt/live_order.hpp"
#include "tests/format/trace_test_util.hpp"

namespace alloclab {
namespace {

using test::chunk_offset;
using test::TempFile;
using test::written;

// A program that frees a random one of 64 live blocks and allocates another in its place, so
// most blocks live across chunk boundaries: 500 frees and 564 allocations.
Trace churn_trace() {
  std::mt19937_64 rng(7);
  Trace t;
  std::vector<std::uint64_t> live;
  std::uint64_t top = 0x10000;
  std::uint64_t time = 1000;
  auto alloc = [&] {
    top += 16 * (1 + rng() % 64);
    live.push_back(top);
    t.push_back(test::alloc_event(top, 16 + rng() % 1000, time += 100));
  };
  for (int i = 0; i < 64; ++i) alloc();
  for (int i = 0; i < 500; ++i) {
    const std::size_t k = rng() % live.size();
    t.push_back(test::free_event(live[k], time += 100));
    live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
    alloc();
  }
  return t;
}

Trace written_and_read(const Trace& trace, std::size_t per_chunk, std::size_t per_group) {
  TempFile file("group-round-trip.alt");
  AltWriteOptions options;
  options.events_per_chunk = per_chunk;
  options.events_per_group = per_group;
  write_alt(trace, file.path(), options);
  return read_alt(file.path());
}

// The group position of each chunk header in the file.
std::vector<std::uint32_t> group_positions(const std::vector<char>& bytes) {
  std::vector<std::uint32_t> positions;
  for (int n = 0; chunk_offset(bytes, n) != std::string::npos; ++n) {
    const auto* header =
        reinterpret_cast<const std::uint8_t*>(bytes.data() + chunk_offset(bytes, n));
    positions.push_back(detail::get_u32(header + 4) >> detail::alt_group_position_shift);
  }
  return positions;
}

TEST(AltGroups, round_trip_at_every_chunk_and_group_size) {
  const Trace original = churn_trace();
  for (const std::size_t per_chunk : {1, 2, 7, 100, 5000})
    for (const std::size_t per_group : {0, 1, 150, 400, 262144}) {
      const Trace loaded = written_and_read(original, per_chunk, per_group);
      EXPECT_TRUE(loaded.warnings.empty());
      ASSERT_EQ(loaded, original) << "chunks of " << per_chunk << ", groups of " << per_group;
    }
}

TEST(AltGroups, a_chunk_continues_its_group_until_the_group_holds_enough_events) {
  TempFile file("positions.alt");
  const std::vector<char> bytes = written(churn_trace(), file, 400);  // chunks of 100 events
  const std::vector<std::uint32_t> positions = group_positions(bytes);
  ASSERT_EQ(positions.size(), 11u);
  EXPECT_EQ(positions, (std::vector<std::uint32_t>{0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2}));
  // 128 chunks at most, whatever the group's event budget.
  AltWriteOptions options;
  options.events_per_chunk = 1;
  options.events_per_group = 1000;
  Trace small;
  for (std::uint64_t i = 0; i < 300; ++i) small.push_back(test::alloc_event(0x1000 + i * 64, 32));
  write_alt(small, file.path(), options);
  const std::vector<std::uint32_t> capped = group_positions(file.bytes());
  ASSERT_EQ(capped.size(), 300u);
  EXPECT_EQ(*std::max_element(capped.begin(), capped.end()), detail::alt_max_group_position);
  EXPECT_EQ(capped[127], 127u);
  EXPECT_EQ(capped[128], 0u);
  EXPECT_EQ(read_alt(file.path()), small);
}

TEST(AltGroups, a_group_ends_when_its_address_maps_are_full) {
  // 30,000 blocks at new addresses a chunk: two entries each in the encoder's maps (its block,
  // where it ends), 60,000 a chunk. The fourth chunk would find 180,000: it starts a group.
  Trace t;
  for (std::uint64_t i = 0; i < 120'000; ++i)
    t.push_back(test::alloc_event(0x10000 + 4096 * i, 100));
  TempFile file("group-state.alt");
  AltWriteOptions options;
  options.events_per_chunk = 30'000;
  options.events_per_group = 1'000'000;
  write_alt(t, file.path(), options);
  EXPECT_EQ(group_positions(file.bytes()), (std::vector<std::uint32_t>{0, 1, 2, 0}));
  EXPECT_EQ(read_alt(file.path()), t);
}

TEST(AltGroups, blocks_freed_in_a_later_chunk_of_the_group_cost_no_address) {
  TempFile alone("alone.alt"), grouped("grouped.alt");
  const Trace t = churn_trace();
  const std::size_t alone_bytes = written(t, alone, 0).size();
  const std::size_t grouped_bytes = written(t, grouped, 262144).size();
  // Chunk by chunk, each free of an earlier chunk's block is an address delta (four or five
  // bytes here); in one group it is a reference like any other.
  EXPECT_LT(grouped_bytes * 10, alone_bytes * 9) << grouped_bytes << " against " << alone_bytes;
  EXPECT_EQ(read_alt(grouped.path()), t);
}

TEST(AltGroups, damage_costs_the_chunk_and_the_rest_of_its_group) {
  TempFile file("group-damage.alt");
  const Trace original = churn_trace();
  std::vector<char> bytes = written(original, file, 400);
  const std::size_t at = chunk_offset(bytes, 5);  // the second of the group of chunks 4 to 7
  bytes[at + 30] ^= 0x01;
  file.write(bytes);
  AltLoadStats stats;
  const Trace t = read_alt(file.path(), &stats);
  EXPECT_EQ(stats.damaged_chunks, 3u);
  EXPECT_EQ(stats.lost_events, 300u);
  ASSERT_EQ(t.size(), original.size() - 300);
  for (std::size_t i = 0; i < 500; ++i) ASSERT_EQ(t.event(i), original.event(i)) << i;
  for (std::size_t i = 500; i < t.size(); ++i)
    ASSERT_EQ(t.event(i), original.event(i + 300)) << i;  // chunk 8 starts the next group
  ASSERT_EQ(t.warnings.size(), 3u);
  EXPECT_EQ(t.warnings[0], file.path() + "@" + std::to_string(at) +
                               ", chunk 5: checksum mismatch; chunk skipped, 100 events lost");
  EXPECT_EQ(t.warnings[1], file.path() + "@" + std::to_string(chunk_offset(bytes, 6)) +
                               ", chunk 6: the chunk before it in its group is lost; chunk "
                               "skipped, 100 events lost");
}

TEST(AltGroups, a_damaged_chunk_header_breaks_its_group_too) {
  TempFile file("group-header.alt");
  const Trace original = churn_trace();
  std::vector<char> bytes = written(original, file, 400);
  bytes[chunk_offset(bytes, 1) + 9] ^= 0x40;  // its stored length: the reader resynchronises
  file.write(bytes);
  AltLoadStats stats;
  const Trace t = read_alt(file.path(), &stats);
  // Chunk 0 stays; 1 is skipped by the scan, 2 and 3 cannot continue without it.
  EXPECT_EQ(t.size(), original.size() - 300);
  EXPECT_EQ(t.event(100), original.event(400));
  ASSERT_EQ(t.warnings.size(), 3u);
  EXPECT_NE(t.warnings[0].find("chunk 1: damaged chunk header"), std::string::npos);
  EXPECT_NE(t.warnings[1].find("chunk 2: the chunk before it in its group is lost"),
            std::string::npos);
}

TEST(AltGroups, a_group_claiming_more_events_than_a_chunk_may_hold_is_refused) {
  TempFile file("group-too-big.alt");
  const Trace original = churn_trace();
  std::vector<char> bytes = written(original, file, 400);
  // Chunk 1 says it holds 2^24 events: with chunk 0's 100 its group would outgrow the limit.
  // Its header is otherwise intact (its checksum is made to match).
  auto* header = reinterpret_cast<std::uint8_t*>(bytes.data() + chunk_offset(bytes, 1));
  detail::put_u32(header + 4,
                  detail::alt_max_chunk_events | 1u << detail::alt_group_position_shift);
  detail::put_u32(header + 20, detail::crc32_of(header, 20));
  file.write(bytes);
  for (const bool tail : {false, true}) {
    AltLoadStats stats;
    const Trace t = tail ? read_alt_tail(file.path(), &stats) : read_alt(file.path(), &stats);
    ASSERT_FALSE(t.warnings.empty());
    EXPECT_NE(t.warnings[0].find("chunk 1: its group would hold more than 16777216 events; "
                                 "chunk skipped, 16777216 events lost"),
              std::string::npos)
        << t.warnings[0];
    if (tail) continue;
    // Chunks 2 and 3 continue the lost chunk's group; chunk 4 starts the next.
    ASSERT_EQ(t.size(), original.size() - 300);
    EXPECT_EQ(t.event(100), original.event(400));
  }
}

TEST(AltGroups, tail_read_decodes_the_last_chunk_alone_without_its_addresses) {
  TempFile file("group-tail.alt");
  const Trace original = churn_trace();
  std::vector<char> bytes = written(original, file, 400);  // the last chunk is third in its group
  // Damage earlier in the same group does not matter to it: its addresses are not decoded.
  bytes[chunk_offset(bytes, 9) + 30] ^= 0x01;
  file.write(bytes);
  AltLoadStats stats;
  const Trace t = read_alt_tail(file.path(), &stats);
  EXPECT_TRUE(t.warnings.empty());
  EXPECT_EQ(stats.events, original.size());
  ASSERT_EQ(t.size(), 64u);
  for (std::size_t i = 0; i < t.size(); ++i) {
    const std::size_t at = original.size() - 64 + i;
    ASSERT_EQ(t.op(i), original.op(at)) << i;
    ASSERT_EQ(t.size_of(i), original.size_of(at)) << i;
    ASSERT_EQ(t.time_ns(i), original.time_ns(at)) << i;
    ASSERT_EQ(t.address(i), 0u) << i;
  }
}

TEST(AltGroups, a_stream_writer_that_could_not_write_a_chunk_starts_a_new_group) {
  TempFile file("group-stream.alt");
  const Trace original = churn_trace();
  // A full disk: the chunk is cut off the file again, and the group it would have continued
  // cannot be continued.
  EXPECT_TRUE(test::write_with_the_second_chunk_failing(file.path(), original));
  const std::vector<std::uint32_t> positions = group_positions(file.bytes());
  ASSERT_EQ(positions.size(), 2u);
  EXPECT_EQ(positions[1], 0u) << "chunk 100-200 never reached the file";
  AltLoadStats stats;
  const Trace t = read_alt(file.path(), &stats);
  EXPECT_TRUE(t.warnings.empty());
  ASSERT_EQ(t.size(), original.size() - 100);
  for (std::size_t i = 0; i < 100; ++i) ASSERT_EQ(t.event(i), original.event(i)) << i;
  for (std::size_t i = 100; i < t.size(); ++i) ASSERT_EQ(t.event(i), original.event(i + 100)) << i;
}

TEST(AltGroups, a_continuing_chunk_needs_the_state_of_the_one_before) {
  const Trace t = churn_trace();
  detail::EncodeScratch encode;
  detail::StackCursor cursor;
  std::vector<std::uint8_t> first, second;
  detail::encode_chunk(t, 0, 100, cursor, first, encode);
  detail::encode_chunk(t, 100, 200, cursor, second, encode, true);
  std::string error;
  Trace out;
  detail::DecodeScratch fresh;
  EXPECT_FALSE(detail::decode_chunk(second.data(), second.size(), 100, alt_format_version, out,
                                    fresh, error, detail::ChunkAddresses::continue_group));
  EXPECT_EQ(error, "continues a group whose previous chunk was not decoded");
  detail::DecodeScratch decode;
  ASSERT_TRUE(
      detail::decode_chunk(first.data(), first.size(), 100, alt_format_version, out, decode, error))
      << error;
  ASSERT_TRUE(detail::decode_chunk(second.data(), second.size(), 100, alt_format_version, out,
                                   decode, error, detail::ChunkAddresses::continue_group))
      << error;
  for (std::size_t i = 0; i < 200; ++i) ASSERT_EQ(out.event(i), t.event(i)) << i;
  // Version 6 has no groups.
  detail::DecodeScratch old;
  ASSERT_TRUE(detail::decode_chunk(first.data(), first.size(), 100, 6, out, old, error) ||
              !error.empty());
  EXPECT_FALSE(detail::decode_chunk(second.data(), second.size(), 100, 6, out, old, error,
                                    detail::ChunkAddresses::continue_group));
}

TEST(AltGroups, frees_count_back_over_live_blocks_only) {
  // 64 live blocks: a free's reference is at most 64 however long ago its block was made.
  const Trace t = churn_trace();
  detail::EncodeScratch scratch;
  detail::StackCursor cursor;
  std::vector<std::uint8_t> raw;
  detail::encode_chunk(t, 0, t.size(), cursor, raw, scratch);
  ASSERT_EQ(scratch.free_refs.size(), 500u);
  std::uint32_t largest = 0;
  for (const std::uint32_t ref : scratch.free_refs) {
    ASSERT_GT(ref, 0u);
    largest = std::max(largest, ref);
  }
  EXPECT_LE(largest, 64u);
  EXPECT_GT(largest, 50u);

  EXPECT_EQ(test::written_and_read(t, 65536), t);
}

TEST(LiveOrder, ranks_and_selections_agree_with_counting_by_hand) {
  std::mt19937_64 rng(11);
  detail::LiveOrder order;
  std::vector<bool> live;
  for (int step = 0; step < 60000; ++step) {  // ~40,000 allocations: three levels of counts
    if (live.empty() || rng() % 3 != 0) {
      const bool is_live = rng() % 8 != 0;
      order.push(is_live);
      live.push_back(is_live);
    } else {
      const std::uint32_t ordinal = static_cast<std::uint32_t>(rng() % live.size());
      order.remove(ordinal);  // also when it is not live: nothing happens
      live[ordinal] = false;
    }
    if (step % 499 != 0) continue;
    std::uint32_t count = 0;
    for (bool b : live) count += b;
    ASSERT_EQ(order.live(), count);
    ASSERT_EQ(order.size(), live.size());
    std::uint32_t newer = 0;
    for (std::size_t o = live.size(); o-- > 0;) {
      ASSERT_EQ(order.is_live(static_cast<std::uint32_t>(o)), live[o]);
      if (!live[o]) continue;
      ASSERT_EQ(order.newer_live(static_cast<std::uint32_t>(o)), newer) << o;
      ASSERT_EQ(order.with_newer_live(newer), o) << newer;
      ++newer;
    }
    EXPECT_EQ(order.with_newer_live(count), order.size());
  }
  order.clear();
  EXPECT_EQ(order.size(), 0u);
  EXPECT_EQ(order.with_newer_live(0), 0u);
}

}  // namespace
}  // namespace alloclab
