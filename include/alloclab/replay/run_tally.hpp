#pragma once
// How a run's counters (RunMetrics) are made, shared by the replay and by a live run
// (`alloclab run`) so that both mean the same: each counter is the difference of the strategy's
// totals between the run's opening and its closing, and the peaks are taken over the states
// from the opening on (the state before the run's first operation included).
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "alloclab/replay/metrics.hpp"

namespace alloclab {

// The strategy's counters so far, as the run counters take them: in-place reallocs (served
// without asking the strategy) included in requests, hits and slack.
struct RunTotals {
  std::uint64_t requests = 0;
  std::uint64_t hits = 0;
  std::uint64_t upstream_allocs = 0;
  std::uint64_t upstream_frees = 0;
  std::uint64_t evictions = 0;
  std::uint64_t slack_bytes = 0;
  std::optional<std::uint64_t> allocation_time_ns;  // when the strategy's calls are timed
};

class RunTally {
 public:
  // At a run_begin, before the strategy's begin_run: the run starts from this state.
  void open(std::string label, const RunTotals& now, std::uint64_t live, std::uint64_t reserved) {
    run_ = RunMetrics{};
    run_.label = std::move(label);
    run_.peak_live_bytes = live;
    run_.peak_reserved_bytes = reserved;
    start_ = now;
  }
  // After each operation of the run (its run_end included). Outside a run, calls change what
  // the next open() replaces, so a caller may make them whether or not a run is open.
  void observe(std::uint64_t live, std::uint64_t reserved) {
    run_.peak_live_bytes = std::max(run_.peak_live_bytes, live);
    run_.peak_reserved_bytes = std::max(run_.peak_reserved_bytes, reserved);
  }
  // The run's counters, ending at `now`: after its run_end, or at the end of the operations
  // for a run that never ended (whose final clean-up is not counted).
  RunMetrics close(const RunTotals& now) const {
    RunMetrics r = run_;
    r.requests = now.requests - start_.requests;
    r.hits = now.hits - start_.hits;
    r.upstream_allocs = now.upstream_allocs - start_.upstream_allocs;
    r.upstream_frees = now.upstream_frees - start_.upstream_frees;
    r.evictions = now.evictions - start_.evictions;
    r.slack_bytes = now.slack_bytes - start_.slack_bytes;
    if (now.allocation_time_ns && start_.allocation_time_ns)
      r.allocation_time_ns = *now.allocation_time_ns - *start_.allocation_time_ns;
    return r;
  }

 private:
  RunMetrics run_;
  RunTotals start_;
};

}  // namespace alloclab
