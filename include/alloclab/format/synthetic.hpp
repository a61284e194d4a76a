#pragma once
// Deterministic synthetic traces shaped like real workloads, for benchmarks, tests and demos
// (the same options give the same trace on every machine: no std distributions are used).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "alloclab/format/trace.hpp"

namespace alloclab {

enum class SyntheticShape {
  cnn,          // identical runs: layer outputs freed after their last use, small temporaries
  transformer,  // runs with a different sequence length each: sizes change from run to run
  random,       // random sizes (log-uniform) and lifetimes, no runs
};

struct SyntheticOptions {
  SyntheticShape shape = SyntheticShape::cnn;
  std::uint64_t runs = 10;
  std::uint64_t seed = 1;
  // Stop once at least this many events were produced (0: run count decides). The last run is
  // always completed, so the trace is never cut mid-run.
  std::uint64_t min_events = 0;
  // Call stacks (0: none): every allocation gets one of `stacks` distinct stacks of
  // `stack_depth` frames. They form a tree, as a program's do: the outer frames are shared by
  // many stacks, the inner ones by few; a few stacks make most of the allocations. The events
  // are the same with or without stacks.
  std::uint32_t stacks = 0;
  std::uint32_t stack_depth = 16;
};

std::optional<SyntheticShape> parse_synthetic_shape(std::string_view name);
std::vector<std::string> synthetic_shape_names();

Trace generate_synthetic(const SyntheticOptions& options);

}  // namespace alloclab
