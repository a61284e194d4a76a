#include "clock.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>

#include "alloclab/protocol/recorder_memory.hpp"

namespace alloclab::preload {

bool g_ticks_are_tsc = false;

namespace {

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

}  // namespace

void clock_init(const char* resolution_text, protocol::RecorderSettings& settings) {
  if (resolution_text && *resolution_text) {
    std::uint64_t v = 0;
    for (const char* p = resolution_text; *p >= '0' && *p <= '9' && v < (1ull << 40); ++p)
      v = v * 10 + static_cast<std::uint64_t>(*p - '0');
    std::uint64_t power = 1;  // the largest power of two not above the request
    while (power * 2 <= v) power *= 2;
    settings.time_resolution_ns = power;
  }
#if defined(__x86_64__)
  g_ticks_are_tsc = kernel_clock_is_tsc();
#endif
  settings.ticks_are_tsc = g_ticks_are_tsc;
  if (g_ticks_are_tsc) protocol::read_tick_pair(settings.anchor_ticks, settings.anchor_ns);
}

}  // namespace alloclab::preload
