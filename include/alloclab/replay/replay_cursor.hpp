#pragma once
// A simulated replay that goes as far as it is asked and stops there, so that a strategy's state
// can be looked at between operations (the GUI's segments view). It is replay_trace's own
// replayer: one strategy per device, a recorded program's empty_cache calls replayed as releases,
// ReplayOptions::memory_limit, so the state after operation k is the one a report's replay of the
// same trace and options had there.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "alloclab/format/resolve.hpp"
#include "alloclab/replay/metrics.hpp"
#include "alloclab/replay/sim_replay.hpp"
#include "alloclab/strategies/strategy.hpp"

namespace alloclab {

class ReplayCursor {
 public:
  // Throws as replay_trace does for a bad spec, and std::invalid_argument for an upstream other
  // than "sim". `trace` must outlive the cursor. Progress and cancel are ignored: a cursor does
  // as much as each advance_to asks, which the caller sizes.
  ReplayCursor(const ResolvedTrace& trace, std::string_view spec, ReplayOptions options = {});
  ~ReplayCursor();
  ReplayCursor(const ReplayCursor&) = delete;
  ReplayCursor& operator=(const ReplayCursor&) = delete;

  // Operations replayed so far: the state is the one after operation position() - 1.
  std::uint64_t position() const;
  // Replays forward until position() is min(op, trace.ops.size()); never goes back. With
  // options.stop_at_first_failure it also stops after the first failed request, as replay_trace.
  void advance_to(std::uint64_t op);

  // One strategy per device of the trace (one lane for a trace with no device), in device order.
  std::size_t lane_count() const;
  DeviceId lane_device(std::size_t lane) const;
  const Strategy& lane_strategy(std::size_t lane) const;
  // Over every lane: requested bytes of the live allocations, bytes held from the upstreams.
  std::uint64_t live_bytes() const;
  std::uint64_t reserved_bytes() const;
  // The first failed request among the operations replayed so far.
  const std::optional<FirstFailure>& first_failure() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace alloclab
