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
  touch_host_pages(address, bytes);
}

}  // namespace alloclab
