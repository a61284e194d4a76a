#include "alloclab/replay/timing.hpp"

namespace alloclab {

std::map<std::string, LatencySummary> ReplayLatencies::summaries(bool with_touch) const {
  std::map<std::string, LatencySummary> out = {
      {"strategy_allocate", strategy_allocate.summary()},
      {"strategy_deallocate", strategy_deallocate.summary()},
      {"upstream_allocate", upstream_allocate.summary()},
      {"upstream_deallocate", upstream_deallocate.summary()}};
  if (with_touch) out["touch"] = touch.summary();
  return out;
}

void touch_pages(std::uint64_t address, std::uint64_t bytes) {
  if (bytes == 0) return;
  constexpr std::uint64_t kPage = 4096;
  // The first byte, then the start of every later page inside the range. volatile: the writes
  // must happen even though nothing reads them.
  auto* first = reinterpret_cast<volatile unsigned char*>(static_cast<std::uintptr_t>(address));
  *first = 1;
  const std::uint64_t end = address + bytes;
  for (std::uint64_t page = (address / kPage + 1) * kPage; page < end; page += kPage)
    *reinterpret_cast<volatile unsigned char*>(static_cast<std::uintptr_t>(page)) = 1;
}

}  // namespace alloclab
