#include "alloclab/replay/calibrate.hpp"

#include <chrono>
#include <stdexcept>

#include "alloclab/replay/timing.hpp"
#include "alloclab/strategies/registry.hpp"
#include "alloclab/strategies/upstream/registry.hpp"

namespace alloclab {
namespace {

using Clock = std::chrono::steady_clock;

CalibrationPoint measure(Upstream& upstream, std::uint64_t size, const CalibrateOptions& o) {
  CalibrationPoint point;
  point.size = size;
  LatencyHistogram allocate, deallocate;
  // One unmeasured pair first: lazy binding, the allocator's own first-use set-up.
  std::optional<Block> warm = upstream.allocate(size);
  if (!warm) {
    point.failed = true;
    return point;
  }
  upstream.deallocate(*warm);
  const auto budget = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(o.budget_seconds_per_size));
  const auto start = Clock::now();
  for (std::uint64_t rep = 0; rep < o.max_repetitions; ++rep) {
    const auto t0 = Clock::now();
    if (rep >= o.min_repetitions && t0 - start > budget) break;
    const std::optional<Block> block = upstream.allocate(size);
    if (!block) {
      point.failed = true;
      break;
    }
    if (o.touch) upstream.touch(block->address, size);
    const auto t1 = Clock::now();
    upstream.deallocate(*block);
    const auto t2 = Clock::now();
    allocate.record(elapsed_ns(t0, t1));
    deallocate.record(elapsed_ns(t1, t2));
  }
  point.allocate = allocate.summary();
  point.deallocate = deallocate.summary();
  if (allocate.count() == 0) point.failed = true;
  return point;
}

// A cached allocate + deallocate of `exact`: batches of pairs timed together (one clock read per
// batch, so the clock's own cost does not swamp a ~20 ns pair); the median batch, per pair.
double measure_hit(Upstream& upstream) {
  const auto strategy = make_strategy("exact", upstream);
  constexpr std::uint64_t kSize = 4096, kBatch = 1000, kBatches = 51;
  const std::optional<Block> first = strategy->allocate(kSize, 0);
  if (!first) return 0;
  strategy->deallocate(*first);
  LatencyHistogram batches;
  for (std::uint64_t b = 0; b < kBatches; ++b) {
    const auto t0 = Clock::now();
    for (std::uint64_t i = 0; i < kBatch; ++i) {
      const std::optional<Block> block = strategy->allocate(kSize, 0);
      if (block) strategy->deallocate(*block);
    }
    batches.record(elapsed_ns(t0, Clock::now()));
  }
  strategy->release();
  return static_cast<double>(batches.percentile(0.5)) / static_cast<double>(kBatch);
}

}  // namespace

std::vector<std::uint64_t> default_calibration_sizes() {
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t s = 64; s <= (std::uint64_t{256} << 20); s *= 4) sizes.push_back(s);
  return sizes;
}

Calibration calibrate(const CalibrateOptions& options) {
  if (!is_real_upstream(options.upstream))
    throw std::invalid_argument(
        "calibrate measures a real upstream, not 'sim' (known: " +
        std::string("host-malloc, host-mmap, host-jemalloc, host-mimalloc") + ")");
  const std::unique_ptr<Upstream> upstream = make_upstream(options.upstream);
  Calibration out;
  out.upstream = options.upstream;
  out.touch = options.touch;
  const std::vector<std::uint64_t> sizes =
      options.sizes.empty() ? default_calibration_sizes() : options.sizes;
  bool any = false;
  for (std::uint64_t size : sizes) {
    out.points.push_back(measure(*upstream, size, options));
    any = any || !out.points.back().failed;
  }
  if (!any)
    throw std::runtime_error("calibrate: " + options.upstream + " could not allocate any size");
  out.hit_ns = measure_hit(*upstream);
  return out;
}

nlohmann::json calibration_json(const Calibration& c) {
  nlohmann::json allocate = nlohmann::json::array(), deallocate = nlohmann::json::array();
  for (const CalibrationPoint& p : c.points) {
    if (p.failed) continue;
    allocate.push_back({{"size", p.size},
                        {"ns", p.allocate.p50_ns},
                        {"p99_ns", p.allocate.p99_ns},
                        {"count", p.allocate.count}});
    deallocate.push_back({{"size", p.size},
                          {"ns", p.deallocate.p50_ns},
                          {"p99_ns", p.deallocate.p99_ns},
                          {"count", p.deallocate.count}});
  }
  return {{"name", c.upstream + (c.touch ? "+touch" : "")},
          {"source", "alloclab calibrate --upstream " + c.upstream + (c.touch ? " --touch" : "")},
          {"upstream", c.upstream},
          {"touch", c.touch},
          {"hit_ns", c.hit_ns},
          {"upstream_allocate", std::move(allocate)},
          {"upstream_deallocate", std::move(deallocate)}};
}

}  // namespace alloclab
