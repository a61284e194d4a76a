#pragma once
// How far a strategy's upstream calls are from those of the allocator a trace recorded (a PyTorch
// snapshot's segment_alloc and segment_free): the `fidelity` section of a simulated replay of a
// trace that carries them. docs/strategies.md ("Fidelity") gives the matching rule.
#include <cstdint>
#include <optional>
#include <string>

#include "alloclab/format/event.hpp"

namespace alloclab {

// Where a strategy first parts from the recorded allocator.
struct FidelityDivergence {
  // The point of the replay: the operation being served ("alloc", "free", "run_begin",
  // "run_end"), the program's empty_cache replayed just before that operation ("empty_cache"),
  // or the recorded calls after the last operation ("end").
  std::string at;
  std::uint64_t op = 0;  // index into the replayed operations (their count for "end")
  // The trace event: the recorded call's where the recording has one at this place, otherwise
  // the operation's (unknown for "end").
  std::optional<std::uint64_t> event;
  std::uint64_t time_ns = 0;
  std::uint64_t request_size = 0;  // the requested bytes of an "alloc"; 0 otherwise
  std::uint64_t stream = 0;        // the operation's stream (the recorded call's, for no operation)
  DeviceId device = cpu_device;
  bool frees = false;  // the calls that differ: frees (segment_free, unmap); otherwise allocations
  // The recorded call at the place they differ ("segment_alloc", ...; empty: none) and its size.
  std::string recorded_action;
  std::optional<std::uint64_t> recorded_size;
  std::optional<std::uint64_t> model_size;  // the strategy's call there (nullopt: none)
  // One line: "recorded segment_alloc of 20.00 MiB, model allocated nothing".
  std::string what;
  bool operator==(const FidelityDivergence&) const = default;
};

// The recorded allocator's upstream calls against the strategy's, over the whole replay (maps
// counted with allocations, unmaps with frees).
struct Fidelity {
  std::uint64_t recorded_allocs = 0;
  std::uint64_t recorded_alloc_bytes = 0;
  std::uint64_t recorded_frees = 0;
  std::uint64_t recorded_free_bytes = 0;
  // The strategy's upstream calls while serving operations and replaying empty_caches: in
  // simulation exactly upstream_allocs and upstream_frees (the final clean-up is not compared).
  std::uint64_t model_allocs = 0;
  std::uint64_t model_alloc_bytes = 0;
  std::uint64_t model_frees = 0;
  std::uint64_t model_free_bytes = 0;
  // Calls of the strategy paired with a recorded call of the same place and size.
  std::uint64_t matched_allocs = 0;
  std::uint64_t matched_frees = 0;
  // Places (operations, and empty_caches) where the calls differ.
  std::uint64_t diverging_points = 0;
  std::optional<FidelityDivergence> first_divergence;

  bool all_matched() const { return !first_divergence.has_value(); }
  bool operator==(const Fidelity&) const = default;
};

}  // namespace alloclab
