#include "alloclab/format/trim.hpp"

#include <map>
#include <set>
#include <utility>
#include <vector>

#include "alloclab/format/start_state.hpp"

namespace alloclab {
namespace {

// Copies into `out` only the stacks that `kept_ids` name and the frames those stacks use, in
// their original order, and sets the kept events' ids renumbered to match: the stacks of the
// dropped events (most of a recording: the interpreter's start-up) would otherwise stay in the
// file, unreachable. Every kept event's stack resolves to the same frames as before.
void keep_used_stacks(const Trace& trace,
                      const std::vector<std::pair<std::uint64_t, std::uint32_t>>& kept_ids,
                      Trace& out, TrimStats& s) {
  constexpr std::uint32_t unused = 0xFFFFFFFFu;
  std::vector<std::uint32_t> new_id(trace.stacks().size() + 1, 0);  // 0: not kept
  for (const auto& [event, id] : kept_ids) new_id[id] = 1;
  std::vector<std::uint32_t> new_frame(trace.frames().size(), unused);
  for (std::uint32_t id = 1; id < new_id.size(); ++id)
    if (new_id[id])
      for (std::uint32_t f : trace.stacks()[id - 1]) new_frame[f] = 0;
  for (std::uint32_t f = 0; f < new_frame.size(); ++f)
    if (new_frame[f] != unused) new_frame[f] = out.add_frame(trace.frames()[f]);
  for (std::uint32_t id = 1; id < new_id.size(); ++id) {
    if (!new_id[id]) continue;
    std::vector<std::uint32_t> frames = trace.stacks()[id - 1];
    for (std::uint32_t& f : frames) f = new_frame[f];
    new_id[id] = out.add_stack(std::move(frames));
  }
  for (const auto& [event, id] : kept_ids) out.set_stack_id(event, new_id[id]);
  s.dropped_stacks = trace.stacks().size() - out.stacks().size();
  s.dropped_frames = trace.frames().size() - out.frames().size();
}

}  // namespace

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
  // (kept event index, stack id in `trace`): set once the kept tables exist.
  std::vector<std::pair<std::uint64_t, std::uint32_t>> kept_ids;
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
    if (trace.has_stacks())
      if (const std::uint32_t id = trace.stack_id(i)) kept_ids.emplace_back(out.size() - 1, id);
  }
  keep_used_stacks(trace, kept_ids, out, s);
  s.kept_events = out.size();
  s.dropped_before = first;
  s.dropped_after = trace.size() - 1 - last;
  out.metadata["trimmed"] = {
      {"to", "runs"},
      {"dropped_before", s.dropped_before},
      {"dropped_after", s.dropped_after},
      {"dropped_frees_of_earlier_blocks", s.dropped_frees_of_earlier_blocks}};
  if (!trace.stacks().empty() || !trace.frames().empty()) {
    out.metadata["trimmed"]["dropped_stacks"] = s.dropped_stacks;
    out.metadata["trimmed"]["dropped_frames"] = s.dropped_frames;
  }
  return out;
}

}  // namespace alloclab
