#pragma once
// The hot path's time source. Reading the TSC costs a few nanoseconds where clock_gettime costs
// tens, so when the kernel itself keeps CLOCK_MONOTONIC on the TSC (clocksource "tsc": invariant
// and synchronised across CPUs) records carry raw TSC ticks and the writer thread converts them
// to CLOCK_MONOTONIC nanoseconds. Elsewhere ticks are CLOCK_MONOTONIC nanoseconds already.
#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace alloclab::preload {

extern bool g_ticks_are_tsc;

// Decides the time source and takes the conversion's anchor. Before the tracer is enabled.
// `resolution_text` (ALLOCLAB_TIME_RESOLUTION): timestamps are rounded down to a multiple of
// this many nanoseconds, a power of two (default 64, see time_resolution_ns).
void clock_init(const char* resolution_text);
// Bits below the resolution are mostly the jitter of the allocator and the tracer themselves,
// and they cost about one byte per event on disk; 64 ns keeps every gap that a replay with
// recorded timing or a lifetime histogram can use.
std::uint64_t time_resolution_ns();

std::uint64_t monotonic_ns();

inline std::uint64_t now_ticks() {
#if defined(__x86_64__)
  if (g_ticks_are_tsc) return __rdtsc();
#endif
  return monotonic_ns();
}

// Writer side: maps ticks to nanoseconds. calibrate() refines the TSC rate over the whole time
// since clock_init(), so the estimate improves as the trace grows and successive calibrations
// differ by far less than the jitter of reading the two clocks.
class TickConverter {
 public:
  // Also takes the anchor and resolution: to_ns then reads members only, inline, for each of
  // millions of events per second.
  void calibrate();
  // Nanoseconds rounded down to the resolution.
  std::uint64_t to_ns(std::uint64_t ticks) const {
    if (!tsc_) return ticks & keep_mask_;
    const double ns = anchor_ns_ + (static_cast<double>(ticks) - anchor_ticks_) * ns_per_tick_;
    return ns <= 0 ? 0 : static_cast<std::uint64_t>(ns) & keep_mask_;
  }

 private:
  bool tsc_ = false;
  double anchor_ticks_ = 0;
  double anchor_ns_ = 0;
  double ns_per_tick_ = 1.0;
  bool calibrated_ = false;
  std::uint64_t keep_mask_ = ~std::uint64_t{0};
};

}  // namespace alloclab::preload
