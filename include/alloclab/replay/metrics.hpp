#pragma once
// The numbers a replay produces, with exactly the meanings of docs/strategy-contract.md
// ("Metrics").
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "alloclab/replay/fidelity.hpp"
#include "alloclab/replay/latency.hpp"

namespace alloclab {

struct Metrics {
  std::uint64_t requests = 0;
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;
  std::uint64_t failed_requests = 0;  // requests the strategy could not serve at all
  std::uint64_t upstream_allocs = 0;
  std::uint64_t upstream_frees = 0;
  std::uint64_t evictions = 0;
  std::uint64_t peak_live_bytes = 0;
  std::uint64_t peak_reserved_bytes = 0;
  std::uint64_t final_cached_bytes = 0;
  std::uint64_t slack_bytes = 0;

  double hit_rate() const {
    return requests == 0 ? 0.0 : static_cast<double>(hits) / static_cast<double>(requests);
  }
  bool operator==(const Metrics&) const = default;
};

// The same counters restricted to one run (between its run_begin and run_end, both included:
// the releases a run_end causes belong to that run).
struct RunMetrics {
  std::string label;
  std::uint64_t requests = 0;
  std::uint64_t hits = 0;
  std::uint64_t upstream_allocs = 0;
  std::uint64_t upstream_frees = 0;
  std::uint64_t evictions = 0;
  std::uint64_t peak_live_bytes = 0;
  std::uint64_t peak_reserved_bytes = 0;
  std::uint64_t slack_bytes = 0;
  bool operator==(const RunMetrics&) const = default;
};

// One point of the memory-over-time series: the range of live and reserved bytes over a bucket
// of consecutive operations. Keeping min and max per bucket means no peak is lost to
// downsampling.
struct SeriesPoint {
  std::uint64_t first_op = 0;
  std::uint64_t time_ns = 0;  // time of the bucket's first operation
  std::uint64_t live_min = 0;
  std::uint64_t live_max = 0;
  std::uint64_t reserved_min = 0;
  std::uint64_t reserved_max = 0;
  bool operator==(const SeriesPoint&) const = default;
};

// Modelled time of one simulated replay under a cost model (`--cost-model`), whole nanoseconds
// (each call's cost is rounded).
struct ModelledTime {
  std::uint64_t upstream_allocate = 0;    // every upstream allocate call (failed ones too)
  std::uint64_t upstream_deallocate = 0;  // upstream deallocates during the replay
  std::uint64_t hits = 0;                 // hits × hit_ns
  std::uint64_t total() const { return upstream_allocate + upstream_deallocate + hits; }
  bool operator==(const ModelledTime&) const = default;
};

struct StrategyResult {
  std::string strategy;  // the spec as given
  Metrics metrics;
  std::vector<RunMetrics> runs;
  std::vector<SeriesPoint> series;
  double wall_seconds = 0;  // not part of the deterministic output
  // Real replay only (empty in simulation): latency by name (strategy_allocate,
  // strategy_deallocate, upstream_allocate, upstream_deallocate, and touch with --touch).
  std::map<std::string, LatencySummary> latency;
  std::optional<ModelledTime> modelled;  // simulation with a cost model only
  // A trace with the recorded allocator's upstream calls (ResolvedTrace::segment_calls) only:
  // the program's torch.cuda.empty_cache() calls found there and replayed as releases (every
  // mode), and, in simulation, the strategy's upstream calls against the recorded ones.
  std::optional<std::uint64_t> empty_cache_calls;
  std::optional<Fidelity> fidelity;
};

}  // namespace alloclab
