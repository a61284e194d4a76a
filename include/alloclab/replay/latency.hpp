#pragma once
// LatencyHistogram: a log-bucketed distribution of durations in nanoseconds (HDR histogram
// style), for the timings of real replay.
//
// Buckets: values below 128 ns each have their own bucket (exact); from 128 ns on, each power of
// two [2^k, 2^(k+1)) is split into 128 equal sub-buckets of width 2^(k-7). A percentile is the
// midpoint of the bucket it falls in, clamped to [min, max]: its relative error is at most half
// a sub-bucket, 1/256 < 0.4% (< 1% promised). count, total and max are exact.
#include <cstdint>
#include <utility>
#include <vector>

namespace alloclab {

// What a report shows of one histogram.
struct LatencySummary {
  std::uint64_t count = 0;
  std::uint64_t p50_ns = 0, p90_ns = 0, p99_ns = 0, p999_ns = 0;
  std::uint64_t max_ns = 0;
  std::uint64_t total_ns = 0;
  // Non-empty coarse buckets, ascending: (inclusive upper bound in ns, count). Empty when the
  // report predates it.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> histogram;
  bool operator==(const LatencySummary&) const = default;
};

class LatencyHistogram {
 public:
  static constexpr unsigned kSubBucketBits = 7;  // 128 sub-buckets per power of two
  static constexpr std::uint64_t kSubBuckets = std::uint64_t{1} << kSubBucketBits;

  // Buckets of the fine histogram, indexed by index_of().
  static constexpr std::size_t kBucketCount = kSubBuckets * (64 - kSubBucketBits + 1);

  LatencyHistogram();
  // A histogram kept elsewhere in raw form (a live run's, inside the program): (index_of, count)
  // pairs, and the exact total, max and min of the values. Throws std::invalid_argument for an
  // index out of range.
  static LatencyHistogram from_buckets(
      const std::vector<std::pair<std::size_t, std::uint64_t>>& buckets, std::uint64_t total,
      std::uint64_t max, std::uint64_t min);
  void record(std::uint64_t ns) {
    ++buckets_[index_of(ns)];
    ++count_;
    total_ += ns;
    if (ns > max_) max_ = ns;
    if (ns < min_) min_ = ns;
  }
  void merge(const LatencyHistogram& other);

  std::uint64_t count() const { return count_; }
  std::uint64_t total() const { return total_; }
  std::uint64_t max() const { return max_; }
  std::uint64_t min() const { return count_ ? min_ : 0; }
  // The value at quantile q in [0, 1]: the smallest recorded value v (to bucket accuracy) with at
  // least ceil(q * count) values <= v. 0 when empty.
  std::uint64_t percentile(double q) const;
  LatencySummary summary() const;

  // The coarse buckets a report keeps, 8 per power of two so that a report stays small (at most
  // 8 + 8 * 61 entries): values below 8 ns each have their own bucket; from 8 ns on, each
  // [2^k, 2^(k+1)) is split into 8 equal parts of width 2^(k-3). Each fine bucket lies inside one
  // coarse bucket, so merging them loses nothing but resolution.
  static constexpr unsigned kCoarseBits = 3;
  static std::uint64_t coarse_high(std::uint64_t ns);
  static std::uint64_t coarse_low(std::uint64_t ns);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> coarse() const;

  static std::size_t index_of(std::uint64_t ns) {
    if (ns < kSubBuckets) return static_cast<std::size_t>(ns);
    const unsigned k = 63u - static_cast<unsigned>(__builtin_clzll(ns));  // k >= 7
    const unsigned shift = k - kSubBucketBits;
    return static_cast<std::size_t>(kSubBuckets * (shift + 1) + ((ns >> shift) - kSubBuckets));
  }
  // The range [low, high] of values that fall in bucket `index`.
  static std::uint64_t bucket_low(std::size_t index) {
    if (index < kSubBuckets) return index;
    const std::uint64_t shift = index / kSubBuckets - 1;
    const std::uint64_t sub = index % kSubBuckets;
    return (kSubBuckets + sub) << shift;
  }
  static std::uint64_t bucket_high(std::size_t index) {
    if (index < kSubBuckets) return index;
    const std::uint64_t shift = index / kSubBuckets - 1;
    return bucket_low(index) + ((std::uint64_t{1} << shift) - 1);
  }

 private:
  static constexpr std::size_t kBuckets = kBucketCount;
  std::vector<std::uint64_t> buckets_;
  std::uint64_t count_ = 0, total_ = 0, max_ = 0;
  std::uint64_t min_ = ~std::uint64_t{0};
};

}  // namespace alloclab
