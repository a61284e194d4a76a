#pragma once
// Calibration: measures an upstream's allocate and deallocate latency by size on this machine and
// turns it into a cost model (cost_model.hpp) for simulation (`alloclab calibrate`).
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "alloclab/replay/latency.hpp"

namespace alloclab {

struct CalibrateOptions {
  std::string upstream = "host-malloc";  // a real upstream name (make_upstream)
  bool touch = false;  // write every page of each block (counted in the allocate time)
  // Sizes to measure; empty: 64 B, 256 B, ... 256 MiB (powers of 4: 12 sizes).
  std::vector<std::uint64_t> sizes;
  // Per size: allocate+deallocate pairs until this much time has passed (and at least
  // min_repetitions), at most max_repetitions.
  double budget_seconds_per_size = 0.05;
  std::uint64_t min_repetitions = 3;
  std::uint64_t max_repetitions = 200'000;
};

struct CalibrationPoint {
  std::uint64_t size = 0;
  LatencySummary allocate;  // touch included with --touch
  LatencySummary deallocate;
  bool failed = false;  // the upstream could not allocate this size (not in the model)
};

struct Calibration {
  std::string upstream;
  bool touch = false;
  std::vector<CalibrationPoint> points;
  double hit_ns = 0;  // a cached allocate + deallocate pair of `exact` over this upstream, 4 KiB
};

std::vector<std::uint64_t> default_calibration_sizes();

// Throws UpstreamError for an unknown or unavailable upstream, std::invalid_argument for `sim`,
// std::runtime_error when no size could be allocated at all.
Calibration calibrate(const CalibrateOptions& options);

// The cost-model JSON (cost_model.hpp's format; `ns` is the median) with, per point, `p99_ns`
// and `count`, and `source`, `upstream`, `touch`.
nlohmann::json calibration_json(const Calibration& calibration);

}  // namespace alloclab
