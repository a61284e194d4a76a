#include "lod.hpp"

#include <algorithm>
#include <stdexcept>

namespace alloclab::gui {

LodPyramid::LodPyramid(std::vector<double> x, std::vector<double> y_min, std::vector<double> y_max)
    : x_(std::move(x)), y_min_(std::move(y_min)), y_max_(std::move(y_max)) {
  if (y_min_.size() != x_.size() || (!y_max_.empty() && y_max_.size() != x_.size()))
    throw std::invalid_argument("LodPyramid: columns of different lengths");
  if (!std::is_sorted(x_.begin(), x_.end()))
    throw std::invalid_argument("LodPyramid: x must be non-decreasing");
  std::size_t n = x_.size();
  const std::vector<double>* below_min = &y_min_;
  const std::vector<double>* below_max = y_max_.empty() ? &y_min_ : &y_max_;
  while (n > 1) {
    const std::size_t m = (n + kFanOut - 1) / kFanOut;
    Level level;
    level.y_min.resize(m);
    level.y_max.resize(m);
    for (std::size_t j = 0; j < m; ++j) {
      const std::size_t a = j * kFanOut, b = std::min(n, a + kFanOut);
      double lo = (*below_min)[a], hi = (*below_max)[a];
      for (std::size_t i = a + 1; i < b; ++i) {
        lo = std::min(lo, (*below_min)[i]);
        hi = std::max(hi, (*below_max)[i]);
      }
      level.y_min[j] = lo;
      level.y_max[j] = hi;
    }
    upper_.push_back(std::move(level));
    below_min = &upper_.back().y_min;
    below_max = &upper_.back().y_max;
    n = m;
  }
}

void LodPyramid::bucket_extent(std::size_t level, std::size_t j, double& lo, double& hi) const {
  if (level == 0) {
    lo = y_min(j);
    hi = y_max(j);
  } else {
    lo = upper_[level - 1].y_min[j];
    hi = upper_[level - 1].y_max[j];
  }
}

std::size_t LodPyramid::index_at(double value) const {
  auto it = std::upper_bound(x_.begin(), x_.end(), value);
  return it == x_.begin() ? 0 : static_cast<std::size_t>(it - x_.begin()) - 1;
}

std::vector<LodBucket> LodPyramid::query(double x_lo, double x_hi, std::size_t max_buckets) const {
  std::vector<LodBucket> out;
  if (x_.empty() || x_hi < x_lo) return out;
  max_buckets = std::max<std::size_t>(max_buckets, 1);
  // One sample beyond each edge, so that a line drawn through the buckets crosses the edges.
  std::size_t first =
      static_cast<std::size_t>(std::lower_bound(x_.begin(), x_.end(), x_lo) - x_.begin());
  std::size_t last = static_cast<std::size_t>(std::upper_bound(x_.begin(), x_.end(), x_hi) -
                                              x_.begin());  // exclusive
  if (first > 0) --first;
  if (last < x_.size()) ++last;
  if (first >= last) return out;
  const std::size_t count = last - first;
  std::size_t level = 0, width = 1;
  while (level + 1 < levels() && count / width > max_buckets) {
    ++level;
    width *= kFanOut;
  }
  // Buckets of this level that intersect [first, last): the edge buckets may reach a little
  // beyond the range, which only widens the envelope by samples next to the edges.
  const std::size_t j0 = first / width, j1 = (last - 1) / width;
  out.reserve(j1 - j0 + 1);
  for (std::size_t j = j0; j <= j1; ++j) {
    LodBucket b;
    b.first = j * width;
    b.count = std::min(width, x_.size() - b.first);
    b.x0 = x_[b.first];
    b.x1 = x_[b.first + b.count - 1];
    bucket_extent(level, j, b.y_min, b.y_max);
    out.push_back(b);
  }
  return out;
}

bool LodPyramid::range(double x_lo, double x_hi, double& y_lo, double& y_hi) const {
  std::size_t a =
      static_cast<std::size_t>(std::lower_bound(x_.begin(), x_.end(), x_lo) - x_.begin());
  const std::size_t b =
      static_cast<std::size_t>(std::upper_bound(x_.begin(), x_.end(), x_hi) - x_.begin());
  if (a >= b) return false;
  bool any = false;
  // Walk up: take whole aligned buckets of the highest level that fits, like a segment tree.
  std::size_t end = b;
  while (a < end) {
    std::size_t level = 0, width = 1;
    while (level + 1 < levels() && a % (width * kFanOut) == 0 && a + width * kFanOut <= end) {
      ++level;
      width *= kFanOut;
    }
    double lo, hi;
    bucket_extent(level, a / width, lo, hi);
    y_lo = any ? std::min(y_lo, lo) : lo;
    y_hi = any ? std::max(y_hi, hi) : hi;
    any = true;
    a += width;
  }
  return any;
}

std::size_t LodPyramid::memory_bytes() const {
  std::size_t bytes = (x_.size() + y_min_.size() + y_max_.size()) * sizeof(double);
  for (const Level& level : upper_)
    bytes += (level.y_min.size() + level.y_max.size()) * sizeof(double);
  return bytes;
}

}  // namespace alloclab::gui
