#include "segment_follower.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "alloclab/format/units.hpp"

namespace alloclab {
namespace {

std::string_view op_name(ReplayOp op) {
  switch (op) {
    case ReplayOp::alloc:
      return "alloc";
    case ReplayOp::free:
      return "free";
    case ReplayOp::run_begin:
      return "run_begin";
    case ReplayOp::run_end:
      return "run_end";
  }
  return "alloc";
}

// Two sizes as a line shows them: in exact bytes too where the rounded forms are the same.
std::pair<std::string, std::string> sizes_text(std::uint64_t a, std::uint64_t b) {
  std::string x = human_bytes(a), y = human_bytes(b);
  if (x == y && a != b) {
    x += " (" + std::to_string(a) + " B)";
    y += " (" + std::to_string(b) + " B)";
  }
  return {x, y};
}

// Which of `sizes` are paired with an equal size of `other`, as sets (each size used once).
std::vector<bool> paired_as_sets(const std::vector<std::uint64_t>& sizes,
                                 const std::vector<std::uint64_t>& other) {
  std::vector<std::size_t> a(sizes.size()), b(other.size());
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = i;
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = i;
  // Ties by position, so that the earliest calls of a size are the ones paired.
  std::sort(a.begin(), a.end(), [&](std::size_t x, std::size_t y) {
    return std::pair(sizes[x], x) < std::pair(sizes[y], y);
  });
  std::sort(b.begin(), b.end(), [&](std::size_t x, std::size_t y) {
    return std::pair(other[x], x) < std::pair(other[y], y);
  });
  std::vector<bool> paired(sizes.size(), false);
  for (std::size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    if (sizes[a[i]] == other[b[j]]) {
      paired[a[i++]] = true;
      ++j;
    } else if (sizes[a[i]] < other[b[j]]) {
      ++i;
    } else {
      ++j;
    }
  }
  return paired;
}

}  // namespace

SegmentFollower::SegmentFollower(const ResolvedTrace& trace,
                                 const std::vector<std::size_t>& lane_of_origin,
                                 std::vector<DeviceId> lane_devices, bool compare)
    : trace_(trace),
      lane_of_origin_(lane_of_origin),
      lane_devices_(std::move(lane_devices)),
      compare_(compare),
      lanes_(lane_devices_.size()) {
  // Each call's successor on its lane, in one pass from the end: following a lane costs its own
  // calls only, however many devices the trace has.
  const auto& calls = trace_.segment_calls;
  next_on_lane_.assign(calls.size(), calls.size());
  std::vector<std::size_t> next(lanes_.size(), calls.size());
  for (std::size_t i = calls.size(); i-- > 0;) {
    next_on_lane_[i] = next[lane_of(calls[i])];
    next[lane_of(calls[i])] = i;
  }
  for (std::size_t lane = 0; lane < lanes_.size(); ++lane) {
    lanes_[lane].cursor = next[lane];
    lanes_[lane].next_before_op = next[lane] < calls.size() ? calls[next[lane]].before_op : kNone;
  }
  for (const SegmentCall& call : trace_.segment_calls) {
    if (is_alloc(call.action)) {
      ++fidelity_.recorded_allocs;
      fidelity_.recorded_alloc_bytes += call.size;
    } else {
      ++fidelity_.recorded_frees;
      fidelity_.recorded_free_bytes += call.size;
    }
  }
}

void SegmentFollower::advance(std::size_t lane) {
  const auto& calls = trace_.segment_calls;
  std::size_t& cursor = lanes_[lane].cursor;
  cursor = next_on_lane_[cursor];
  lanes_[lane].next_before_op = cursor < calls.size() ? calls[cursor].before_op : kNone;
}

// The group of a lane's operation k is its calls placed before k and after its previous
// operation. The recorded allocator frees inside an allocation only on the way to a new segment
// (garbage collection, or a release and retry after a failed cudaMalloc), so only frees followed
// by an allocation in the group could be the operation's own; frees followed by none are a
// program's empty_cache. Frees followed by an allocation are read as an empty_cache too:
// PyTorch's release after a failed cudaMalloc returns exactly what emptyCache returns, so
// replaying them as a release leaves the strategy where the recorded allocator was in either
// reading, and only a partial release (garbage collection, max_split_size's
// release_available_cached_blocks) then shows as a divergence.
bool SegmentFollower::take_group(std::uint64_t k, std::size_t lane) {
  LaneState& state = lanes_[lane];
  state.lead.clear();
  state.rest.clear();
  const auto& calls = trace_.segment_calls;
  while (state.next_before_op <= k) {
    const SegmentCall& call = calls[state.cursor];
    if (state.rest.empty() && !is_alloc(call.action))
      state.lead.push_back(state.cursor);
    else
      state.rest.push_back(state.cursor);
    advance(lane);
  }
  if (state.lead.empty()) return false;
  ++empty_caches_;
  return true;
}

void SegmentFollower::released(std::uint64_t k, std::size_t lane) {
  if (!compare_) return;
  LaneState& state = lanes_[lane];
  hold(Point{k, lane, true}, state.lead, state.log);
  state.log.clear();
}

void SegmentFollower::serve_group(std::uint64_t k, std::size_t lane) {
  LaneState& state = lanes_[lane];
  if (compare_) hold(Point{k, lane, false}, state.rest, state.log);
  state.rest.clear();
  state.log.clear();
}

// Allocations are held in order (the recorded allocator asks for one segment per request, or
// maps an expandable segment's pages in order); frees as sets of sizes, as the order in which
// an allocator walks its cache is its own.
void SegmentFollower::hold(const Point& point, const std::vector<std::size_t>& recorded,
                           const std::vector<UpstreamCall>& model) {
  const auto& calls = trace_.segment_calls;
  if (recorded.empty()) {
    // The common case for a strategy far from the recorded allocator (one that calls its
    // upstream at every request, say): nothing to pair, every call of the strategy differs.
    const UpstreamCall* first_free = nullptr;
    const UpstreamCall* first_alloc = nullptr;
    for (const UpstreamCall& call : model) {
      if (call.free) {
        ++fidelity_.model_frees;
        fidelity_.model_free_bytes += call.bytes;
        if (!first_free) first_free = &call;
      } else {
        ++fidelity_.model_allocs;
        fidelity_.model_alloc_bytes += call.bytes;
        if (!first_alloc) first_alloc = &call;
      }
    }
    if (model.empty()) return;
    ++fidelity_.diverging_points;
    if (!fidelity_.first_divergence) {
      const UpstreamCall& first = first_free ? *first_free : *first_alloc;
      diverge(point, Mismatch{first.free, nullptr, first.bytes, false}, true, false);
    }
    return;
  }
  recorded_allocs_.clear();
  recorded_frees_.clear();
  model_allocs_.clear();
  model_frees_.clear();
  for (std::size_t index : recorded)
    (is_alloc(calls[index].action) ? recorded_allocs_ : recorded_frees_).push_back(index);
  for (const UpstreamCall& call : model) {
    if (call.free) {
      model_frees_.push_back(call.bytes);
      ++fidelity_.model_frees;
      fidelity_.model_free_bytes += call.bytes;
    } else {
      model_allocs_.push_back(call.bytes);
      ++fidelity_.model_allocs;
      fidelity_.model_alloc_bytes += call.bytes;
    }
  }
  std::vector<std::uint64_t>& recorded_free_sizes = recorded_free_sizes_;
  recorded_free_sizes.clear();
  for (std::size_t index : recorded_frees_) recorded_free_sizes.push_back(calls[index].size);
  // With one side empty nothing pairs (a strategy without a cache frees at every free).
  const bool both = !recorded_frees_.empty() && !model_frees_.empty();
  const std::vector<bool> recorded_paired = both ? paired_as_sets(recorded_free_sizes, model_frees_)
                                                 : std::vector<bool>(recorded_frees_.size(), false);
  const std::vector<bool> model_paired = both ? paired_as_sets(model_frees_, recorded_free_sizes)
                                              : std::vector<bool>(model_frees_.size(), false);
  const auto first_unpaired = [](const std::vector<bool>& paired) {
    return static_cast<std::size_t>(std::find(paired.begin(), paired.end(), false) -
                                    paired.begin());
  };
  fidelity_.matched_frees +=
      static_cast<std::uint64_t>(std::count(recorded_paired.begin(), recorded_paired.end(), true));
  Mismatch free_mismatch{true, nullptr, std::nullopt, false};
  if (const std::size_t i = first_unpaired(recorded_paired); i < recorded_paired.size())
    free_mismatch.recorded = &calls[recorded_frees_[i]];
  if (const std::size_t i = first_unpaired(model_paired); i < model_paired.size())
    free_mismatch.model = model_frees_[i];

  Mismatch alloc_mismatch{false, nullptr, std::nullopt, false};
  bool allocs_differ = false;
  const std::size_t n = std::max(recorded_allocs_.size(), model_allocs_.size());
  for (std::size_t i = 0; i < n; ++i) {
    const SegmentCall* r = i < recorded_allocs_.size() ? &calls[recorded_allocs_[i]] : nullptr;
    const std::optional<std::uint64_t> m =
        i < model_allocs_.size() ? std::optional(model_allocs_[i]) : std::nullopt;
    if (r && m && r->size == *m) {
      ++fidelity_.matched_allocs;
      continue;
    }
    if (!allocs_differ) alloc_mismatch = Mismatch{false, r, m, i > 0};
    allocs_differ = true;
  }

  const bool frees_differ = free_mismatch.recorded || free_mismatch.model;
  if (!frees_differ && !allocs_differ) return;
  ++fidelity_.diverging_points;
  if (fidelity_.first_divergence) return;
  // The one said first: the earlier recorded call; a recorded call before a call of the model
  // alone; between calls of the model alone, the free (an allocator frees before it asks anew).
  const Mismatch* first = frees_differ ? &free_mismatch : &alloc_mismatch;
  if (frees_differ && allocs_differ) {
    const SegmentCall* f = free_mismatch.recorded;
    const SegmentCall* a = alloc_mismatch.recorded;
    if (a && (!f || a->event < f->event)) first = &alloc_mismatch;
  }
  diverge(point, *first, first->frees ? !model_frees_.empty() : !model_allocs_.empty(),
          first->frees ? !recorded_frees_.empty() : !recorded_allocs_.empty());
}

void SegmentFollower::diverge(const Point& point, const Mismatch& mismatch, bool model_some,
                              bool recorded_some) {
  const bool frees = mismatch.frees;
  const SegmentCall* recorded = mismatch.recorded;
  const std::optional<std::uint64_t> model_size = mismatch.model;
  const bool after_others = mismatch.after_others;
  FidelityDivergence d;
  const LaneState& state = lanes_[point.lane];
  const auto& calls = trace_.segment_calls;
  // The recorded call that places an empty_cache: the first free of its run.
  const SegmentCall* anchor =
      recorded ? recorded
               : (point.empty_cache && !state.lead.empty() ? &calls[state.lead[0]] : nullptr);
  const bool has_op = point.op < trace_.ops.size();
  d.at = point.empty_cache ? "empty_cache"
         : has_op          ? std::string(op_name(trace_.ops[point.op].op))
                           : "end";
  d.op = point.op;
  d.device = lane_devices_[point.lane];
  if (anchor) {
    d.event = anchor->event;
    d.time_ns = anchor->time_ns;
    d.stream = trace_.origins[anchor->origin].stream;
  } else if (has_op) {
    d.event = trace_.event_of_op(point.op);
    d.time_ns = trace_.op_time_ns[point.op];
  }
  if (has_op && !point.empty_cache) {
    const ResolvedOp op = trace_.ops[point.op];
    if (op.op == ReplayOp::alloc || op.op == ReplayOp::free) {
      d.stream = trace_.stream_of(op.id);
      if (op.op == ReplayOp::alloc) d.request_size = trace_.alloc_size[op.id];
    }
  }
  d.frees = frees;
  if (recorded) {
    d.recorded_action = std::string(to_string(recorded->action));
    d.recorded_size = recorded->size;
  }
  d.model_size = model_size;

  const std::string verb = frees ? "freed" : "allocated";
  if (recorded && model_size) {
    const auto [r, m] = sizes_text(recorded->size, *model_size);
    d.what = "recorded " + d.recorded_action + " of " + r + ", model " + verb + " " + m;
  } else if (recorded) {
    d.what = "recorded " + d.recorded_action + " of " + human_bytes(recorded->size) + ", model " +
             verb + " nothing";
    if (frees && model_some)
      d.what = "recorded " + d.recorded_action + " of " + human_bytes(recorded->size) +
               ", model freed no segment of that size";
    else if (!frees && after_others)
      d.what += " more";
  } else if (model_size) {
    d.what = "model " + verb + " " + human_bytes(*model_size) + ", recorded nothing";
    if (frees && recorded_some)
      d.what =
          "model freed " + human_bytes(*model_size) + ", recorded no segment_free of that size";
    else if (!frees && after_others)
      d.what += " more";
  }
  fidelity_.first_divergence = std::move(d);
}

std::optional<Fidelity> SegmentFollower::fidelity() const {
  if (!compare_) return std::nullopt;
  return fidelity_;
}

}  // namespace alloclab
