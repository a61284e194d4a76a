#include "alloclab/format/summary.hpp"

#include <algorithm>
#include <bit>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "alloclab/format/address_map.hpp"
#include "saturating.hpp"

namespace alloclab {
namespace {

using detail::add_saturating;
using detail::saturated;
using detail::WideBytes;

unsigned log2_bucket(std::uint64_t value) {
  return value == 0 ? 0u : static_cast<unsigned>(std::bit_width(value) - 1);
}

std::vector<SizeCount> top_sizes(const std::unordered_map<std::uint64_t, std::uint64_t>& counts,
                                 bool by_bytes) {
  std::vector<SizeCount> all;
  all.reserve(counts.size());
  for (const auto& [size, count] : counts)
    all.push_back({size, count, detail::multiply_saturating(size, count)});
  auto key = [by_bytes](const SizeCount& s) { return by_bytes ? s.bytes : s.count; };
  const std::size_t keep = std::min<std::size_t>(10, all.size());
  std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(keep), all.end(),
                    [&](const SizeCount& a, const SizeCount& b) {
                      return key(a) != key(b) ? key(a) > key(b) : a.size < b.size;
                    });
  all.resize(keep);
  return all;
}

void summarize_origins(const std::vector<Origin>& origins, TraceSummary& s) {
  std::set<std::uint64_t> threads;
  std::set<DeviceId> devices;
  std::set<std::pair<DeviceId, std::uint64_t>> streams;
  std::set<std::uint64_t> pools;
  for (const Origin& o : origins) {
    threads.insert(o.thread);
    devices.insert(o.device);
    streams.insert({o.device, o.stream});
    if (o.pool != 0) pools.insert(o.pool);
  }
  s.pools = pools.size();
  s.threads = threads.size();
  for (DeviceId d : devices) s.devices.push_back(device_name(d));
  s.streams = streams.size();
}

void summarize_ops(const ResolvedTrace& r, TraceSummary& s) {
  std::unordered_map<std::uint64_t, std::uint64_t> size_counts;
  // The start state's blocks were allocated before the trace: live from the start, not counted
  // among its allocations.
  const std::uint32_t start_blocks = r.start_blocks();
  for (std::size_t id = start_blocks; id < r.alloc_size.size(); ++id) {
    const std::uint64_t size = r.alloc_size[id];
    add_saturating(s.bytes_requested, size);
    ++s.size_histogram[log2_bucket(size)];
    ++size_counts[size];
  }
  s.allocations = r.alloc_size.size() - start_blocks;
  s.top_sizes_by_count = top_sizes(size_counts, false);
  s.top_sizes_by_bytes = top_sizes(size_counts, true);

  WideBytes live = 0, peak = 0;
  RunSummary* run = nullptr;
  // Each origin's slot in `per_device` (origins are few, devices fewer).
  std::map<DeviceId, std::size_t> slot_of_device;
  for (const Origin& o : r.origins) slot_of_device.emplace(o.device, 0);
  std::vector<DeviceSummary> per_device;
  for (auto& [device, slot] : slot_of_device) {
    slot = per_device.size();
    per_device.push_back(DeviceSummary{device_name(device)});
  }
  std::vector<std::size_t> slot_of_origin;
  for (const Origin& o : r.origins) slot_of_origin.push_back(slot_of_device[o.device]);
  std::vector<WideBytes> live_on(per_device.size(), 0), peak_on(per_device.size(), 0);
  const auto slot_of = [&](std::uint32_t id) { return slot_of_origin[r.alloc_origin[id]]; };
  for (std::uint32_t id = 0; id < start_blocks; ++id) {
    live += r.alloc_size[id];
    live_on[slot_of(id)] += r.alloc_size[id];
  }
  peak = live;
  s.peak_live_bytes = saturated(live);
  for (std::size_t slot = 0; slot < per_device.size(); ++slot) {
    peak_on[slot] = live_on[slot];
    per_device[slot].peak_live_bytes = saturated(live_on[slot]);
  }
  // Allocation time of each live allocation, by id: lifetimes without a time per allocation of
  // the whole trace.
  AddressMap<std::uint64_t> alloc_time;
  for (std::size_t k = 0; k < r.ops.size(); ++k) {
    const ResolvedOp& op = r.ops[k];
    switch (op.op) {
      case ReplayOp::alloc: {
        alloc_time.insert_or_assign(op.id, r.op_time_ns[k]);
        live += r.alloc_size[op.id];
        const std::size_t slot = slot_of(op.id);
        DeviceSummary& d = per_device[slot];
        ++d.allocations;
        add_saturating(d.bytes_requested, r.alloc_size[op.id]);
        live_on[slot] += r.alloc_size[op.id];
        if (live_on[slot] > peak_on[slot]) {
          peak_on[slot] = live_on[slot];
          d.peak_live_bytes = saturated(live_on[slot]);
          d.peak_live_time_ns = r.op_time_ns[k];
        }
        if (run) {
          ++run->allocations;
          add_saturating(run->bytes_requested, r.alloc_size[op.id]);
        }
        break;
      }
      case ReplayOp::free: {
        // resolve() frees an id once, after its alloc; a hand-made trace may not.
        const std::optional<std::uint64_t> begin = alloc_time.take(op.id);
        const std::uint64_t end = r.op_time_ns[k];
        ++s.frees;
        if (begin) ++s.lifetime_histogram[log2_bucket(end > *begin ? end - *begin : 0)];
        live -= r.alloc_size[op.id];
        const std::size_t slot = slot_of(op.id);
        ++per_device[slot].frees;
        live_on[slot] -= r.alloc_size[op.id];
        if (run) ++run->frees;
        break;
      }
      case ReplayOp::run_begin: {
        const RunInfo& info = r.runs[op.id];
        s.runs.push_back(RunSummary{info.label, 0, 0, 0, saturated(live),
                                    info.end_time_ns - info.begin_time_ns,
                                    r.implicit_run || info.end_op < r.ops.size()});
        run = &s.runs.back();
        break;
      }
      case ReplayOp::run_end:
        run = nullptr;
        break;
    }
    if (live > peak) {
      peak = live;
      s.peak_live_bytes = saturated(live);
      s.peak_live_time_ns = r.op_time_ns[k];
    }
    if (run) run->peak_live_bytes = std::max(run->peak_live_bytes, saturated(live));
  }
  for (DeviceSummary& d : per_device)
    if (d.allocations > 0) s.by_device.push_back(std::move(d));
}

nlohmann::json histogram_json(const std::array<std::uint64_t, 65>& buckets) {
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t k = 0; k < buckets.size(); ++k)
    if (buckets[k] != 0)
      out.push_back({{"from", k == 0 ? 0 : std::uint64_t{1} << k},
                     {"to", k >= 63 ? std::numeric_limits<std::uint64_t>::max()
                                    : (std::uint64_t{1} << (k + 1)) - 1},
                     {"count", buckets[k]}});
  return out;
}

