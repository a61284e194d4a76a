#include "clock.hpp"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstring>

namespace alloclab::preload {

bool g_ticks_are_tsc = false;

namespace {

std::uint64_t g_resolution_ns = 64;
std::uint64_t g_anchor_ticks = 0;
std::uint64_t g_anchor_ns = 0;

// What the kernel trusts: it only uses the TSC for CLOCK_MONOTONIC when the TSC is invariant
// and consistent across CPUs. Read with system calls: this runs before malloc may be used.
bool kernel_clock_is_tsc() {
  const int fd =
      ::open("/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY);
  if (fd < 0) return false;
  char text[32] = {};
  const ssize_t n = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  return n >= 3 && std::strncmp(text, "tsc", 3) == 0 && (n == 3 || text[3] == '\n');
}

// A (ticks, ns) pair read as close together as possible: the tightest of a few tries.
void read_pair(std::uint64_t& ticks, std::uint64_t& ns) {
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

}  // namespace

std::uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);  // vDSO: no system call
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

std::uint64_t time_resolution_ns() {
  return g_resolution_ns;
}

void clock_init(const char* resolution_text) {
  if (resolution_text && *resolution_text) {
    std::uint64_t v = 0;
    for (const char* p = resolution_text; *p >= '0' && *p <= '9' && v < (1ull << 40); ++p)
      v = v * 10 + static_cast<std::uint64_t>(*p - '0');
    std::uint64_t power = 1;  // the largest power of two not above the request
    while (power * 2 <= v) power *= 2;
    g_resolution_ns = power;
  }
#if defined(__x86_64__)
  g_ticks_are_tsc = kernel_clock_is_tsc();
#endif
  if (g_ticks_are_tsc) read_pair(g_anchor_ticks, g_anchor_ns);
}

void TickConverter::calibrate() {
  keep_mask_ = ~(g_resolution_ns - 1);
  tsc_ = g_ticks_are_tsc;
  if (!tsc_) return;
  anchor_ticks_ = static_cast<double>(g_anchor_ticks);
  anchor_ns_ = static_cast<double>(g_anchor_ns);
  std::uint64_t ticks = 0, ns = 0;
  read_pair(ticks, ns);
  // Below ~1 ms the two clocks' read jitter would dominate; keep the previous rate (or wait for
  // the next call) unless there is nothing better.
  if (ns - g_anchor_ns < 1'000'000 && calibrated_) return;
  if (ticks > g_anchor_ticks && ns > g_anchor_ns) {
    ns_per_tick_ =
        static_cast<double>(ns - g_anchor_ns) / static_cast<double>(ticks - g_anchor_ticks);
    calibrated_ = true;
  }
}

}  // namespace alloclab::preload
