#include "alloclab/replay/live_result.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>

namespace alloclab {

StrategyResult live_result(const live::LiveReport& report) {
  StrategyResult r;
  r.strategy = report.spec;
  r.metrics = report.metrics;
  for (const auto& [name, raw] : report.latency) {
    const LatencyHistogram h =
        LatencyHistogram::from_buckets(raw.buckets, raw.total, raw.max, raw.min);
    if (h.count() > 0) r.latency[name] = h.summary();
  }
  r.strategy_counters = report.strategy_counters;
  r.runs = report.run_metrics;
  if (report.runs_not_listed > 0) r.runs_not_listed = report.runs_not_listed;
  if (!report.device.empty()) {
    r.device = report.device;
    r.peak_device_bytes = report.peak_device_bytes;
  }
  if (report.first_failure) {
    const live::LiveFailure& f = *report.first_failure;
    FirstFailure out;
    out.op_index = f.op_index;
    out.time_ns = f.time_ns;
    out.since_start_ns = f.since_start_ns;
    out.requested_bytes = f.requested_bytes;
    out.live_bytes = f.live_bytes;
    out.allocated_bytes = f.allocated_bytes;
    out.reserved_bytes = f.reserved_bytes;
    // A device's report names it "cuda:N" (or "cuda-driver:N"): the failure was on device N.
    if (const std::size_t colon = report.device.rfind(':'); colon != std::string::npos)
      out.device =
          static_cast<std::int32_t>(std::strtol(report.device.c_str() + colon + 1, nullptr, 10));
    r.first_failure = out;
  }
  return r;
}

}  // namespace alloclab
