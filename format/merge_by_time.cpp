#include "alloclab/format/merge_by_time.hpp"

namespace alloclab {

Trace merge_by_time(const Trace& first, const Trace& second) {
  Trace merged;
  merged.reserve(first.size() + second.size());
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < first.size() || j < second.size()) {
    const bool take_first =
        j == second.size() || (i < first.size() && first.time_ns(i) <= second.time_ns(j));
    merged.push_back(take_first ? first.event(i++) : second.event(j++));
  }
  merged.metadata = first.metadata;
  merged.metadata["merged_trace"] = second.metadata;
  merged.warnings = first.warnings;
  merged.warnings.insert(merged.warnings.end(), second.warnings.begin(), second.warnings.end());
  return merged;
}

}  // namespace alloclab
