#include "alloclab/format/resolve.hpp"

#include <algorithm>
#include <iterator>
#include <limits>
#include <map>
#include <stdexcept>
#include <utility>

#include "alloclab/format/address_map.hpp"
#include "alloclab/format/error.hpp"
#include "saturating.hpp"

namespace alloclab {
namespace {

// Live and recently freed addresses, one pair of maps per device: an address means nothing
// across devices (cuda:0 and cuda:1 can hand out the same one).
struct DeviceAddresses {
  AddressMap<std::uint32_t> live;  // address -> allocation id
  // Addresses freed and not reallocated since (double-free detection), each with the free
  // operation that freed it last, as StreamResolver::Impl::free_op_key says (an in-place realloc
  // marks that free), or no_free_op for a block ResolveOptions::min_size left out.
  AddressMap<std::uint64_t> freed;
  // Live blocks ResolveOptions::min_size left out; the value is unused.
  AddressMap<std::uint32_t> dropped;
};

struct AnomalyNames {
  std::string_view text, key;
  std::uint64_t Anomalies::*counter;
};
constexpr AnomalyNames anomaly_names[] = {
    {"free of unknown address", "free_unknown", &Anomalies::free_unknown},
    {"double free", "double_free", &Anomalies::double_free},
    {"alloc over live", "alloc_over_live", &Anomalies::alloc_over_live},
    {"nested run_begin", "nested_run_begin", &Anomalies::nested_run_begin},
    {"run_end outside run", "run_end_outside_run", &Anomalies::run_end_outside_run},
};

// The counter in Anomalies of each kind.
std::uint64_t Anomalies::*counter_of(AnomalyKind kind) {
  return anomaly_names[static_cast<std::size_t>(kind)].counter;
}

}  // namespace

// Whether the trace has run markers is only known at its end, but an implicit run's run_begin
// must come first: until the first marker, operations go after a placeholder run_begin, which
// the first marker removes and the end of a trace without markers keeps.
class StreamResolver::Impl {
 public:
  Impl(std::uint64_t expected_events, std::string source, const ResolveOptions& options)
      : source_(std::move(source)), options_(options) {
    out_.below_min_size.min_size = options.min_size;
    out_.ops.reserve(expected_events + 2);
    out_.op_time_ns.reserve(expected_events + 2);
    // Upper bounds: only the pages used are ever touched.
    out_.alloc_size.reserve(expected_events);
    out_.alloc_origin.reserve(expected_events);
  }

  void add(const Trace& part) {
    if (!start_read_) take_start_state(part);
    started_at_fork_ = part.metadata.is_object() && part.metadata.contains("image") &&
                       part.metadata["image"] == "fork";
    for (std::size_t i = 0; i < part.size(); ++i) {
      if (markers_ != Markers::some) decide_markers(part, i);
      step(part, i);
    }
    if (!part.empty()) last_time_ = part.time_ns(part.size() - 1);
    events_before_ += part.size();
  }

  ResolvedTrace finish(const std::vector<Origin>& origins) {
    out_.origins = origins;
    give_start_blocks_origins();
    if (markers_ == Markers::none_yet) {
      // The implicit run spans the whole trace and so never ends inside it: what a pool holds
      // at the end is released by the final clean-up, which no metric counts.
      out_.implicit_run = true;
      out_.runs.push_back(RunInfo{std::string(), 0, out_.ops.size(), first_time_, last_time_});
    } else if (in_run_) {
      ++out_.anomalies.unterminated_runs;
      out_.runs.back().end_op = out_.ops.size();
      out_.runs.back().end_time_ns = last_time_;
    }
    for (auto& entry : devices_)
      entry.second.live.for_each([&](std::uint64_t, std::uint32_t id) {
        if (id < out_.start_blocks()) return;  // not an allocation of the trace
        ++out_.anomalies.leaks;
        detail::add_saturating(out_.anomalies.leaked_bytes, out_.alloc_size[id]);
      });
    return std::move(out_);
  }

 private:
  enum class Markers { unknown, none_yet, some };

  // The start state's blocks become allocation ids 0..n-1, live before any operation.
  void take_start_state(const Trace& part) {
    start_read_ = true;
    out_.start_state = start_state_of(part, source_);
    if (!out_.start_state) return;
    for (const StartBlock& b : out_.start_state->blocks) {
      DeviceAddresses& device = addresses(b.device);
      const auto id = static_cast<std::uint32_t>(out_.alloc_size.size());
      if (device.live.find(b.address))
        throw InputError(source_ + ": " + kStartStateKey + ": two blocks at address " +
                         std::to_string(b.address) + " of " + device_name(b.device));
      device.live.insert_or_assign(b.address, id);
      out_.alloc_size.push_back(b.requested);
      out_.alloc_origin.push_back(0);  // set by give_start_blocks_origins
    }
  }

