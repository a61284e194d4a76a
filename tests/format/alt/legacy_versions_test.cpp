// Files of the format versions before the current one (legacy_versions.cpp, and versions 7 and
// 8 by the current decoder) decode to exactly the events they were written from, where those can
// be made again: the synthetic generator is deterministic, and the version 2 file is a conversion
// of a CSV file kept beside it. Only test data is in those versions: the bundled traces are in
// the current one.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "alloclab/format/alt/alt.hpp"
#include "alloclab/format/error.hpp"
#include "alloclab/format/interchange/csv.hpp"
#include "alloclab/format/interchange/torch_snapshot.hpp"
#include "alloclab/format/synthetic.hpp"
#include "format/alt/codec.hpp"
#include "tests/format/trace_test_util.hpp"

namespace alloclab {
namespace {

Trace old_file(const std::string& name, std::uint32_t version) {
  const std::string path = std::string(ALLOCLAB_TEST_DATA) + "/" + name;
  EXPECT_EQ(test::alt_file_version(path), version) << name;
  AltLoadStats stats;
  Trace t = read_alt(path, &stats);
  EXPECT_EQ(stats.damaged_chunks, 0u) << name;
  EXPECT_TRUE(t.warnings.empty()) << name;
  return t;
}

Trace generated(SyntheticShape shape, std::uint64_t runs, std::uint64_t seed,
                std::uint64_t min_events = 0) {
  SyntheticOptions options;
  options.shape = shape;
  options.runs = runs;
  options.seed = seed;
  options.min_events = min_events;
  return generate_synthetic(options);
}

TEST(AltLegacyVersions, version_1_decodes_to_the_events_it_was_written_from) {
  // `alloclab generate --shape cnn --runs 2 --seed 7`: one tagged address stream, no tables.
  EXPECT_EQ(old_file("alt-v1/cnn-2runs.alt", 1), generated(SyntheticShape::cnn, 2, 7));
}

TEST(AltLegacyVersions, version_2_decodes_to_the_events_it_was_written_from) {
  // `alloclab convert tests/data/interchange/all_columns.csv`: origins without pools.
  EXPECT_EQ(old_file("alt-v2/all-columns.alt", 2),
            read_csv(std::string(ALLOCLAB_TEST_DATA) + "/interchange/all_columns.csv"));
}

TEST(AltLegacyVersions, versions_3_and_4_decode_to_the_events_they_were_written_from) {
  // `alloclab generate --shape random --events 3000 --seed 5` (version 3: sizes as varints;
  // version 4: sizes in planes, references into the freed-block table), and
  // `generate --shape cnn --runs 2` in version 4 (mostly reuse ranks).
  const Trace random = generated(SyntheticShape::random, 10, 5, 3000);
  EXPECT_EQ(old_file("alt-v3/random-3000.alt", 3), random);
  EXPECT_EQ(old_file("alt-v4/random-3000.alt", 4), random);
  EXPECT_EQ(old_file("alt-v4/cnn-2-runs.alt", 4), generated(SyntheticShape::cnn, 2, 1));
}

TEST(AltLegacyVersions, version_7_decodes_to_the_events_it_was_written_from) {
  // The bundled traces as they were in version 7, which version 8 reads with its own decoder:
  // `alloclab generate --shape cnn --runs 20 --seed 1`, and the CNN training recording.
  EXPECT_EQ(old_file("alt-v7/cnn-inference.alt", 7), generated(SyntheticShape::cnn, 20, 1));
  const Trace training = old_file("alt-v7/torch-cnn-training.alt", 7);
  EXPECT_EQ(training, read_alt(std::string(ALLOCLAB_TRACES_DIR) + "/torch-cnn-training.alt"));
  EXPECT_GT(training.size(), 20000u);
}

TEST(AltLegacyVersions, version_8_decodes_to_the_events_it_was_written_from) {
  // `alloclab generate --shape cnn --runs 20 --seed 1`, as bundled in version 8.
  EXPECT_EQ(old_file("alt-v8/cnn-inference.alt", 8), generated(SyntheticShape::cnn, 20, 1));
}

TEST(AltLegacyVersions, version_8_frames_read_without_a_source_location) {
  // `alloclab convert tests/data/interchange/snapshot_torch.json` in version 8, whose snapshot
  // reader put "filename:line" in the module: the frames keep what the file stored, with the
  // source file and line unknown, and every event and stack is the snapshot's.
  const Trace old = old_file("alt-v8/snapshot-torch.alt", 8);
  const Trace now =
      read_torch_snapshot(std::string(ALLOCLAB_TEST_DATA) + "/interchange/snapshot_torch.json");
  ASSERT_EQ(old.size(), now.size());
  for (std::size_t i = 0; i < now.size(); ++i) {
    EXPECT_EQ(old.event(i), now.event(i)) << i;
    EXPECT_EQ(old.stack_id(i), now.stack_id(i)) << i;
  }
  EXPECT_EQ(old.stacks(), now.stacks());
  ASSERT_EQ(old.frames().size(), now.frames().size());
  ASSERT_FALSE(old.frames().empty());
  for (std::size_t f = 0; f < now.frames().size(); ++f) {
    const StackFrame& then = old.frames()[f];
    EXPECT_EQ(then.function, now.frames()[f].function);
    const std::string line = now.frames()[f].line ? ":" + std::to_string(now.frames()[f].line) : "";
    EXPECT_EQ(then.module, now.frames()[f].file + line);
    EXPECT_EQ(then.file, "");
    EXPECT_EQ(then.line, 0u);
  }
}

// The error of reading `trace` written in the current version, its header then set to say
// `version` (checksum and all).
std::string error_reading_as(const Trace& trace, std::uint32_t version) {
  test::TempFile file("relabelled.alt");
  std::vector<char> bytes = test::written(trace, file);
  auto* header = reinterpret_cast<std::uint8_t*>(bytes.data());
  detail::put_u32(header + 8, version);
  const std::uint32_t metadata_bytes = detail::get_u32(header + 12);
  const std::size_t crc_at = detail::alt_fixed_header_bytes + metadata_bytes;
  detail::put_u32(header + crc_at, detail::crc32_of(header + 8, 8 + metadata_bytes));
  file.write(bytes);
  try {
    read_alt(file.path());
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(AltLegacyVersions, a_version_7_file_with_the_realloc_bit_is_refused) {
  // Version 7 has no realloc bit: a file that says version 7 and holds one is damaged, and the
  // error says where and why. Version 8 reads the same bytes.
  Trace t;
  t.push_back(test::alloc_event(0x1000, 64, 1));
  t.push_back(test::free_event(0x1000, 2));
  Event in_place = test::alloc_event(0x1000, 32, 3);
  in_place.realloc_in_place = true;
  t.push_back(in_place);
  const std::string error = error_reading_as(t, 7);
  EXPECT_NE(error.find("invalid event attributes 16384 (format version 7)"), std::string::npos)
      << error;
  EXPECT_NE(error.find("no event could be read from the file"), std::string::npos) << error;
  EXPECT_EQ(error_reading_as(t, alt_format_version), "no error");
  EXPECT_EQ(test::written_and_read(t, 65536), t);
}

TEST(AltLegacyVersions, a_version_8_file_with_a_bit_beyond_the_fields_is_refused) {
  // Bit 15, and the realloc bit on a free: no packing makes either.
  for (const std::uint16_t attrs : {std::uint16_t{1u << 15}, std::uint16_t{1u | 1u << 14}}) {
    Trace t;
    t.append_raw(1, 0x1000, 64, t.add_origin(Origin{}), attrs);
    const std::string error = error_reading_as(t, alt_format_version);
    EXPECT_NE(error.find("invalid event attributes " + std::to_string(attrs) + " (format version " +
                         std::to_string(alt_format_version) + ")"),
              std::string::npos)
        << error;
  }
}

TEST(AltLegacyVersions, a_chunk_of_an_old_version_never_continues_a_group) {
  // Groups came with version 7: an older chunk that claims to continue one is refused.
  Trace t = generated(SyntheticShape::cnn, 1, 1);
  detail::EncodeScratch encode;
  detail::StackCursor cursor;
  std::vector<std::uint8_t> raw;
  detail::encode_chunk(t, 0, t.size(), cursor, raw, encode);
  for (std::uint32_t version = 1; version < detail::alt_grouped_version; ++version) {
    Trace out;
    detail::DecodeScratch decode;
    decode.group_intact = true;
    std::string error;
    EXPECT_FALSE(detail::decode_chunk(raw.data(), raw.size(), static_cast<std::uint32_t>(t.size()),
                                      version, out, decode, error,
                                      detail::ChunkAddresses::continue_group))
        << version;
    EXPECT_EQ(error, "continues a group whose previous chunk was not decoded") << version;
  }
}

TEST(AltLegacyVersions, the_bundled_traces_are_in_the_current_version) {
  // They were converted (alloclab convert keeps every event); the old versions are kept as test
  // data under tests/data/alt-v*/, which the tests above and the alt fuzzer's seeds read.
  int seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(ALLOCLAB_TRACES_DIR)) {
    if (entry.path().extension() != ".alt") continue;
    EXPECT_EQ(test::alt_file_version(entry.path().string()), alt_format_version) << entry.path();
    ++seen;
  }
  EXPECT_GE(seen, 5);
}

}  // namespace
}  // namespace alloclab
