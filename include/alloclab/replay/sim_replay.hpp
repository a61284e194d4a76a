#pragma once
// Deterministic simulation replay: a resolved trace against one strategy spec on the simulated
// upstream. Same trace and spec, same counters, on every run and machine.
#include <atomic>
#include <cstdint>
#include <optional>
#include <string_view>

#include "alloclab/replay/metrics.hpp"
#include "alloclab/trace/resolve.hpp"

namespace alloclab {

struct ReplayOptions {
  std::size_t max_series_points = 2000;
  // Emulates a smaller device: the simulated upstream of each device fails beyond this many
  // reserved bytes.
  std::optional<std::uint64_t> memory_limit;
  // Checks after every operation that reserved >= live and that no two live blocks overlap;
  // throws std::logic_error naming the operation otherwise. Slow: for tests.
  bool check_invariants = false;
  // Advanced by the number of operations replayed, in steps, for a progress display.
  std::atomic<std::uint64_t>* progress = nullptr;
  // When set to true, the replay stops early and sets StrategyResult-level `interrupted`.
  const std::atomic<bool>* cancel = nullptr;
};

struct ReplayOutcome {
  StrategyResult result;
  bool interrupted = false;
};

// Throws SpecError for a bad spec.
ReplayOutcome replay_sim(const ResolvedTrace& trace, std::string_view spec,
                         const ReplayOptions& options = {});

}  // namespace alloclab
