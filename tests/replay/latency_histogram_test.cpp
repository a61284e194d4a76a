// LatencyHistogram: ≤ 1% relative error on known inputs, exact count/total/max.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "alloclab/format/error.hpp"
#include "alloclab/replay/latency.hpp"
#include "alloclab/replay/report.hpp"

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

TEST(LatencyHistogram, coarse_buckets_are_eight_per_power_of_two_and_nest_the_fine_ones) {
  for (std::uint64_t v = 0; v < 8; ++v) {
    EXPECT_EQ(LatencyHistogram::coarse_low(v), v);
    EXPECT_EQ(LatencyHistogram::coarse_high(v), v);
  }
  EXPECT_EQ(LatencyHistogram::coarse_low(1000), 960u);  // [512, 1024) in parts of 64
  EXPECT_EQ(LatencyHistogram::coarse_high(1000), 1023u);
  EXPECT_EQ(LatencyHistogram::coarse_high(1023), 1023u);
  EXPECT_EQ(LatencyHistogram::coarse_low(1024), 1024u);
  for (std::uint64_t v = 8; v < (std::uint64_t{1} << 60); v = v * 5 / 4 + 3) {
    const std::uint64_t low = LatencyHistogram::coarse_low(v),
                        high = LatencyHistogram::coarse_high(v);
    EXPECT_LE(low, v);
    EXPECT_GE(high, v);
    EXPECT_EQ(LatencyHistogram::coarse_low(high), low) << v;
    EXPECT_EQ(LatencyHistogram::coarse_low(high + 1), high + 1) << v;  // no gaps
    const std::size_t fine = LatencyHistogram::index_of(v);
    EXPECT_LE(low, LatencyHistogram::bucket_low(fine)) << v;
    EXPECT_GE(high, LatencyHistogram::bucket_high(fine)) << v;
  }
}

TEST(LatencyHistogram, summary_histogram_sums_to_count_ascends_and_covers_max) {
  LatencyHistogram h;
  for (std::uint64_t v = 1; v < 5'000'000; v = v * 11 / 10 + 1) h.record(v);
  for (int i = 0; i < 1000; ++i) h.record(20);
  h.record(987'654'321);
  const LatencySummary s = h.summary();
  ASSERT_FALSE(s.histogram.empty());
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < s.histogram.size(); ++i) {
    EXPECT_GT(s.histogram[i].second, 0u) << "only non-empty buckets";
    if (i > 0) {
      EXPECT_LT(s.histogram[i - 1].first, s.histogram[i].first);
    }
    EXPECT_EQ(LatencyHistogram::coarse_high(s.histogram[i].first), s.histogram[i].first);
    sum += s.histogram[i].second;
  }
  EXPECT_EQ(sum, s.count);
  EXPECT_GE(s.histogram.back().first, s.max_ns);
  EXPECT_LE(LatencyHistogram::coarse_low(s.histogram.back().first), s.max_ns);
  EXPECT_EQ(s.histogram.front().first, 1u);
  EXPECT_LE(s.histogram.size(), 8u + 8u * 61u);
  const auto twenty = std::find_if(s.histogram.begin(), s.histogram.end(),
                                   [](const auto& b) { return b.first >= 20; });
  ASSERT_NE(twenty, s.histogram.end());
  EXPECT_EQ(twenty->first, 21u);  // [20, 21]: 16..31 in parts of 2
  EXPECT_GE(twenty->second, 1000u);
}

TEST(LatencyHistogram, report_json_keeps_the_histogram_and_refuses_bad_ones) {
  LatencyHistogram h;
  for (std::uint64_t v : {3ull, 3ull, 150ull, 70'000ull}) h.record(v);
  StrategyResult r;
  r.strategy = "exact";
  r.latency["strategy_allocate"] = h.summary();
  const nlohmann::json j = result_json(r);
  const nlohmann::json& hist = j["latency"]["strategy_allocate"]["histogram"];
  EXPECT_EQ(hist, nlohmann::json::parse("[[3, 2], [159, 1], [73727, 1]]"));
  EXPECT_EQ(result_from_json(j, "r.json").latency, r.latency);

  nlohmann::json old = j;  // reports from before the field still read
  old["latency"]["strategy_allocate"].erase("histogram");
  EXPECT_TRUE(result_from_json(old, "old.json").latency.at("strategy_allocate").histogram.empty());

  for (const char* bad : {R"("no")", "[[3, 2], [159, 1], [73727]]", "[[3, 2], [159, -1], [9, 1]]",
                          "[[3, 2], [73727, 1], [159, 1]]", "[[3, 2], [159, 1], [73727, 2]]"}) {
    nlohmann::json broken = j;
    broken["latency"]["strategy_allocate"]["histogram"] = nlohmann::json::parse(bad);
    EXPECT_THROW((void)result_from_json(broken, "bad.json"), InputError) << bad;
  }
}

TEST(LatencyHistogram, empty_is_all_zero) {
  const LatencySummary s = LatencyHistogram().summary();
  EXPECT_EQ(s, LatencySummary{});
}

}  // namespace
}  // namespace alloclab