  // A start block belongs to the first origin of its device and stream, or to a new one.
  void give_start_blocks_origins() {
    if (!out_.start_state) return;
    std::map<std::pair<DeviceId, std::uint64_t>, std::uint16_t> origin_of;
    for (std::size_t k = out_.origins.size(); k-- > 0;)
      origin_of[{out_.origins[k].device, out_.origins[k].stream}] = static_cast<std::uint16_t>(k);
    const std::vector<StartBlock>& blocks = out_.start_state->blocks;
    for (std::size_t id = 0; id < blocks.size(); ++id) {
      const auto [it, added] = origin_of.try_emplace({blocks[id].device, blocks[id].stream}, 0);
      if (added) {
        if (out_.origins.size() >= Trace::max_origins)
          throw InputError(source_ + ": " + kStartStateKey + ": more than " +
                           std::to_string(Trace::max_origins) + " devices and streams");
        it->second = static_cast<std::uint16_t>(out_.origins.size());
        out_.origins.push_back(Origin{0, blocks[id].device, blocks[id].stream, 0});
      }
      out_.alloc_origin[id] = it->second;
    }
  }

  void decide_markers(const Trace& part, std::size_t i) {
    const Op op = part.op(i);
    const bool marker = (op == Op::run_begin || op == Op::run_end) && !part.segment(i);
    if (marker) {
      if (markers_ == Markers::none_yet) drop_placeholder_run_begin();
      markers_ = Markers::some;
    } else if (!seen_event_) {
      markers_ = Markers::none_yet;
      emit(ReplayOp::run_begin, 0, part.time_ns(i), events_before_ + i);
    }
    if (!seen_event_) first_time_ = part.time_ns(i);
    seen_event_ = true;
  }

  DeviceAddresses& addresses(DeviceId device) {
    if (last_device_ && last_device_id_ == device) return *last_device_;
    last_device_id_ = device;
    last_device_ = &devices_[device];
    return *last_device_;
  }

  // `event`: the index in the trace of the event the operation replays or is caused by.
  void emit(ReplayOp op, std::uint32_t id, std::uint64_t time, std::uint64_t event) {
    if (out_.ops.empty() || event != last_event_ + 1)
      out_.op_event_breaks.push_back({out_.ops.size(), event});
    last_event_ = event;
    out_.ops.push_back(ResolvedOp{id, op});
    out_.op_time_ns.push_back(time);
  }

  // The first marker of a trace whose first event was not one: the implicit run_begin emitted
  // before it goes, and every later operation moves down by one.
  void drop_placeholder_run_begin() {
    std::vector<ResolvedTrace::OpEventBreak>& breaks = out_.op_event_breaks;
    const std::optional<std::uint64_t> next_event =
        out_.ops.size() > 1 ? out_.event_of_op(1) : std::nullopt;
    breaks.erase(breaks.begin());  // the placeholder's, at operation 0
    for (ResolvedTrace::OpEventBreak& b : breaks) --b.op;
    if (next_event && (breaks.empty() || breaks.front().op != 0))
      breaks.insert(breaks.begin(), {0, *next_event});
    out_.ops.erase(out_.ops.begin());
    out_.op_time_ns.erase(out_.op_time_ns.begin());
    ++ops_dropped_;
    for (SegmentCall& call : out_.segment_calls) --call.before_op;  // all came after operation 0
  }

  void note_segment_call(const Trace& t, std::size_t i, Op op, std::uint64_t event) {
    const bool mapping = t.kind(i) == MemoryKind::vmm;
    const SegmentAction action = op == Op::alloc
                                     ? (mapping ? SegmentAction::map : SegmentAction::alloc)
                                     : (mapping ? SegmentAction::unmap : SegmentAction::free);
    out_.segment_calls.push_back(SegmentCall{out_.ops.size(), event, t.time_ns(i), t.address(i),
                                             t.size_of(i), t.origin_index(i), action});
  }

  void begin_run(std::uint64_t time, std::string_view label, std::uint64_t event) {
    const auto run = static_cast<std::uint32_t>(out_.runs.size());
    out_.runs.push_back(RunInfo{std::string(label), out_.ops.size(), 0, time, 0});
    emit(ReplayOp::run_begin, run, time, event);
    in_run_ = true;
  }

  void end_run(std::uint64_t time, std::uint64_t event) {
    RunInfo& run = out_.runs.back();
    run.end_op = out_.ops.size();
    run.end_time_ns = time;
    emit(ReplayOp::run_end, static_cast<std::uint32_t>(out_.runs.size() - 1), time, event);
    in_run_ = false;
  }

