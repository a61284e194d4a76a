#pragma once
// SegmentFollower: walks a trace's recorded upstream calls (ResolvedTrace::segment_calls) along
// a replay, lane by lane (one lane per device). It finds where the program emptied its
// allocator's cache, for the replayer to replay as a release, and in simulation holds each
// lane's upstream calls against the recorded ones (the `fidelity` section). docs/strategies.md,
// "Fidelity", is the rule this implements.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "alloclab/format/resolve.hpp"
#include "alloclab/replay/fidelity.hpp"
#include "alloclab/strategies/upstream/counting.hpp"

namespace alloclab {

class SegmentFollower {
 public:
  // `lane_of_origin`: the lane of each of trace.origins; `lane_devices`: the device of each lane.
  // `compare`: hold the lanes' upstream calls (their logs) against the recorded ones.
  SegmentFollower(const ResolvedTrace& trace, const std::vector<std::size_t>& lane_of_origin,
                  std::vector<DeviceId> lane_devices, bool compare);

  // Before operation k (trace.ops.size(): the end of the trace) of `lane`: takes the lane's
  // recorded calls up to that operation. True when they begin with frees that no allocation
  // caused, a program's empty_cache: the caller then releases the lane's strategy and calls
  // released(k, lane).
  bool take(std::uint64_t k, std::size_t lane) {
    if (lanes_[lane].next_before_op > k) return false;
    return take_group(k, lane);
  }
  void released(std::uint64_t k, std::size_t lane);
  // After operation k of `lane`: its upstream calls since take() against the rest of the group.
  void served(std::uint64_t k, std::size_t lane) {
    LaneState& state = lanes_[lane];
    if (state.rest.empty() && state.log.empty()) return;
    serve_group(k, lane);
  }

  // The lane's call log, for CountingUpstream::log_calls (null when not comparing).
  std::vector<UpstreamCall>* log(std::size_t lane) {
    return compare_ ? &lanes_[lane].log : nullptr;
  }
  std::uint64_t empty_caches() const { return empty_caches_; }
  // Null when not comparing.
  std::optional<Fidelity> fidelity() const;

 private:
  static constexpr std::uint64_t kNone = std::numeric_limits<std::uint64_t>::max();
  struct LaneState {
    std::size_t cursor = 0;  // the lane's next call in trace.segment_calls
    std::uint64_t next_before_op = kNone;
    std::vector<std::size_t> lead;  // the group's frees before its first allocation
    std::vector<std::size_t> rest;  // the rest of the group
    std::vector<UpstreamCall> log;
  };
  // A place of the replay where recorded and model calls are held against each other.
  struct Point {
    std::uint64_t op;
    std::size_t lane;
    bool empty_cache;
  };

  std::size_t lane_of(const SegmentCall& call) const { return lane_of_origin_[call.origin]; }
  void advance(std::size_t lane);
  bool take_group(std::uint64_t k, std::size_t lane);
  void serve_group(std::uint64_t k, std::size_t lane);
  void hold(const Point& point, const std::vector<std::size_t>& recorded,
            const std::vector<UpstreamCall>& model);
  // Where the calls of one sort (frees, or allocations) first differ at a point: the recorded
  // call (null: none) against the strategy's call of `model` bytes (nullopt: none).
  struct Mismatch {
    bool frees = false;
    const SegmentCall* recorded = nullptr;
    std::optional<std::uint64_t> model;
    bool after_others = false;  // allocations: some were paired before this one
  };
  // Notes the first divergence. `model_some` and `recorded_some`: each side made calls of the
  // mismatch's sort at this point.
  void diverge(const Point& point, const Mismatch& mismatch, bool model_some, bool recorded_some);

  const ResolvedTrace& trace_;
  const std::vector<std::size_t>& lane_of_origin_;
  std::vector<DeviceId> lane_devices_;
  bool compare_;
  std::vector<LaneState> lanes_;
  std::vector<std::size_t> next_on_lane_;  // by call: its lane's next call (size(): none)
  std::uint64_t empty_caches_ = 0;
  Fidelity fidelity_;
  // Scratch for hold(), kept between calls.
  std::vector<std::size_t> recorded_allocs_, recorded_frees_;
  std::vector<std::uint64_t> model_allocs_, model_frees_, recorded_free_sizes_;
};

}  // namespace alloclab
