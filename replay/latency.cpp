#include "alloclab/replay/latency.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace alloclab {

LatencyHistogram::LatencyHistogram() : buckets_(kBuckets, 0) {}

LatencyHistogram LatencyHistogram::from_buckets(
    const std::vector<std::pair<std::size_t, std::uint64_t>>& buckets, std::uint64_t total,
    std::uint64_t max, std::uint64_t min) {
  LatencyHistogram h;
  for (const auto& [index, count] : buckets) {
    if (index >= kBuckets)
      throw std::invalid_argument("latency bucket " + std::to_string(index) + " out of range");
    h.buckets_[index] += count;
    h.count_ += count;
  }
  h.total_ = total;
  h.max_ = max;
  h.min_ = h.count_ ? min : ~std::uint64_t{0};
  return h;
}

void LatencyHistogram::merge(const LatencyHistogram& other) {
  for (std::size_t i = 0; i < kBuckets; ++i) buckets_[i] += other.buckets_[i];
  count_ += other.count_;
  total_ += other.total_;
  max_ = std::max(max_, other.max_);
  min_ = std::min(min_, other.min_);
}

std::uint64_t LatencyHistogram::percentile(double q) const {
  if (count_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  const auto rank = std::max<std::uint64_t>(
      1, static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(count_))));
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < kBuckets; ++i) {
    seen += buckets_[i];
    if (seen >= rank) {
      const std::uint64_t low = bucket_low(i), high = bucket_high(i);
      const std::uint64_t mid = low + (high - low) / 2;
      return std::clamp(mid, min(), max_);
    }
  }
  return max_;
}

std::uint64_t LatencyHistogram::coarse_high(std::uint64_t ns) {
  constexpr std::uint64_t kParts = std::uint64_t{1} << kCoarseBits;
  if (ns < kParts) return ns;
  const unsigned k = 63u - static_cast<unsigned>(__builtin_clzll(ns));
  const unsigned shift = k - kCoarseBits;
  return ((ns >> shift) << shift) + ((std::uint64_t{1} << shift) - 1);
}

std::uint64_t LatencyHistogram::coarse_low(std::uint64_t ns) {
  constexpr std::uint64_t kParts = std::uint64_t{1} << kCoarseBits;
  if (ns < kParts) return ns;
  const unsigned k = 63u - static_cast<unsigned>(__builtin_clzll(ns));
  const unsigned shift = k - kCoarseBits;
  return (ns >> shift) << shift;
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> LatencyHistogram::coarse() const {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  for (std::size_t i = 0; i < kBuckets; ++i) {
    if (buckets_[i] == 0) continue;
    const std::uint64_t high = coarse_high(bucket_low(i));
    if (!out.empty() && out.back().first == high)
      out.back().second += buckets_[i];
    else
      out.emplace_back(high, buckets_[i]);
  }
  return out;
}

LatencySummary LatencyHistogram::summary() const {
  LatencySummary s;
  s.count = count_;
  s.p50_ns = percentile(0.50);
  s.p90_ns = percentile(0.90);
  s.p99_ns = percentile(0.99);
  s.p999_ns = percentile(0.999);
  s.max_ns = max_;
  s.total_ns = total_;
  s.histogram = coarse();
  return s;
}

}  // namespace alloclab