nlohmann::json sizes_json(const std::vector<SizeCount>& sizes) {
  nlohmann::json out = nlohmann::json::array();
  for (const SizeCount& s : sizes)
    out.push_back({{"size", s.size}, {"count", s.count}, {"bytes", s.bytes}});
  return out;
}

}  // namespace

void EventTally::add(const Trace& part) {
  events_ += part.size();
  for (std::size_t i = 0; i < part.size(); ++i) {
    ++by_op_[static_cast<std::size_t>(part.op(i))];
    if (part.segment(i)) ++segment_events_;
    first_time_ns_ = std::min(first_time_ns_, part.time_ns(i));
    last_time_ns_ = std::max(last_time_ns_, part.time_ns(i));
  }
}

TraceSummary summarize(const Trace& trace, const ResolvedTrace& resolved) {
  EventTally events;
  events.add(trace);
  return summarize(events, resolved, trace.memory_bytes(), trace.warnings);
}

TraceSummary summarize(const EventTally& events, const ResolvedTrace& resolved,
                       std::uint64_t memory_bytes, std::vector<std::string> warnings) {
  TraceSummary s;
  s.events = events.events_;
  s.events_by_op = events.by_op_;
  s.segment_events = events.segment_events_;
  if (events.events_ > 0) {
    s.first_time_ns = events.first_time_ns_;
    s.duration_ns = events.last_time_ns_ - events.first_time_ns_;
  }
  summarize_origins(resolved.origins, s);
  summarize_ops(resolved, s);
  s.anomalies = resolved.anomalies;
  s.below_min_size = resolved.below_min_size;
  s.first_anomalies = resolved.first_anomalies;
  s.implicit_run = resolved.implicit_run;
  s.segment_allocs = resolved.segment_allocs;
  s.segment_frees = resolved.segment_frees;
  s.segment_bytes_allocated = resolved.segment_bytes_allocated;
  if (s.segment_events > 0 && s.allocations > 0)
    s.recorded_hit_rate = 1.0 - static_cast<double>(std::min(s.segment_allocs, s.allocations)) /
                                    static_cast<double>(s.allocations);
  if (const std::optional<StartState>& start = resolved.start_state) {
    StartStateSummary& t = s.start_state.emplace();
    t.segments = start->segments.size();
    t.segment_bytes = start->segment_bytes();
    t.blocks = start->blocks.size();
    t.block_bytes = start->block_bytes();
    for (const StartBlock& b : start->blocks) t.blocks_without_capacity += !b.capacity;
    t.guessed_bytes = start->guessed_bytes;
    t.gaps = start->gaps;
  }
  s.memory_bytes = memory_bytes;
  s.warnings = std::move(warnings);
  return s;
}

nlohmann::json to_json(const Anomalies& a) {
  return {{"free_unknown", a.free_unknown},
          {"inherited_frees", a.inherited_frees},
          {"double_free", a.double_free},
          {"alloc_over_live", a.alloc_over_live},
          {"free_null", a.free_null},
          {"failed_allocs", a.failed_allocs},
          {"nested_run_begin", a.nested_run_begin},
          {"run_end_outside_run", a.run_end_outside_run},
          {"unterminated_runs", a.unterminated_runs},
          {"leaks", a.leaks},
          {"leaked_bytes", a.leaked_bytes},
          {"total", a.total()}};
}

