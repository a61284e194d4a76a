#include "alloclab/format/trim.hpp"

#include <map>
#include <set>

#include "alloclab/format/start_state.hpp"

namespace alloclab {

Trace trim_to_runs(const Trace& trace, TrimStats* stats) {
  TrimStats local;
  TrimStats& s = stats ? *stats : local;
  s = TrimStats{};
  std::size_t first = trace.size();
  std::size_t last = 0;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    if (trace.segment(i)) continue;
    if (trace.op(i) == Op::run_begin && first == trace.size()) first = i;
    if (trace.op(i) == Op::run_end) last = i;
  }
  if (first == trace.size() || last < first) {
    s.kept_events = trace.size();
    return trace;
  }

  // Addresses live when the window opens, per device: their frees inside it are dropped until
  // the address is allocated again inside the window.
  std::map<DeviceId, std::set<std::uint64_t>> earlier;
  // The state at the first event no longer applies to the window; its blocks count as earlier.
  if (const std::optional<StartState> start = start_state_of(trace))
    for (const StartBlock& b : start->blocks) earlier[b.device].insert(b.address);
  for (std::size_t i = 0; i < first; ++i) {
    if (trace.segment(i)) continue;
    auto& live = earlier[trace.device(i)];
    if (trace.op(i) == Op::alloc && trace.address(i) != 0) live.insert(trace.address(i));
    if (trace.op(i) == Op::free) live.erase(trace.address(i));
  }

  Trace out;
  out.metadata = trace.metadata;
  out.metadata.erase(kStartStateKey);
  out.reserve(last - first + 1);
  for (const StackFrame& frame : trace.frames()) out.add_frame(frame);
  for (const auto& stack : trace.stacks()) out.add_stack(stack);
  for (std::size_t i = first; i <= last; ++i) {
    if (!trace.segment(i) && (trace.op(i) == Op::alloc || trace.op(i) == Op::free)) {
      auto it = earlier.find(trace.device(i));
      if (it != earlier.end() && it->second.erase(trace.address(i)) == 1 &&
          trace.op(i) == Op::free) {
        ++s.dropped_frees_of_earlier_blocks;
        continue;
      }
    }
    out.push_back(trace.event(i));
    if (trace.has_stacks()) out.set_stack_id(out.size() - 1, trace.stack_id(i));
  }
  s.kept_events = out.size();
  s.dropped_before = first;
  s.dropped_after = trace.size() - 1 - last;
  out.metadata["trimmed"] = {
      {"to", "runs"},
      {"dropped_before", s.dropped_before},
      {"dropped_after", s.dropped_after},
      {"dropped_frees_of_earlier_blocks", s.dropped_frees_of_earlier_blocks}};
  return out;
}

}  // namespace alloclab
