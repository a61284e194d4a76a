// The one formatter of byte counts, counts and durations that every front end prints with.
#include "alloclab/format/units.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace alloclab {
namespace {

constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * KiB;
constexpr std::uint64_t GiB = 1024 * MiB;
constexpr std::uint64_t max64 = std::numeric_limits<std::uint64_t>::max();

TEST(Units, byte_unit_is_the_largest_binary_unit_the_magnitude_reaches) {
  EXPECT_EQ(byte_unit(0), (DisplayUnit{"B", 1}));
  EXPECT_EQ(byte_unit(1023.9), (DisplayUnit{"B", 1}));
  EXPECT_EQ(byte_unit(1024), (DisplayUnit{"KiB", 1024}));
  EXPECT_EQ(byte_unit(-2048), (DisplayUnit{"KiB", 1024}));
  EXPECT_EQ(byte_unit(MiB - 1), (DisplayUnit{"KiB", 1024}));
  EXPECT_EQ(byte_unit(3.0 * GiB), (DisplayUnit{"GiB", static_cast<double>(GiB)}));
  EXPECT_STREQ(byte_unit(std::uint64_t{1} << 50).symbol, "PiB");
  EXPECT_STREQ(byte_unit(std::uint64_t{1} << 60).symbol, "EiB");
  EXPECT_STREQ(byte_unit(1e30).symbol, "EiB");  // the largest there is
}

TEST(Units, duration_unit_steps_in_powers_of_1000_up_to_seconds) {
  EXPECT_STREQ(duration_unit(0).symbol, "ns");
  EXPECT_STREQ(duration_unit(999.9).symbol, "ns");
  EXPECT_EQ(duration_unit(1000), (DisplayUnit{"us", 1e3}));
  EXPECT_EQ(duration_unit(-2.5e6), (DisplayUnit{"ms", 1e6}));
  EXPECT_EQ(duration_unit(1e9), (DisplayUnit{"s", 1e9}));
  EXPECT_STREQ(duration_unit(1e15).symbol, "s");
}

TEST(Units, in_unit_divides_and_prints_the_decimals_asked_for) {
  EXPECT_EQ(in_unit(1.5 * MiB, byte_unit(1.5 * MiB), 2), "1.50 MiB");
  EXPECT_EQ(in_unit(12300, duration_unit(12300), 0), "12 us");
  EXPECT_EQ(in_unit(-3072, byte_unit(-3072), 1), "-3.0 KiB");
}

TEST(Units, human_bytes_has_two_decimals_above_a_kibibyte) {
  EXPECT_EQ(human_bytes(0), "0 B");
  EXPECT_EQ(human_bytes(512), "512 B");
  EXPECT_EQ(human_bytes(1023), "1023 B");
  EXPECT_EQ(human_bytes(1024), "1.00 KiB");
  EXPECT_EQ(human_bytes(MiB + MiB / 2), "1.50 MiB");
  EXPECT_EQ(human_bytes(MiB - 1), "1024.00 KiB");  // rounds, but stays in its unit
  EXPECT_EQ(human_bytes(578479360), "551.68 MiB");
  EXPECT_EQ(human_bytes(std::uint64_t{1} << 60), "1.00 EiB");
  EXPECT_EQ(human_bytes(max64), "16.00 EiB");
}

TEST(Units, short_bytes_has_three_significant_digits) {
  EXPECT_EQ(short_bytes(512), "512 B");
  EXPECT_EQ(short_bytes(48 * MiB), "48.0 MiB");
  EXPECT_EQ(short_bytes(112 * MiB), "112 MiB");
  EXPECT_EQ(short_bytes(3 * MiB + 4 * KiB), "3.00 MiB");
  EXPECT_EQ(short_bytes(1023 * KiB + 1000), "1024 KiB");
  EXPECT_EQ(short_bytes(10234), "9.99 KiB");
  EXPECT_EQ(short_bytes(10235), "10.0 KiB");  // 9.995 would print a fourth digit with two decimals
  EXPECT_EQ(short_bytes(102359), "100 KiB");  // 99.96 likewise with one
  EXPECT_EQ(short_bytes(max64), "16.0 EiB");
}

TEST(Units, size_spec_picks_the_largest_exact_binary_unit) {
  EXPECT_EQ(size_spec(0), "0");
  EXPECT_EQ(size_spec(1), "1");
  EXPECT_EQ(size_spec(1000), "1000");
  EXPECT_EQ(size_spec(1024), "1KiB");
  EXPECT_EQ(size_spec(1536 * KiB), "1536KiB");
  EXPECT_EQ(size_spec(64 * MiB), "64MiB");
  EXPECT_EQ(size_spec(3 * GiB), "3GiB");
  EXPECT_EQ(size_spec(std::uint64_t{1} << 50), "1024TiB");
  EXPECT_EQ(size_spec(max64), "18446744073709551615");
}

TEST(Units, exact_bytes_spells_the_same_unit_for_messages) {
  EXPECT_EQ(exact_bytes(16 * MiB), "16 MiB");
  EXPECT_EQ(exact_bytes(4 * GiB), "4 GiB");
  EXPECT_EQ(exact_bytes(1536 * KiB), "1536 KiB");
  EXPECT_EQ(exact_bytes(1000), "1000 bytes");
  EXPECT_EQ(exact_bytes(0), "0 bytes");
}

TEST(Units, grouped_separates_thousands_with_commas) {
  EXPECT_EQ(grouped(0), "0");
  EXPECT_EQ(grouped(999), "999");
  EXPECT_EQ(grouped(1000), "1,000");
  EXPECT_EQ(grouped(1234567), "1,234,567");
  EXPECT_EQ(grouped(max64), "18,446,744,073,709,551,615");
}

TEST(Units, counted_puts_the_noun_in_the_number_the_count_calls_for) {
  EXPECT_EQ(counted(0, "event"), "0 events");
  EXPECT_EQ(counted(1, "event"), "1 event");
  EXPECT_EQ(counted(1234, "event"), "1,234 events");
  EXPECT_EQ(counted(2, "index", "indices"), "2 indices");
  EXPECT_EQ(counted(1, "index", "indices"), "1 index");
}

TEST(Units, human_duration_has_one_decimal_in_us_and_ms_and_two_in_s) {
  EXPECT_EQ(human_duration(0), "0 ns");
  EXPECT_EQ(human_duration(999), "999 ns");
  EXPECT_EQ(human_duration(1000), "1.0 us");
  EXPECT_EQ(human_duration(71917), "71.9 us");
  EXPECT_EQ(human_duration(9450874), "9.5 ms");
  EXPECT_EQ(human_duration(999'999'999), "1000.0 ms");  // rounds, but stays in its unit
  EXPECT_EQ(human_duration(1'000'000'000), "1.00 s");
  EXPECT_EQ(human_duration(4'000'000'000), "4.00 s");
  EXPECT_EQ(human_duration(max64), "18446744073.71 s");
}

TEST(Units, durations_read_with_their_unit) {
  EXPECT_EQ(parse_duration("0"), 0u);
  EXPECT_EQ(parse_duration("1200ns"), 1200u);
  EXPECT_EQ(parse_duration("40us"), 40'000u);
  EXPECT_EQ(parse_duration("250ms"), 250'000'000u);
  EXPECT_EQ(parse_duration("1.5s"), 1'500'000'000u);
  EXPECT_EQ(parse_duration("0.25ms"), 250'000u);
  EXPECT_EQ(parse_duration("18446744073.709551615s"), UINT64_MAX);
  for (const char* bad : {"", "5", "s", "1.5", "1..5s", "-1s", "1.5 s", "2h", "1.0000000001s",
                          "18446744074s", "99999999999999999999ns"})
    EXPECT_FALSE(parse_duration(bad)) << bad;
}

}  // namespace
}  // namespace alloclab
