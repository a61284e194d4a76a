#include "alloclab/format/merge_by_time.hpp"

#include <cstdint>
#include <utility>
#include <vector>

namespace alloclab {

namespace {

// `from`'s frames and stacks appended to `to`'s tables; returns the offset of its stack ids.
std::uint32_t append_stack_tables(const Trace& from, Trace& to) {
  const auto frame_base = static_cast<std::uint32_t>(to.frames().size());
  const auto stack_base = static_cast<std::uint32_t>(to.stacks().size());
  for (const StackFrame& frame : from.frames()) to.add_frame(frame);
  for (std::vector<std::uint32_t> stack : from.stacks()) {
    for (std::uint32_t& f : stack) f += frame_base;
    to.add_stack(std::move(stack));
  }
  return stack_base;
}

}  // namespace

Trace merge_by_time(const Trace& first, const Trace& second) {
  Trace merged;
  merged.reserve(first.size() + second.size());
  // Each trace's stack ids point into its own tables: both tables are kept, the second's after
  // the first's, so that the host allocations' stacks of `record --cuda --cpu` survive.
  const std::uint32_t first_base = append_stack_tables(first, merged);
  const std::uint32_t second_base = append_stack_tables(second, merged);
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < first.size() || j < second.size()) {
    const bool take_first =
        j == second.size() || (i < first.size() && first.time_ns(i) <= second.time_ns(j));
    const Trace& from = take_first ? first : second;
    const std::size_t k = take_first ? i++ : j++;
    merged.push_back(from.event(k));
    if (const std::uint32_t id = from.stack_id(k); id != 0)
      merged.set_stack_id(merged.size() - 1, id + (take_first ? first_base : second_base));
  }
  merged.metadata = first.metadata;
  merged.metadata["merged_trace"] = second.metadata;
  merged.warnings = first.warnings;
  merged.warnings.insert(merged.warnings.end(), second.warnings.begin(), second.warnings.end());
  return merged;
}

}  // namespace alloclab
