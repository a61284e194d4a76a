#pragma once
// The numbers a replay produces, with exactly the meanings of docs/strategy-contract.md
// ("Metrics").
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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
  // The time the strategy's calls took in the run: measured on a real upstream (replay
  // --upstream, a live run), modelled with --cost-model; absent in a plain simulation.
  std::optional<std::uint64_t> allocation_time_ns;
  // The counters and the label: a measured time differs from one replay to the next, and a
  // live run's equals its replay's in everything else.
  bool operator==(const RunMetrics& o) const {
    return label == o.label && requests == o.requests && hits == o.hits &&
           upstream_allocs == o.upstream_allocs && upstream_frees == o.upstream_frees &&
           evictions == o.evictions && peak_live_bytes == o.peak_live_bytes &&
           peak_reserved_bytes == o.peak_reserved_bytes && slack_bytes == o.slack_bytes;
  }
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

// The first request a strategy failed, and its device's state right after the failure (after
// the strategy's own recovery, as PyTorch's out-of-memory message sees it). Bytes are of that
// device alone: each device is its own allocator with its own limit.
// docs/report-schema.md ("first_failure") gives each field's meaning.
struct FirstFailure {
  std::uint64_t op_index = 0;                // index into the resolved trace's operations
  std::optional<std::uint64_t> event_index;  // index of its event in the trace, when known
  std::uint64_t time_ns = 0;                 // the event's time
  std::uint64_t since_start_ns = 0;          // time since the first operation replayed
  std::uint64_t requested_bytes = 0;
  // What the strategy asked of its upstream (PyTorch's "Tried to allocate": the segment size);
  // nullopt when the request never reached the upstream or the strategy cannot say.
  std::optional<std::uint64_t> upstream_request_bytes;
  std::uint64_t stream = 0;
  std::int32_t device = -1;           // a DeviceId: -1 is the host
  std::uint64_t live_bytes = 0;       // requested bytes of the live allocations
  std::uint64_t allocated_bytes = 0;  // capacity of the blocks handed out
  std::uint64_t reserved_bytes = 0;   // held from the upstream
  // The largest block held and not handed out; nullopt when the strategy cannot say.
  std::optional<std::uint64_t> largest_cached_block;
  std::optional<std::uint64_t> memory_limit;   // the upstream's (replay --memory-limit)
  std::optional<std::uint64_t> allowed_bytes;  // the strategy's own limit (pytorch's fraction)
  // Peaks of this device up to and including the failed request.
  std::uint64_t peak_allocated_bytes = 0;
  std::uint64_t peak_reserved_bytes = 0;

  // Reserved but not handed out: PyTorch's "reserved by PyTorch but unallocated".
  std::uint64_t cached_bytes() const {
    return reserved_bytes > allocated_bytes ? reserved_bytes - allocated_bytes : 0;
  }
  // 1 - allocated / reserved (0 with nothing reserved).
  double fragmentation() const {
    return reserved_bytes == 0
               ? 0.0
               : static_cast<double>(cached_bytes()) / static_cast<double>(reserved_bytes);
  }
  // GMLake's: 1 - peak allocated / peak reserved (0 with nothing reserved).
  double gmlake_fragmentation() const {
    if (peak_reserved_bytes == 0 || peak_allocated_bytes >= peak_reserved_bytes) return 0.0;
    return 1.0 -
           static_cast<double>(peak_allocated_bytes) / static_cast<double>(peak_reserved_bytes);
  }
  bool operator==(const FirstFailure&) const = default;
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
  // The strategy's own counters (Strategy::counters, e.g. pytorch's num_alloc_retries and
  // num_ooms), summed over devices; empty for strategies that have none.
  std::map<std::string, std::uint64_t> strategy_counters;
  // The first failed request, if any; with ReplayOptions::stop_at_first_failure the replay ended
  // there (`stopped_at_first_failure`) and the counters above stop at that request.
  std::optional<FirstFailure> first_failure;
  bool stopped_at_first_failure = false;
  // A trace with the recorded allocator's upstream calls (ResolvedTrace::segment_calls) only:
  // the program's torch.cuda.empty_cache() calls found there and replayed as releases (every
  // mode), and, in simulation, the strategy's upstream calls against the recorded ones.
  std::optional<std::uint64_t> empty_cache_calls;
  std::optional<Fidelity> fidelity;
  // Live mode only, a device's result (`run --cuda`, the PyTorch allocator): the device, e.g.
  // "cuda:0", and the most memory in use on it (every process's) seen after the strategy's
  // upstream allocations.
  std::string device;
  std::optional<std::uint64_t> peak_device_bytes;
  // Live mode only: runs that `runs` does not list, past the first ones a live report keeps
  // (LiveRuns::kMaxListed); absent when every run is listed.
  std::optional<std::uint64_t> runs_not_listed;
  // `replay --sites N` only (null otherwise): the stacks with the most misses under this
  // strategy, each with its frames and counts, as replay/sites.hpp's top_miss_stacks_json makes
  // them (docs/report-schema.md, "sites").
  nlohmann::json sites;
};

}  // namespace alloclab
