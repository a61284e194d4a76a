// Files of the format versions before the current one (legacy_versions.cpp) decode to exactly
// the events they were written from, where those can be made again: the synthetic generator is
// deterministic, and the version 2 file is a conversion of a CSV file kept beside it. Only test
// data is in those versions: the bundled traces are in the current one.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "alloclab/format/alt/alt.hpp"
#include "alloclab/format/interchange/csv.hpp"
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

TEST(AltLegacyVersions, a_chunk_of_an_old_version_never_continues_a_group) {
  // Groups came with version 7: an older chunk that claims to continue one is refused.
  Trace t = generated(SyntheticShape::cnn, 1, 1);
  detail::EncodeScratch encode;
  detail::StackCursor cursor;
  std::vector<std::uint8_t> raw;
  detail::encode_chunk(t, 0, t.size(), cursor, raw, encode);
  for (std::uint32_t version = 1; version < alt_format_version; ++version) {
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