  void free_id(DeviceAddresses& device, std::uint64_t address, std::uint32_t id, std::uint64_t time,
               std::uint64_t event) {
    device.live.erase(address);
    device.freed.insert_or_assign(address, free_op_key(out_.ops.size()));
    emit(ReplayOp::free, id, time, event);
  }

  // What `freed` holds for the free of a block ResolveOptions::min_size left out: no operation.
  static constexpr std::uint64_t no_free_op = ~std::uint64_t{0};
  // A free operation as `freed` keeps it: its index counted from before the placeholder
  // run_begin was dropped, which stays right however many operations follow.
  std::uint64_t free_op_key(std::uint64_t op) const { return op + ops_dropped_; }
  std::uint64_t op_of_key(std::uint64_t key) const { return key - ops_dropped_; }

  // The alloc just emitted, of allocation `id`, is marked realloc_in_place and its address was
  // free: the free that freed it last (`free_key`) is the realloc's own, since an alloc there in
  // between would have made the address live again. Both are marked, so that the replay keeps
  // the block for `id`.
  void keep_for_realloc(std::uint64_t free_key, std::uint32_t id) {
    ResolvedOp& freed = out_.ops[op_of_key(free_key)];
    if (freed.op != ReplayOp::free || freed.has(ResolvedOp::kept_for_realloc)) return;
    freed.flags |= ResolvedOp::kept_for_realloc;
    out_.ops.back().flags |= ResolvedOp::realloc_in_place;
    out_.in_place_reallocs.push_back(InPlaceRealloc{id, freed.id});
  }

  // Counts an anomaly of event i and, among the first, says where it is.
  void note(AnomalyKind kind, const Trace& t, std::size_t i) {
    ++(out_.anomalies.*counter_of(kind));
    if (out_.first_anomalies.size() >= ResolvedTrace::max_listed_anomalies) return;
    out_.first_anomalies.push_back(
        AnomalyAt{kind, events_before_ + i, t.time_ns(i), t.address(i), t.thread(i), t.device(i)});
  }

  void step(const Trace& t, std::size_t i) {
    const Op op = t.op(i);
    const std::uint64_t time = t.time_ns(i);
    const std::uint64_t event = events_before_ + i;
    if (t.segment(i)) {
      if (op == Op::alloc) {
        ++out_.segment_allocs;
        detail::add_saturating(out_.segment_bytes_allocated, t.size_of(i));
      } else if (op == Op::free) {
        ++out_.segment_frees;
      }
      if (op == Op::alloc || op == Op::free) note_segment_call(t, i, op, event);
      return;
    }
    switch (op) {
      case Op::alloc:
        return alloc(t, i, time);
      case Op::free:
        return free(t, i, time);
      case Op::run_begin:
        if (in_run_) {
          note(AnomalyKind::nested_run_begin, t, i);
          end_run(time, event);
        }
        return begin_run(time, t.label(i), event);
      case Op::run_end:
        if (!in_run_) {
          note(AnomalyKind::run_end_outside_run, t, i);
          return;
        }
        return end_run(time, event);
      case Op::mark:
        return;
    }
  }

  void alloc(const Trace& t, std::size_t i, std::uint64_t time) {
    const std::uint64_t address = t.address(i);
    if (address == 0) {
      ++out_.anomalies.failed_allocs;
      return;
    }
    DeviceAddresses& device = addresses(t.device(i));
    // A flag that makes no sense (the block is live, so the realloc's free is missing) is
    // dropped: the alloc replays as any other. Over a live block, left out or not, the trace
    // missed its free, as without the filter.
    bool in_place = t.realloc_in_place(i);
    if (const std::uint32_t* older = device.live.find(address)) {
      note(AnomalyKind::alloc_over_live, t, i);
      free_id(device, address, *older, time, events_before_ + i);
      in_place = false;
    } else if (device.dropped.find(address)) {
      note(AnomalyKind::alloc_over_live, t, i);
      device.dropped.erase(address);
      in_place = false;
    }
    // Nor without a replayed free at that address before it.
    std::uint64_t free_key = 0;
    if (in_place) {
      const std::uint64_t* key = device.freed.find(address);
      in_place = key != nullptr && *key != no_free_op;
      if (in_place) free_key = *key;
    }
    // An in-place realloc of a replayed block stays replayed whatever its new size: `alloclab
    // run` keeps such a block with the strategy.
    if (!in_place && left_out(t, i)) {
      device.dropped.insert_or_assign(address, 0);
      device.freed.erase(address);
      return;
    }
    if (out_.alloc_size.size() >= std::numeric_limits<std::uint32_t>::max())
      throw std::length_error("more than 2^32-1 allocations in one trace");
    const auto id = static_cast<std::uint32_t>(out_.alloc_size.size());
    out_.alloc_size.push_back(t.size_of(i));
    out_.alloc_origin.push_back(t.origin_index(i));
    device.live.insert_or_assign(address, id);
    device.freed.erase(address);
    emit(ReplayOp::alloc, id, time, events_before_ + i);
    if (in_place) keep_for_realloc(free_key, id);
  }

