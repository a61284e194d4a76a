#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "gui/lod.hpp"

namespace alloclab::gui {
namespace {

LodPyramid random_series(std::size_t n, unsigned seed, std::vector<double>& ys) {
  std::mt19937_64 rng(seed);
  std::vector<double> xs(n);
  ys.resize(n);
  double x = 0, y = 1000;
  for (std::size_t i = 0; i < n; ++i) {
    x += static_cast<double>(rng() % 3);  // equal x values happen in traces too
    y = std::max(0.0, y + static_cast<double>(static_cast<int>(rng() % 201) - 100));
    xs[i] = x;
    ys[i] = y;
  }
  return LodPyramid(xs, ys);
}

TEST(LodPyramid, query_envelope_equals_the_raw_samples_in_range) {
  std::vector<double> ys;
  const LodPyramid p = random_series(100'000, 7, ys);
  for (auto [lo, hi] :
       {std::pair{0.0, 1e9}, std::pair{1234.0, 5678.0}, std::pair{50'000.0, 50'100.0}}) {
    const auto buckets = p.query(lo, hi, 500);
    ASSERT_FALSE(buckets.empty());
    double got_lo = 1e300, got_hi = -1e300;
    for (const auto& b : buckets) {
      got_lo = std::min(got_lo, b.y_min);
      got_hi = std::max(got_hi, b.y_max);
    }
    // Every sample inside the range lies inside the buckets' envelope...
    double raw_lo = 1e300, raw_hi = -1e300;
    for (std::size_t i = 0; i < p.size(); ++i)
      if (p.x(i) >= lo && p.x(i) <= hi) {
        raw_lo = std::min(raw_lo, ys[i]);
        raw_hi = std::max(raw_hi, ys[i]);
      }
    EXPECT_LE(got_lo, raw_lo);
    EXPECT_GE(got_hi, raw_hi);
    // ...and each bucket's extent is exactly that of the samples it covers.
    for (const auto& b : buckets) {
      const auto first = ys.begin() + static_cast<std::ptrdiff_t>(b.first);
      const auto last = first + static_cast<std::ptrdiff_t>(b.count);
      EXPECT_EQ(b.y_min, *std::min_element(first, last));
      EXPECT_EQ(b.y_max, *std::max_element(first, last));
    }
  }
}

TEST(LodPyramid, query_returns_about_as_many_buckets_as_pixels_whatever_the_size) {
  std::vector<double> ys;
  const LodPyramid p = random_series(1'000'000, 3, ys);
  EXPECT_GE(p.levels(), 10u);
  const auto buckets = p.query(p.x_front(), p.x_back(), 1000);
  EXPECT_LE(buckets.size(), 1002u);
  EXPECT_GE(buckets.size(), 1000u / LodPyramid::kFanOut);
  // Zoomed in far enough, the query gives the raw samples.
  const auto close = p.query(p.x(5000), p.x(5010), 1000);
  for (const auto& b : close) EXPECT_EQ(b.count, 1u);
}

TEST(LodPyramid, range_is_exact) {
  std::vector<double> ys;
  const LodPyramid p = random_series(10'000, 11, ys);
  for (std::size_t a : {0u, 1u, 17u, 4095u}) {
    for (std::size_t b : {a, a + 1, a + 63, std::size_t{9999}}) {
      double lo = 0, hi = 0;
      ASSERT_TRUE(p.range(p.x(a), p.x(b), lo, hi));
      double raw_lo = 1e300, raw_hi = -1e300;
      for (std::size_t i = 0; i < p.size(); ++i)
        if (p.x(i) >= p.x(a) && p.x(i) <= p.x(b)) {
          raw_lo = std::min(raw_lo, ys[i]);
          raw_hi = std::max(raw_hi, ys[i]);
        }
      EXPECT_EQ(lo, raw_lo) << a << ".." << b;
      EXPECT_EQ(hi, raw_hi) << a << ".." << b;
    }
  }
}

TEST(LodPyramid, separate_min_and_max_columns_are_kept_apart) {
  const LodPyramid p({0, 1, 2, 3, 4}, {5, 1, 7, 3, 2}, {6, 9, 8, 4, 2});
  const auto all = p.query(0, 4, 1);
  double lo = 1e9, hi = 0;
  for (const auto& b : all) {
    lo = std::min(lo, b.y_min);
    hi = std::max(hi, b.y_max);
  }
  EXPECT_EQ(lo, 1);
  EXPECT_EQ(hi, 9);
  EXPECT_EQ(p.index_at(2.5), 2u);
}

TEST(LodPyramid, empty_and_bad_input) {
  const LodPyramid empty;
  EXPECT_TRUE(empty.query(0, 10, 100).empty());
  double lo, hi;
  EXPECT_FALSE(empty.range(0, 10, lo, hi));
  EXPECT_THROW(LodPyramid({0, 2, 1}, {1, 1, 1}), std::invalid_argument);
  EXPECT_THROW(LodPyramid({0, 1}, {1}), std::invalid_argument);
  EXPECT_THROW(LodPyramid({0, 1}, {1, 2}, {1}), std::invalid_argument);
}

}  // namespace
}  // namespace alloclab::gui
