#include <gtest/gtest.h>

#include "alloclab/format/alt/alt.hpp"
#include "alloclab/format/error.hpp"
#include "format/alt/layout.hpp"
#include "tests/format/trace_test_util.hpp"

namespace alloclab {
namespace {

using test::chunk_offset;
using test::TempFile;
using test::written;

// 10 chunks of 100 allocations each.
Trace ten_chunk_trace() {
  Trace t;
  for (std::uint64_t i = 0; i < 1000; ++i) t.push_back(test::alloc_event(0x1000 + i * 64, 32, i));
  return t;
}

std::string load_error(const TempFile& file) {
  try {
    read_alt(file.path());
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(AltDamage, empty_file_is_an_error_naming_the_file_and_offset) {
  TempFile file("empty.alt");
  file.write({});
  EXPECT_EQ(load_error(file), file.path() + "@0, header: empty file, not an alloclab trace");
}

TEST(AltDamage, wrong_magic_is_an_error) {
  TempFile file("magic.alt");
  file.write({'t', 'i', 'm', 'e', '_', 'n', 's', ',', 'a', 'c', 't', 'i', 'o', 'n', '\n', 'x'});
  EXPECT_EQ(load_error(file), file.path() + "@0, header: not an alloclab trace (bad magic)");
}

// Sets the header's version field as a writer of that version would: with a checksum to match.
void set_version(std::vector<char>& bytes, std::uint32_t version) {
  auto* header = reinterpret_cast<std::uint8_t*>(bytes.data());
  detail::put_u32(header + 8, version);
  const std::uint32_t metadata_bytes = detail::get_u32(header + 12);
  const std::size_t crc_at = detail::alt_fixed_header_bytes + metadata_bytes;
  detail::put_u32(header + crc_at, detail::crc32_of(header + 8, 8 + metadata_bytes));
}

TEST(AltDamage, future_version_asks_for_an_upgrade) {
  TempFile file("future.alt");
  std::vector<char> bytes = written(ten_chunk_trace(), file);
  set_version(bytes, alt_format_version + 2);
  file.write(bytes);
  EXPECT_EQ(load_error(file), file.path() + "@8, header: format version " +
                                  std::to_string(alt_format_version + 2) +
                                  " is newer than this alloclab reads (" +
                                  std::to_string(alt_format_version) + "); upgrade alloclab");
}

// A flipped high byte made version 7 read as 4278190087, which was called "newer; upgrade
// alloclab". Versions go up one at a time: that far ahead is damage.
TEST(AltDamage, an_impossible_version_is_damage_not_the_future) {
  TempFile file("impossible.alt");
  std::vector<char> bytes = written(ten_chunk_trace(), file);
  bytes[11] = static_cast<char>(bytes[11] ^ 0xFF);
  file.write(bytes);
  EXPECT_EQ(load_error(file), file.path() + "@8, header: format version " +
                                  std::to_string(alt_format_version | 0xFF000000u) +
                                  " is impossible (alloclab's formats are 1 to " +
                                  std::to_string(alt_format_version) + "), the header is damaged");
  // Even with a checksum that matches, as no damage would leave it.
  set_version(bytes, alt_format_version | 0xFF000000u);
  file.write(bytes);
  EXPECT_NE(load_error(file).find("is impossible"), std::string::npos) << load_error(file);
}

// A version a little ahead whose header checksum fails is a damaged field (a flipped low bit),
// not a newer writer, whose header would be intact.
TEST(AltDamage, a_version_a_little_ahead_with_a_broken_checksum_is_damage) {
  TempFile file("flipped-version.alt");
  std::vector<char> bytes = written(ten_chunk_trace(), file);
  // A bit the version does not have, so that the flip sets it: a version ahead.
  constexpr std::uint32_t flip = 0x04;
  static_assert((alt_format_version & flip) == 0);
  bytes[8] = static_cast<char>(bytes[8] ^ flip);
  file.write(bytes);
  const std::string error = load_error(file);
  EXPECT_NE(error.find("header checksum mismatch (its format version reads " +
                       std::to_string(alt_format_version ^ flip) + "), the header is damaged"),
            std::string::npos)
      << error;
  EXPECT_EQ(error.find("upgrade"), std::string::npos) << error;
}

TEST(AltDamage, truncated_header_is_an_error) {
  TempFile file("short.alt");
  std::vector<char> bytes = written(ten_chunk_trace(), file);
  for (std::size_t keep : {std::size_t{5}, std::size_t{12}, std::size_t{30}}) {
    file.write(std::vector<char>(bytes.begin(), bytes.begin() + static_cast<long>(keep)));
    const std::string error = load_error(file);
    EXPECT_NE(error.find("header"), std::string::npos) << error;
    EXPECT_NE(error.find("truncated header"), std::string::npos) << error;
  }
}

TEST(AltDamage, corrupt_metadata_fails_the_header_checksum) {
  TempFile file("meta.alt");
  std::vector<char> bytes = written(ten_chunk_trace(), file);
  bytes[20] ^= 0x20;
  file.write(bytes);
  EXPECT_NE(load_error(file).find("header checksum mismatch"), std::string::npos);
}

TEST(AltDamage, truncated_last_chunk_loads_every_earlier_chunk_with_a_warning) {
  TempFile file("truncated.alt");
  std::vector<char> bytes = written(ten_chunk_trace(), file);
  bytes.resize(bytes.size() - 10);
  file.write(bytes);
  AltLoadStats stats;
  const Trace t = read_alt(file.path(), &stats);
  EXPECT_EQ(t.size(), 900u);
  EXPECT_EQ(t.address(899), 0x1000u + 899 * 64);
  ASSERT_EQ(t.warnings.size(), 1u);
  EXPECT_NE(t.warnings[0].find(file.path() + "@" + std::to_string(chunk_offset(bytes, 9)) +
                               ", chunk 9: truncated chunk"),
            std::string::npos)
      << t.warnings[0];
  EXPECT_EQ(stats.lost_events, 100u);
}

TEST(AltDamage, truncated_chunk_header_keeps_everything_before_it) {
  TempFile file("truncated-header.alt");
  std::vector<char> bytes = written(ten_chunk_trace(), file);
  bytes.resize(chunk_offset(bytes, 9) + 7);
  file.write(bytes);
  const Trace t = read_alt(file.path());
  EXPECT_EQ(t.size(), 900u);
  ASSERT_EQ(t.warnings.size(), 1u);
  EXPECT_NE(t.warnings[0].find("truncated chunk header"), std::string::npos);
}

TEST(AltDamage, flipped_byte_inside_a_chunk_loses_only_that_chunk) {
  TempFile file("flipped.alt");
  std::vector<char> bytes = written(ten_chunk_trace(), file);
  const std::size_t at = chunk_offset(bytes, 4);
  bytes[at + 30] ^= 0x01;
  file.write(bytes);
  AltLoadStats stats;
  const Trace t = read_alt(file.path(), &stats);
  EXPECT_EQ(t.size(), 900u);
  EXPECT_EQ(stats.damaged_chunks, 1u);
  EXPECT_EQ(t.address(399), 0x1000u + 399 * 64);
  EXPECT_EQ(t.address(400), 0x1000u + 500 * 64);  // chunk 4 is gone, chunk 5 follows
  ASSERT_EQ(t.warnings.size(), 1u);
  EXPECT_EQ(t.warnings[0], file.path() + "@" + std::to_string(at) +
                               ", chunk 4: checksum mismatch; chunk skipped, 100 events lost");
}

TEST(AltDamage, tail_read_counts_from_the_headers_and_decodes_only_the_last_chunk) {
  TempFile file("tail.alt");
  std::vector<char> bytes = written(ten_chunk_trace(), file);
  bytes[chunk_offset(bytes, 4) + 30] ^= 0x01;  // an earlier payload: its header still counts
  bytes[chunk_offset(bytes, 2) + 9] ^= 0x40;   // a damaged header: found, its chunk skipped
  file.write(bytes);
  AltLoadStats stats;
  const Trace t = read_alt_tail(file.path(), &stats);
  EXPECT_EQ(stats.events, 900u);
  EXPECT_EQ(stats.damaged_chunks, 1u);
  ASSERT_EQ(t.size(), 100u);
  EXPECT_EQ(t.time_ns(0), 900u);  // the last chunk
  EXPECT_EQ(t.address(0), 0u);    // whose addresses the tail read leaves out
  ASSERT_EQ(t.warnings.size(), 1u);
  EXPECT_NE(t.warnings[0].find("chunk 2: damaged chunk header"), std::string::npos);
  AltLoadStats full;  // the whole read finds both
  EXPECT_EQ(read_alt(file.path(), &full).size(), 800u);
  EXPECT_EQ(full.damaged_chunks, 2u);
}

TEST(AltDamage, tail_read_falls_back_to_the_last_intact_chunk) {
  TempFile file("tail-last.alt");
  std::vector<char> bytes = written(ten_chunk_trace(), file);
  bytes[chunk_offset(bytes, 9) + 30] ^= 0x01;
  file.write(bytes);
  AltLoadStats stats;
  const Trace t = read_alt_tail(file.path(), &stats);
  EXPECT_EQ(stats.events, 900u);
  EXPECT_EQ(stats.damaged_chunks, 1u);
  EXPECT_EQ(stats.lost_events, 100u);
  ASSERT_EQ(t.size(), 100u);
  EXPECT_EQ(t.time_ns(0), 800u);  // chunk 8
  ASSERT_EQ(t.warnings.size(), 1u);
  EXPECT_NE(t.warnings[0].find("chunk 9: checksum mismatch"), std::string::npos);
}

TEST(AltDamage, metadata_alone_needs_only_an_intact_header) {
  TempFile file("metadata.alt");
  Trace trace = ten_chunk_trace();
  trace.metadata["pid"] = 4242;
  std::vector<char> bytes = written(trace, file);
  bytes[chunk_offset(bytes, 4) + 30] ^= 0x01;  // a damaged payload
  bytes.resize(chunk_offset(bytes, 9) + 10);   // and a truncated last chunk
  file.write(bytes);
  EXPECT_EQ(read_alt_metadata(file.path()).value("pid", 0), 4242);
  bytes[20] ^= 0x01;  // inside the metadata: the header checksum no longer holds
  file.write(bytes);
  EXPECT_THROW(read_alt_metadata(file.path()), InputError);
  EXPECT_THROW(read_alt_metadata(file.path() + ".missing"), InputError);
}

TEST(AltDamage, damaged_chunk_header_resynchronises_on_the_next_chunk) {
  TempFile file("bad-chunk-header.alt");
  std::vector<char> bytes = written(ten_chunk_trace(), file);
  bytes[chunk_offset(bytes, 2) + 9] ^= 0x40;  // the stored length: reading it would misalign
  file.write(bytes);
  const Trace t = read_alt(file.path());
  EXPECT_EQ(t.size(), 900u);
  ASSERT_EQ(t.warnings.size(), 1u);
  EXPECT_NE(t.warnings[0].find("chunk 2: damaged chunk header"), std::string::npos);
}

// "skipped 13069 bytes to the next intact chunk" was said where no chunk followed.
TEST(AltDamage, a_damaged_last_chunk_header_says_the_rest_of_the_file_is_lost) {
  TempFile file("bad-last-header.alt");
  std::vector<char> bytes = written(ten_chunk_trace(), file);
  const std::size_t at = chunk_offset(bytes, 9);
  bytes[at + 9] ^= 0x40;
  file.write(bytes);
  const Trace t = read_alt(file.path());
  EXPECT_EQ(t.size(), 900u);
  ASSERT_EQ(t.warnings.size(), 1u);
  EXPECT_EQ(t.warnings[0], file.path() + "@" + std::to_string(at) +
                               ", chunk 9: damaged chunk header and no intact chunk after it; "
                               "the rest of the file (" +
                               std::to_string(bytes.size() - at) + " bytes) is lost");
}

// `head -c 400 x.alt` kept the header and part of a chunk: the load gave an empty trace and
// every command an empty answer, exit 0. Chunks of which none could be read are an error.
TEST(AltDamage, a_file_with_chunks_none_of_which_can_be_read_is_an_error) {
  TempFile file("nothing-readable.alt");
  const std::vector<char> bytes = written(ten_chunk_trace(), file);
  const std::size_t first = chunk_offset(bytes, 0);
  for (std::size_t keep : {first + 7, first + 60}) {
    file.write(std::vector<char>(bytes.begin(), bytes.begin() + static_cast<long>(keep)));
    const std::string error = load_error(file);
    EXPECT_EQ(
        error.rfind(file.path() + "@" + std::to_string(first) + ", chunk 0: truncated chunk", 0),
        0u)
        << error;
    EXPECT_NE(error.find("; no event could be read from the file"), std::string::npos) << error;
  }
  // Every chunk's payload damaged: the first warning, and how many chunks were lost.
  std::vector<char> damaged = bytes;
  for (int c = 0; c < 10; ++c) damaged[chunk_offset(bytes, c) + 30] ^= 0x01;
  file.write(damaged);
  const std::string error = load_error(file);
  EXPECT_NE(error.find("chunk 0: checksum mismatch"), std::string::npos) << error;
  EXPECT_NE(error.find("no event could be read from the file (10 damaged chunks)"),
            std::string::npos)
      << error;
}

// A header and no chunk at all is a well-formed empty trace (a program that allocated nothing).
TEST(AltDamage, a_header_without_chunks_is_an_empty_trace) {
  TempFile file("header-only.alt");
  const std::vector<char> bytes = written(Trace{}, file);
  EXPECT_EQ(chunk_offset(bytes, 0), std::string::npos);
  AltLoadStats stats;
  EXPECT_EQ(read_alt(file.path(), &stats).size(), 0u);
  EXPECT_EQ(stats.damaged_chunks, 0u);
}

TEST(AltDamage, every_single_byte_flip_is_survived) {
  // Whatever byte breaks, the loader either reports a header error or loads the intact rest.
  const Trace original = ten_chunk_trace();
  TempFile file("every-flip.alt");
  const std::vector<char> clean = written(original, file);
  for (std::size_t i = 0; i < clean.size(); i += 7) {
    std::vector<char> bytes = clean;
    bytes[i] ^= 0x10;
    file.write(bytes);
    try {
      const Trace t = read_alt(file.path());
      EXPECT_GE(t.size(), 800u) << "flip at " << i;
      EXPECT_LE(t.size(), 1000u);
      AltLoadStats tail;  // headers one by one, then one payload: the same damage survived
      const Trace last = read_alt_tail(file.path(), &tail);
      EXPECT_GE(tail.events, 800u) << "flip at " << i;
      EXPECT_LE(tail.events, 1000u);
      EXPECT_EQ(last.size(), 100u) << "flip at " << i;
    } catch (const InputError&) {
      EXPECT_LT(i, chunk_offset(clean, 0)) << "only header damage may fail the load";
    }
  }
}

TEST(AltDamage, missing_file_names_the_file) {
  EXPECT_THROW(read_alt("/nonexistent/trace.alt"), InputError);
}

}  // namespace
}  // namespace alloclab
