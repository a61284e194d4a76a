#pragma once
// A min/max level-of-detail pyramid over a series sorted by x, so that a chart of millions of
// points draws a few thousand buckets per frame and still shows every peak and trough.
//
// Level 0 holds the samples (x, y_min, y_max); level k holds, for each run of kFanOut^k
// consecutive samples, their smallest y_min and largest y_max. A query picks the coarsest level
// that still gives at least `max_buckets / kFanOut` buckets over the visible range, so its cost
// depends on the pixels, not on the number of samples.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace alloclab::gui {

struct LodBucket {
  double x0 = 0;  // x of the bucket's first sample
  double x1 = 0;  // x of its last sample
  double y_min = 0;
  double y_max = 0;
  std::size_t first = 0;  // index of the first sample (level 0)
  std::size_t count = 0;  // samples in the bucket
};

class LodPyramid {
 public:
  static constexpr std::size_t kFanOut = 4;

  LodPyramid() = default;
  // x must be non-decreasing; y_max empty means y_max == y_min (a plain series).
  LodPyramid(std::vector<double> x, std::vector<double> y_min, std::vector<double> y_max = {});

  std::size_t size() const { return x_.size(); }
  bool empty() const { return x_.empty(); }
  std::size_t levels() const { return 1 + upper_.size(); }
  double x_front() const { return x_.empty() ? 0 : x_.front(); }
  double x_back() const { return x_.empty() ? 0 : x_.back(); }
  double x(std::size_t i) const { return x_[i]; }
  double y_min(std::size_t i) const { return y_min_[i]; }
  double y_max(std::size_t i) const { return y_max_.empty() ? y_min_[i] : y_max_[i]; }

  // Buckets covering every sample with x in [x_lo, x_hi], plus the sample just before and just
  // after (so lines reach the edges), at most about `max_buckets` of them (>= 1).
  std::vector<LodBucket> query(double x_lo, double x_hi, std::size_t max_buckets) const;
  // Smallest y_min and largest y_max over samples with x in [x_lo, x_hi] (exact, via the levels).
  bool range(double x_lo, double x_hi, double& y_lo, double& y_hi) const;
  // Index of the last sample with x <= value (0 when none).
  std::size_t index_at(double value) const;

  std::size_t memory_bytes() const;

 private:
  struct Level {
    std::vector<double> y_min, y_max;
  };
  void bucket_extent(std::size_t level, std::size_t j, double& lo, double& hi) const;

  std::vector<double> x_, y_min_, y_max_;
  std::vector<Level> upper_;  // upper_[k - 1] is level k
};

}  // namespace alloclab::gui
