#pragma once
// Turns a record's ticks into CLOCK_MONOTONIC nanoseconds (alloclab/protocol/ticks.hpp).
#include <cstdint>

#include "alloclab/protocol/recorder_memory.hpp"

namespace alloclab::writer {

class TickConverter {
 public:
  explicit TickConverter(const protocol::RecorderSettings& settings);

  // Refines the TSC rate over the whole time since the recorder's anchor, so the estimate
  // improves as the trace grows and successive calibrations differ by far less than the jitter
  // of reading the two clocks. Before each batch.
  void calibrate();
  // Nanoseconds rounded down to the resolution.
  std::uint64_t to_ns(std::uint64_t ticks) const {
    if (!tsc_) return ticks & keep_mask_;
    const double ns = anchor_ns_ + (static_cast<double>(ticks) - anchor_ticks_) * ns_per_tick_;
    return ns <= 0 ? 0 : static_cast<std::uint64_t>(ns) & keep_mask_;
  }

 private:
  bool tsc_;
  std::uint64_t anchor_ticks_raw_;
  std::uint64_t anchor_ns_raw_;
  double anchor_ticks_;
  double anchor_ns_;
  double ns_per_tick_ = 1.0;
  bool calibrated_ = false;
  std::uint64_t keep_mask_;
};

}  // namespace alloclab::writer
