#pragma once
// Cutting a trace down to the part that matters: its runs.
#include <cstdint>

#include "alloclab/format/trace.hpp"

namespace alloclab {

struct TrimStats {
  std::uint64_t kept_events = 0;
  std::uint64_t dropped_before = 0;  // events before the first run_begin
  std::uint64_t dropped_after = 0;   // events after the last run_end
  // Frees inside the window of blocks allocated before it: dropped, since the trimmed trace
  // never saw their allocation (keeping them would make every one an anomaly).
  std::uint64_t dropped_frees_of_earlier_blocks = 0;
  // Call stacks that no kept event has, and frames that no kept stack uses: dropped, and the
  // rest renumbered.
  std::uint64_t dropped_stacks = 0;
  std::uint64_t dropped_frames = 0;
};

// The events from the first run_begin to the last run_end, both included, minus frees of blocks
// allocated before the first run_begin, with only the stacks and frames the kept events use. A
// trace without run markers is returned unchanged.
// Metadata is kept, with a "trimmed" note of the numbers above.
Trace trim_to_runs(const Trace& trace, TrimStats* stats = nullptr);

}  // namespace alloclab
