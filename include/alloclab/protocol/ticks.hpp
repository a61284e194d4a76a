#pragma once
// The recorder's time source, and how its writer turns it into CLOCK_MONOTONIC nanoseconds.
// Reading the TSC costs a few nanoseconds where clock_gettime costs tens, so when the kernel
// itself keeps CLOCK_MONOTONIC on the TSC (clocksource "tsc": invariant and synchronised across
// CPUs, so one clock for every process) records carry raw TSC ticks (RecorderSettings says
// which), and the writer maps them to nanoseconds from a (ticks, ns) pair read at the start and
// pairs it reads itself later.
#include <time.h>

#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace alloclab::protocol {

inline std::uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);  // vDSO: no system call
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

// A (ticks, ns) pair read as close together as possible: the tightest of a few tries.
inline void read_tick_pair(std::uint64_t& ticks, std::uint64_t& ns) {
#if defined(__x86_64__)
  std::uint64_t best = ~std::uint64_t{0};
  for (int i = 0; i < 5; ++i) {
    const std::uint64_t before = __rdtsc();
    const std::uint64_t t = monotonic_ns();
    const std::uint64_t after = __rdtsc();
    if (after - before < best) {
      best = after - before;
      ticks = before + (after - before) / 2;
      ns = t;
    }
  }
#else
  ticks = ns = monotonic_ns();
#endif
}

}  // namespace alloclab::protocol
