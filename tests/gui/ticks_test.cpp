#include <gtest/gtest.h>

#include "gui/ticks.hpp"

namespace alloclab::gui {
namespace {

std::vector<std::string> labels(const std::vector<Tick>& ticks) {
  std::vector<std::string> out;
  for (const auto& t : ticks) out.push_back(t.label);
  return out;
}

TEST(Ticks, byte_axes_step_in_binary_units) {
  const auto ticks = linear_ticks(0, 100.0 * 1024 * 1024, 5, Unit::bytes);
  EXPECT_EQ(labels(ticks),
            (std::vector<std::string>{"0 MiB", "20 MiB", "40 MiB", "60 MiB", "80 MiB", "100 MiB"}));
  EXPECT_EQ(ticks[1].value, 20.0 * 1024 * 1024);
}

TEST(Ticks, time_axes_step_in_decimal_units) {
  EXPECT_EQ(labels(linear_ticks(0, 2.5e6, 5, Unit::ns)),
            (std::vector<std::string>{"0.0 ms", "0.5 ms", "1.0 ms", "1.5 ms", "2.0 ms", "2.5 ms"}));
  EXPECT_EQ(labels(linear_ticks(1000, 4000, 3, Unit::ns)),
            (std::vector<std::string>{"1 us", "2 us", "3 us", "4 us"}));
}

TEST(Ticks, ticks_stay_inside_the_range_and_count_is_bounded) {
  for (double hi : {1.0, 7.3, 999.0, 123456.0, 9.9e12}) {
    const auto ticks = linear_ticks(hi / 3, hi, 6, Unit::count);
    ASSERT_FALSE(ticks.empty()) << hi;
    EXPECT_LE(ticks.size(), 13u);
    for (const auto& t : ticks) {
      EXPECT_GE(t.value, hi / 3 - 1e-9 * hi);
      EXPECT_LE(t.value, hi * (1 + 1e-9));
    }
  }
  EXPECT_TRUE(linear_ticks(5, 5, 4, Unit::count).empty());
  EXPECT_TRUE(linear_ticks(5, 1, 4, Unit::count).empty());
}

TEST(Ticks, percent_axes_label_fractions) {
  EXPECT_EQ(labels(linear_ticks(0, 1, 4, Unit::percent)),
            (std::vector<std::string>{"0%", "50%", "100%"}));
}

// Miss rates of real workloads are fractions of a percent: their log axis must tell 0.01% from
// 0.1% (it labelled every tick below 1% "0%").
TEST(Ticks, log_percent_axes_keep_the_decimals_of_small_rates) {
  EXPECT_EQ(labels(log_ticks(0.00005, 0.2, 10, Unit::percent)),
            (std::vector<std::string>{"0.01%", "0.1%", "1%", "10%"}));
  EXPECT_EQ(labels(linear_ticks(0, 0.002, 4, Unit::percent)),
            (std::vector<std::string>{"0.00%", "0.05%", "0.10%", "0.15%", "0.20%"}));
}

TEST(Ticks, log_axes_use_powers_of_ten_or_of_two_for_bytes) {
  EXPECT_EQ(labels(log_ticks(1, 1e4, 10, Unit::ns)),
            (std::vector<std::string>{"1 ns", "10 ns", "100 ns", "1 us", "10 us"}));
  const auto bytes = labels(log_ticks(1024, 1024.0 * 1024 * 1024, 6, Unit::bytes));
  EXPECT_LE(bytes.size(), 6u);
  EXPECT_EQ(bytes.front(), "1 KiB");
  EXPECT_EQ(bytes.back(), "1 GiB");
  EXPECT_TRUE(log_ticks(0, 10, 5, Unit::count).empty());
}

TEST(Ticks, values_format_with_units) {
  EXPECT_EQ(format_value(512, Unit::bytes), "512 B");
  EXPECT_EQ(format_value(1.5 * 1024 * 1024, Unit::bytes), "1.50 MiB");
  EXPECT_EQ(format_value(12300, Unit::ns), "12.30 us");
  EXPECT_EQ(format_value(800, Unit::ns), "800 ns");
  // The units of alloclab/format/units.hpp, as the CLI prints them, up to EiB.
  EXPECT_EQ(format_value(1024.0 * 1024 * 1024 * 1024 * 1024 * 1024, Unit::bytes), "1.00 EiB");
  EXPECT_EQ(format_value(0.875, Unit::percent), "87.50%");
  EXPECT_EQ(format_value(1234567, Unit::count), "1,234,567");
  EXPECT_EQ(format_value(0, Unit::count), "0");
}

TEST(Ticks, exact_values_add_the_whole_bytes_or_ns) {
  EXPECT_EQ(format_exact(30326784, Unit::bytes), "28.92 MiB (30,326,784 bytes)");
  EXPECT_EQ(format_exact(1234567, Unit::ns), "1.23 ms (1,234,567 ns)");
  EXPECT_EQ(format_exact(512, Unit::bytes), "512 B");
  EXPECT_EQ(format_exact(800, Unit::ns), "800 ns");
  EXPECT_EQ(format_exact(0.875, Unit::percent), "87.50%");
  EXPECT_EQ(format_exact(1234, Unit::count), "1,234");
}

}  // namespace
}  // namespace alloclab::gui