  // Whether ResolveOptions::min_size leaves allocation event i out (and counts it if so).
  bool left_out(const Trace& t, std::size_t i) {
    if (options_.min_size == 0) return false;
    if (t.kind(i) == MemoryKind::mapped) {
      ++out_.below_min_size.mappings;
      return true;
    }
    if (t.kind(i) != MemoryKind::host) return false;
    const std::uint64_t size = t.size_of(i);
    const bool over_aligned = t.alignment(i) > run_block_alignment;
    if (size >= options_.min_size && !over_aligned) return false;
    BelowMinSize& b = out_.below_min_size;
    ++b.allocations;
    detail::add_saturating(b.bytes, size);
    if (size >= options_.min_size) ++b.over_aligned;
    return true;
  }

  void free(const Trace& t, std::size_t i, std::uint64_t time) {
    const std::uint64_t address = t.address(i);
    if (address == 0) {
      ++out_.anomalies.free_null;
      return;
    }
    DeviceAddresses& device = addresses(t.device(i));
    if (const std::uint32_t* id = device.live.find(address))
      return free_id(device, address, *id, time, events_before_ + i);
    if (device.dropped.find(address)) {
      device.dropped.erase(address);
      device.freed.insert_or_assign(address, no_free_op);
      return;
    }
    if (device.freed.find(address))
      note(AnomalyKind::double_free, t, i);
    else if (started_at_fork_)
      ++out_.anomalies.inherited_frees;
    else
      note(AnomalyKind::free_unknown, t, i);
  }

  std::string source_;
  ResolveOptions options_;
  bool start_read_ = false;
  ResolvedTrace out_;
  std::map<DeviceId, DeviceAddresses> devices_;  // node-based: pointers stay valid
  DeviceAddresses* last_device_ = nullptr;
  DeviceId last_device_id_ = 0;
  bool in_run_ = false;
  bool started_at_fork_ = false;
  Markers markers_ = Markers::unknown;
  bool seen_event_ = false;
  std::uint64_t first_time_ = 0;
  std::uint64_t last_time_ = 0;
  std::uint64_t events_before_ = 0;  // in the parts before the current one
  std::uint64_t last_event_ = 0;     // the event of the last operation emitted
  std::uint64_t ops_dropped_ = 0;    // the placeholder run_begin, once dropped
};

StreamResolver::StreamResolver(std::uint64_t expected_events, std::string source,
                               const ResolveOptions& options)
    : impl_(std::make_unique<Impl>(expected_events, std::move(source), options)) {}
StreamResolver::~StreamResolver() = default;

void StreamResolver::add(const Trace& part) {
  impl_->add(part);
}

ResolvedTrace StreamResolver::finish(const std::vector<Origin>& origins) {
  return impl_->finish(origins);
}

std::optional<std::uint64_t> ResolvedTrace::event_of_op(std::uint64_t op) const {
  if (op >= ops.size()) return std::nullopt;
  // The last break at or before `op`: breaks are in operation order, the first at operation 0.
  const auto after =
      std::upper_bound(op_event_breaks.begin(), op_event_breaks.end(), op,
                       [](std::uint64_t k, const OpEventBreak& b) { return k < b.op; });
  if (after == op_event_breaks.begin()) return std::nullopt;
  const OpEventBreak& b = *std::prev(after);
  return b.event + (op - b.op);
}

std::optional<std::uint32_t> ResolvedTrace::kept_for_realloc(std::uint32_t id) const {
  const auto it =
      std::lower_bound(in_place_reallocs.begin(), in_place_reallocs.end(), id,
                       [](const InPlaceRealloc& r, std::uint32_t wanted) { return r.id < wanted; });
  if (it == in_place_reallocs.end() || it->id != id) return std::nullopt;
  return it->kept;
}

std::string_view to_string(AnomalyKind kind) {
  return anomaly_names[static_cast<std::size_t>(kind)].text;
}

std::string_view json_key(AnomalyKind kind) {
  return anomaly_names[static_cast<std::size_t>(kind)].key;
}

std::string_view to_string(SegmentAction action) {
  constexpr std::string_view names[] = {"segment_alloc", "segment_free", "segment_map",
                                        "segment_unmap"};
  return names[static_cast<std::size_t>(action)];
}

ResolvedTrace resolve(const Trace& trace, const std::string& source,
                      const ResolveOptions& options) {
  StreamResolver resolver(trace.size(), source, options);
  resolver.add(trace);
  return resolver.finish(trace.origins());
}

}  // namespace alloclab