nlohmann::json to_json(const AnomalyAt& a) {
  return {{"kind", json_key(a.kind)}, {"event", a.event},   {"time_ns", a.time_ns},
          {"address", a.address},     {"thread", a.thread}, {"device", device_name(a.device)}};
}

nlohmann::json to_json(const RunSummary& r) {
  return {{"label", r.label},
          {"allocations", r.allocations},
          {"frees", r.frees},
          {"bytes_requested", r.bytes_requested},
          {"peak_live_bytes", r.peak_live_bytes},
          {"duration_ns", r.duration_ns},
          {"ended", r.ended}};
}

nlohmann::json to_json(const TraceSummary& s, bool with_runs) {
  nlohmann::json by_op = nlohmann::json::object();
  for (int op = 0; op < op_count; ++op)
    by_op[std::string(to_string(static_cast<Op>(op)))] =
        s.events_by_op[static_cast<std::size_t>(op)];
  nlohmann::json runs = nlohmann::json::array();
  if (with_runs)
    for (const RunSummary& r : s.runs) runs.push_back(to_json(r));
  nlohmann::json first_anomalies = nlohmann::json::array();
  for (const AnomalyAt& a : s.first_anomalies) first_anomalies.push_back(to_json(a));
  nlohmann::json by_device = nlohmann::json::array();
  for (const DeviceSummary& d : s.by_device)
    by_device.push_back({{"device", d.device},
                         {"allocations", d.allocations},
                         {"frees", d.frees},
                         {"bytes_requested", d.bytes_requested},
                         {"peak_live_bytes", d.peak_live_bytes},
                         {"peak_live_time_ns", d.peak_live_time_ns}});
  nlohmann::json out = {
      {"source", s.source},
      {"events", s.events},
      {"events_by_op", by_op},
      {"segment_events", s.segment_events},
      {"threads", s.threads},
      {"devices", s.devices},
      {"streams", s.streams},
      {"pools", s.pools},
      {"first_time_ns", s.first_time_ns},
      {"duration_ns", s.duration_ns},
      {"allocations", s.allocations},
      {"frees", s.frees},
      {"anomalies", to_json(s.anomalies)},
      {"first_anomalies", first_anomalies},
      {"bytes_requested", s.bytes_requested},
      {"peak_live_bytes", s.peak_live_bytes},
      {"peak_live_time_ns", s.peak_live_time_ns},
      {"by_device", by_device},
      {"size_histogram", histogram_json(s.size_histogram)},
      {"lifetime_histogram_ns", histogram_json(s.lifetime_histogram)},
      {"top_sizes_by_count", sizes_json(s.top_sizes_by_count)},
      {"top_sizes_by_bytes", sizes_json(s.top_sizes_by_bytes)},
      {"implicit_run", s.implicit_run},
      {"runs", runs},
      {"segments",
       {{"allocs", s.segment_allocs},
        {"frees", s.segment_frees},
        {"bytes_allocated", s.segment_bytes_allocated}}},
      {"recorded_hit_rate",
       s.recorded_hit_rate ? nlohmann::json(*s.recorded_hit_rate) : nlohmann::json(nullptr)},
      {"memory_bytes", s.memory_bytes},
      {"memory_bytes_per_event",
       s.events ? static_cast<double>(s.memory_bytes) / static_cast<double>(s.events) : 0.0},
      {"warnings", s.warnings}};
  // Only for a trace resolved with a minimum size: the key says the numbers leave blocks out.
  if (s.below_min_size.min_size > 0)
    out["below_min_size"] = {{"min_size", s.below_min_size.min_size},
                             {"allocations", s.below_min_size.allocations},
                             {"bytes", s.below_min_size.bytes},
                             {"over_aligned", s.below_min_size.over_aligned},
                             {"mappings", s.below_min_size.mappings}};
  if (s.start_state) {
    const StartStateSummary& t = *s.start_state;
    out["start_state"] = {{"segments", t.segments},
                          {"segment_bytes", t.segment_bytes},
                          {"blocks", t.blocks},
                          {"block_bytes", t.block_bytes},
                          {"blocks_without_capacity", t.blocks_without_capacity},
                          {"guessed_bytes", t.guessed_bytes},
                          {"partial", !t.gaps.empty()},
                          {"gaps", t.gaps}};
  } else {
    out["start_state"] = nullptr;
  }
  if (s.file_bytes) {
    out["file_bytes"] = *s.file_bytes;
    out["file_bytes_per_event"] =
        s.events ? static_cast<double>(*s.file_bytes) / static_cast<double>(s.events) : 0.0;
  } else {
    out["file_bytes"] = nullptr;
    out["file_bytes_per_event"] = nullptr;
  }
  return out;
}

}  // namespace alloclab
