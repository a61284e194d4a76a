#pragma once
// What `alloclab info` reports about a trace, computed from the events and their resolution.
// The same structure is the `trace` object of every replay report.
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "alloclab/format/resolve.hpp"
#include "alloclab/format/trace.hpp"

namespace alloclab {

struct SizeCount {
  std::uint64_t size = 0;
  std::uint64_t count = 0;
  std::uint64_t bytes = 0;
};

struct RunSummary {
  std::string label;
  std::uint64_t allocations = 0;
  std::uint64_t frees = 0;
  std::uint64_t bytes_requested = 0;
  std::uint64_t peak_live_bytes = 0;
  std::uint64_t duration_ns = 0;
  bool ended = true;
};

// One device's share of the trace: a trace recorded with `record --cuda --cpu` holds host and
// device memory, whose peaks mean different things.
struct DeviceSummary {
  std::string device;  // "cpu" or "cuda:N"
  std::uint64_t allocations = 0;
  std::uint64_t frees = 0;
  std::uint64_t bytes_requested = 0;
  std::uint64_t peak_live_bytes = 0;
  std::uint64_t peak_live_time_ns = 0;
};

// The recorded allocator's state before the first event (ResolvedTrace::start_state).
struct StartStateSummary {
  std::uint64_t segments = 0;
  std::uint64_t segment_bytes = 0;
  std::uint64_t blocks = 0;
  std::uint64_t block_bytes = 0;  // requested
  // Blocks the history frees, whose size in their segment the snapshot does not give.
  std::uint64_t blocks_without_capacity = 0;
  std::uint64_t guessed_bytes = 0;
  std::vector<std::string> gaps;
};

struct TraceSummary {
  std::string source;  // file name, if any
  std::uint64_t events = 0;
  std::array<std::uint64_t, op_count> events_by_op{};
  std::uint64_t segment_events = 0;
  std::uint64_t threads = 0;
  std::vector<std::string> devices;
  std::uint64_t streams = 0;
  std::uint64_t pools = 0;  // explicit CUDA memory pools (cudaMallocFromPoolAsync)
  std::uint64_t first_time_ns = 0;
  std::uint64_t duration_ns = 0;

  std::uint64_t allocations = 0;
  std::uint64_t frees = 0;
  Anomalies anomalies;
  std::vector<AnomalyAt> first_anomalies;  // ResolvedTrace::first_anomalies
  BelowMinSize below_min_size;             // ResolvedTrace::below_min_size
  std::uint64_t bytes_requested = 0;
  std::uint64_t peak_live_bytes = 0;
  std::uint64_t peak_live_time_ns = 0;
  // By device, in device order (cpu first), for the devices that allocated.
  std::vector<DeviceSummary> by_device;

  // Bucket k counts sizes in [2^k, 2^(k+1)); bucket 0 also holds size 0.
  std::array<std::uint64_t, 65> size_histogram{};
  // Bucket k counts lifetimes (ns) in [2^k, 2^(k+1)); allocations never freed are not counted.
  std::array<std::uint64_t, 65> lifetime_histogram{};
  std::vector<SizeCount> top_sizes_by_count;
  std::vector<SizeCount> top_sizes_by_bytes;

  bool implicit_run = false;
  std::vector<RunSummary> runs;

  std::uint64_t segment_allocs = 0;
  std::uint64_t segment_frees = 0;
  std::uint64_t segment_bytes_allocated = 0;
  // 1 - segment_allocs / allocations, when the trace carries the recorded allocator's own calls.
  std::optional<double> recorded_hit_rate;

  std::optional<StartStateSummary> start_state;

  std::optional<std::uint64_t> file_bytes;  // for .alt input: size on disk
  std::uint64_t memory_bytes = 0;           // in-memory columns
  std::vector<std::string> warnings;
};

TraceSummary summarize(const Trace& trace, const ResolvedTrace& resolved);

// What a summary takes from the events themselves (counts by op, first and last time), for a
// trace seen in parts, in order.
class EventTally {
 public:
  void add(const Trace& part);

 private:
  friend TraceSummary summarize(const EventTally&, const ResolvedTrace&, std::uint64_t,
                                std::vector<std::string>);
  std::uint64_t events_ = 0;
  std::array<std::uint64_t, op_count> by_op_{};
  std::uint64_t segment_events_ = 0;
  std::uint64_t first_time_ns_ = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t last_time_ns_ = 0;
};

// summarize() of a trace seen in parts: `memory_bytes` and `warnings` are what the whole
// Trace would have said (Trace::memory_bytes(), Trace::warnings).
TraceSummary summarize(const EventTally& events, const ResolvedTrace& resolved,
                       std::uint64_t memory_bytes, std::vector<std::string> warnings);

// `with_runs` false leaves "runs" an empty array, for a writer that adds the runs one at a
// time (to_json(RunSummary) each).
nlohmann::json to_json(const TraceSummary& summary, bool with_runs = true);
nlohmann::json to_json(const RunSummary& run);
nlohmann::json to_json(const Anomalies& anomalies);
nlohmann::json to_json(const AnomalyAt& anomaly);

}  // namespace alloclab
