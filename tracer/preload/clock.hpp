#pragma once
// The hot path's time source (alloclab/protocol/ticks.hpp says which, and why).
#include <cstdint>

#include "alloclab/protocol/recorder_memory.hpp"
#include "alloclab/protocol/ticks.hpp"

namespace alloclab::preload {

extern bool g_ticks_are_tsc;

// Decides the time source and takes the writer's anchor pair into `settings`. Before the tracer
// is enabled. `resolution_text` (ALLOCLAB_TIME_RESOLUTION): timestamps are rounded down to a
// multiple of this many nanoseconds, a power of two (default 64: bits below it are mostly the
// jitter of the allocator and the tracer themselves, and they cost about one byte per event on
// disk; 64 ns keeps every gap that a replay with recorded timing or a lifetime histogram uses).
void clock_init(const char* resolution_text, protocol::RecorderSettings& settings);

inline std::uint64_t now_ticks() {
#if defined(__x86_64__)
  if (g_ticks_are_tsc) return __rdtsc();
#endif
  return protocol::monotonic_ns();
}

}  // namespace alloclab::preload
