// LatencyHistogram: ≤ 1% relative error on known inputs, exact count/total/max.
#include <gtest/gtest.h>

#include <cmath>

#include "alloclab/replay/latency.hpp"

namespace alloclab {
namespace {

double relative_error(std::uint64_t got, std::uint64_t want) {
  return std::abs(static_cast<double>(got) - static_cast<double>(want)) / static_cast<double>(want);
}

TEST(LatencyHistogram, values_below_128_ns_are_exact) {
  for (std::uint64_t v = 0; v < 128; ++v) {
    LatencyHistogram h;
    h.record(v);
    EXPECT_EQ(h.percentile(0.5), v);
  }
}

TEST(LatencyHistogram, every_bucket_holds_its_values_and_is_under_one_percent_wide) {
  for (std::uint64_t v = 1; v < (std::uint64_t{1} << 62); v = v * 3 / 2 + 1) {
    const std::size_t i = LatencyHistogram::index_of(v);
    EXPECT_LE(LatencyHistogram::bucket_low(i), v);
    EXPECT_GE(LatencyHistogram::bucket_high(i), v);
    // The farthest another value of the bucket can be from v: under 1/128 of v.
    const double spread =
        static_cast<double>(LatencyHistogram::bucket_high(i) - LatencyHistogram::bucket_low(i));
    EXPECT_LT(spread / static_cast<double>(v), 1.0 / 128) << v;
    EXPECT_EQ(LatencyHistogram::index_of(LatencyHistogram::bucket_low(i)), i);
    EXPECT_EQ(LatencyHistogram::index_of(LatencyHistogram::bucket_high(i)), i);
  }
  EXPECT_LT(LatencyHistogram::index_of(~std::uint64_t{0}), 128u * 58);
}

TEST(LatencyHistogram, percentiles_of_a_uniform_distribution_within_one_percent) {
  LatencyHistogram h;
  std::uint64_t total = 0;
  for (std::uint64_t v = 1; v <= 100'000; ++v) {
    h.record(v);
    total += v;
  }
  const LatencySummary s = h.summary();
  EXPECT_EQ(s.count, 100'000u);
  EXPECT_EQ(s.total_ns, total);
  EXPECT_EQ(s.max_ns, 100'000u);
  EXPECT_LE(relative_error(s.p50_ns, 50'000), 0.01);
  EXPECT_LE(relative_error(s.p90_ns, 90'000), 0.01);
  EXPECT_LE(relative_error(s.p99_ns, 99'000), 0.01);
  EXPECT_LE(relative_error(s.p999_ns, 99'900), 0.01);
}

TEST(LatencyHistogram, percentiles_of_a_skewed_distribution_within_one_percent) {
  // 990 fast calls of 20 ns, 9 page-faulting ones of 250 µs, one of 3 ms.
  LatencyHistogram h;
  for (int i = 0; i < 990; ++i) h.record(20);
  for (int i = 0; i < 9; ++i) h.record(250'000);
  h.record(3'000'000);
  EXPECT_EQ(h.percentile(0.5), 20u);
  EXPECT_EQ(h.percentile(0.99), 20u);  // the 990th value
  EXPECT_LE(relative_error(h.percentile(0.995), 250'000), 0.01);
  EXPECT_LE(relative_error(h.percentile(0.999), 250'000), 0.01);
  EXPECT_EQ(h.percentile(1.0), 3'000'000u);  // clamped to the exact max
  EXPECT_EQ(h.max(), 3'000'000u);
  EXPECT_EQ(h.min(), 20u);
}

TEST(LatencyHistogram, a_single_large_value_comes_back_within_one_percent) {
  for (std::uint64_t v : {129ull, 1'000ull, 123'457ull, 987'654'321ull, 1ull << 50}) {
    LatencyHistogram h;
    h.record(v);
    h.record(v + v / 1000);  // two values in (usually) one bucket: the answer is not clamped
    EXPECT_LE(relative_error(h.percentile(0.5), v), 0.01) << v;
  }
}

TEST(LatencyHistogram, merge_adds_distributions) {
  LatencyHistogram a, b, both;
  for (std::uint64_t v = 1; v < 1000; ++v) {
    (v % 2 ? a : b).record(v * 7);
    both.record(v * 7);
  }
  a.merge(b);
  EXPECT_EQ(a.summary(), both.summary());
}

TEST(LatencyHistogram, empty_is_all_zero) {
  const LatencySummary s = LatencyHistogram().summary();
  EXPECT_EQ(s, LatencySummary{});
}

}  // namespace
}  // namespace alloclab
