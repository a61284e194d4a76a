#pragma once
// What a program run under `alloclab run` says about its strategy when it exits: the contract's
// counters, latency histograms and the first failed request, as a small text file that
// `alloclab run` reads back (one file per process). Text, so that a run that went wrong can be
// read by eye.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "alloclab/replay/latency.hpp"
#include "alloclab/replay/metrics.hpp"

namespace alloclab::live {

// A latency histogram kept inside the program: LatencyHistogram's buckets, without its
// summaries (which the reader computes), of durations in any unit (the cache counts clock
// ticks, which cost a few nanoseconds to read where the system clock costs tens).
class LiveHistogram {
 public:
  LiveHistogram() : buckets_(LatencyHistogram::kBucketCount, 0) {}
  // `weight`: how many calls this one stands for (a sample of one call in `weight`).
  void record(std::uint64_t ns, std::uint64_t weight = 1) {
    buckets_[LatencyHistogram::index_of(ns)] += weight;
    total_ += ns * weight;
    if (ns > max_) max_ = ns;
    if (ns < min_) min_ = ns;
  }
  struct Raw {
    std::vector<std::pair<std::size_t, std::uint64_t>> buckets;  // non-empty ones
    std::uint64_t total = 0, max = 0, min = 0;
    bool operator==(const Raw&) const = default;
  };
  // In nanoseconds, `ns_per_unit` of them per recorded unit: each bucket's count goes to the
  // bucket of its middle value scaled (so within the histogram's resolution); total, max and
  // min are scaled exactly.
  Raw raw(double ns_per_unit = 1.0) const;
  // The recorded units of every call (sampled calls weighted), as `raw` scales it.
  std::uint64_t total() const { return total_; }

 private:
  std::vector<std::uint64_t> buckets_;
  std::uint64_t total_ = 0, max_ = 0, min_ = ~std::uint64_t{0};
};

// The first request the strategy failed (the program got NULL and ENOMEM): the figures the live
// cache measures, each a count on a line of the text. live_result makes it a FirstFailure, whose
// device it takes from the report's name and whose other figures (stream, peaks, the optional
// ones) the cache does not know.
struct LiveFailure {
  std::uint64_t requested_bytes = 0;
  std::uint64_t since_start_ns = 0;
  std::uint64_t live_bytes = 0;
  std::uint64_t allocated_bytes = 0;
  std::uint64_t reserved_bytes = 0;
  // The strategy's operations before it, numbered as the replay of the run's trace (`run
  // --record`, the same minimum size) numbers its operations: a failed request has no event
  // there, so this is the index of the operation that follows it. A device's cache numbers its
  // own operations.
  std::uint64_t op_index = 0;
  std::uint64_t time_ns = 0;  // CLOCK_MONOTONIC, the clock of a trace's event times
  bool operator==(const LiveFailure&) const = default;
};

struct LiveReport {
  std::string spec;
  // Empty for the program's malloc family; a device's blocks (`run --cuda`, the PyTorch
  // allocator) name it, e.g. "cuda:0".
  std::string device;
  std::uint64_t pid = 0;
  std::uint64_t min_size = 0;
  // The contract's metrics (docs/strategy-contract.md), over the blocks the strategy served:
  // the very counters a replay of the run's trace gives. `misses` is requests - hits (the
  // text leaves it out and parse_live_report derives it).
  Metrics metrics;
  // Of the hits: reallocs that kept their block.
  std::uint64_t in_place_reallocs = 0;
  // Run markers the program set.
  std::uint64_t runs = 0;
  // Each run's counters, as a replay's (RunMetrics), in order: the first LiveRuns::kMaxListed,
  // then only the count of the others.
  std::vector<RunMetrics> run_metrics;
  std::uint64_t runs_not_listed = 0;
  // A device's report only: the most memory in use on the device (total - free, every
  // process's) seen right after one of the strategy's upstream allocations.
  std::uint64_t peak_device_bytes = 0;
  std::map<std::string, LiveHistogram::Raw> latency;  // strategy_allocate, ...
  std::map<std::string, std::uint64_t> strategy_counters;
  std::optional<LiveFailure> first_failure;
  bool operator==(const LiveReport&) const = default;
};

std::string to_text(const LiveReport& report);
// Throws std::runtime_error naming `source` and the line for anything it cannot read.
LiveReport parse_live_report(std::string_view text, const std::string& source);

}  // namespace alloclab::live
