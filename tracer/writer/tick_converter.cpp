#include "tick_converter.hpp"

#include "alloclab/protocol/ticks.hpp"

namespace alloclab::writer {

TickConverter::TickConverter(const protocol::RecorderSettings& settings)
    : tsc_(settings.ticks_are_tsc),
      anchor_ticks_raw_(settings.anchor_ticks),
      anchor_ns_raw_(settings.anchor_ns),
      anchor_ticks_(static_cast<double>(settings.anchor_ticks)),
      anchor_ns_(static_cast<double>(settings.anchor_ns)),
      keep_mask_(~(settings.time_resolution_ns - 1)) {}

void TickConverter::calibrate() {
  if (!tsc_) return;
  std::uint64_t ticks = 0, ns = 0;
  protocol::read_tick_pair(ticks, ns);
  // Below ~1 ms the two clocks' read jitter would dominate; keep the previous rate (or wait for
  // the next call) unless there is nothing better.
  if (ns - anchor_ns_raw_ < 1'000'000 && calibrated_) return;
  if (ticks > anchor_ticks_raw_ && ns > anchor_ns_raw_) {
    ns_per_tick_ =
        static_cast<double>(ns - anchor_ns_raw_) / static_cast<double>(ticks - anchor_ticks_raw_);
    calibrated_ = true;
  }
}

}  // namespace alloclab::writer
