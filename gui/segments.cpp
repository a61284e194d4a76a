#include "segments.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <limits>
#include <map>
#include <stdexcept>
#include <tuple>

#include "alloclab/format/units.hpp"
#include "alloclab/replay/replay_cursor.hpp"
#include "alloclab/replay/sim_replay.hpp"
#include "alloclab/strategies/registry.hpp"
#include "alloclab/strategies/upstream/sim.hpp"

namespace alloclab::gui {
namespace {

// Operations replayed between two looks at the target: a few milliseconds of replay, so that a
// slider moved back restarts the replay soon after.
constexpr std::uint64_t kStep = 1 << 16;

ReplayOptions options_for(const std::optional<std::uint64_t>& memory_limit) {
  ReplayOptions options;
  options.memory_limit = memory_limit;
  options.stop_at_first_failure = false;
  options.max_series_points = 1;
  return options;
}

std::shared_ptr<const SegmentsState> state_of(const ReplayCursor& cursor) {
  std::vector<std::pair<DeviceId, std::vector<PyTorchSegmentInfo>>> by_device;
  for (std::size_t lane = 0; lane < cursor.lane_count(); ++lane) {
    // The constructor checked that the spec makes this strategy.
    const auto& strategy = dynamic_cast<const PyTorchCachingStrategy&>(cursor.lane_strategy(lane));
    by_device.emplace_back(cursor.lane_device(lane), strategy.segments());
  }
  return std::make_shared<const SegmentsState>(group_segments(cursor.position(), by_device));
}

}  // namespace

SegmentsState group_segments(
    std::uint64_t position,
    const std::vector<std::pair<DeviceId, std::vector<PyTorchSegmentInfo>>>& by_device) {
  SegmentsState state;
  state.position = position;
  // Large (false) sorts before small (true).
  std::map<std::tuple<DeviceId, bool, std::uint64_t>, SegmentGroup> groups;
  for (const auto& [device, segments] : by_device)
    for (const PyTorchSegmentInfo& s : segments) {
      SegmentGroup& g = groups[{device, s.small, s.stream}];
      g.device = device;
      g.small = s.small;
      g.stream = s.stream;
      g.reserved += s.size;
      for (const PyTorchBlockInfo& b : s.blocks)
        if (b.allocated) g.allocated += b.size;
      state.pieces += s.blocks.size();
      std::uint64_t& widest = s.small ? state.widest_small : state.widest_large;
      widest = std::max(widest, s.size);
      g.segments.push_back(s);
    }
  for (auto& [key, g] : groups) {
    std::sort(g.segments.begin(), g.segments.end(),
              [](const auto& a, const auto& b) { return a.address < b.address; });
    state.reserved += g.reserved;
    state.allocated += g.allocated;
    state.segments += g.segments.size();
    state.groups.push_back(std::move(g));
  }
  return state;
}

std::string pytorch_family_error(const std::string& spec) {
  if (spec.find_first_not_of(" \t") == std::string::npos) return "empty spec";
  try {
    SimUpstream upstream;
    const std::unique_ptr<Strategy> strategy = make_strategy(spec, upstream);
    if (!dynamic_cast<const PyTorchCachingStrategy*>(strategy.get()))
      return "not a pytorch or pytorch-conf spec: the segments are the pytorch model's";
    return {};
  } catch (const std::exception& e) {
    return e.what();
  }
}

std::uint64_t event_of(const ResolvedTrace& trace, std::uint64_t op) {
  return trace.event_of_op(op).value_or(op);
}

std::uint64_t ops_through_event(const ResolvedTrace& trace, std::uint64_t event) {
  // Operations replay events in trace order: their events never go back.
  std::uint64_t lo = 0, hi = trace.ops.size();
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if (event_of(trace, mid) <= event)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

std::uint64_t ops_through_time(const ResolvedTrace& trace, std::uint64_t time_ns) {
  const auto it = std::partition_point(trace.op_time_ns.begin(), trace.op_time_ns.end(),
                                       [&](std::uint64_t t) { return t <= time_ns; });
  return static_cast<std::uint64_t>(it - trace.op_time_ns.begin());
}

std::string hex_address(std::uint64_t address) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%" PRIx64, address);
  return text;
}

std::string position_text(const ResolvedTrace& t, std::uint64_t position) {
  if (position == 0 || t.ops.empty()) return "before the first operation";
  const std::uint64_t k = std::min<std::uint64_t>(position, t.ops.size()) - 1;
  const ResolvedOp& op = t.ops[k];
  std::string what;
  switch (op.op) {
    case ReplayOp::alloc:
      what = "alloc " + human_bytes(t.alloc_size[op.id]) + " on stream " +
             std::to_string(t.stream_of(op.id));
      break;
    case ReplayOp::free:
      what = "free of " + human_bytes(t.alloc_size[op.id]);
      break;
    case ReplayOp::run_begin:
      what = "run begins";
      break;
    case ReplayOp::run_end:
      what = "run ends";
      break;
  }
  const std::uint64_t first = t.op_time_ns.front(), time = t.op_time_ns[k];
  return "after event " + grouped(event_of(t, k)) + " (operation " + grouped(k) + " of " +
         grouped(t.ops.size()) + ": " + what +
         "), t = " + human_duration(time >= first ? time - first : 0);
}

std::string group_title(const SegmentGroup& g) {
  return (g.device == cpu_device ? std::string() : device_name(g.device) + ", ") +
         (g.small ? "small pool" : "large pool") + ", stream " + std::to_string(g.stream) + ": " +
         counted(g.segments.size(), "segment") + ", " + human_bytes(g.reserved) + ", " +
         human_bytes(g.allocated) + " handed out";
}

std::string segment_text(const SegmentGroup& g, const PyTorchSegmentInfo& s) {
  std::string text = std::string(g.small ? "small" : "large") + " segment " +
                     hex_address(s.address) + ", " + human_bytes(s.size) + ", " +
                     counted(s.blocks.size(), "piece") + ":";
  constexpr std::size_t kListed = 16;
  for (std::size_t i = 0; i < s.blocks.size() && i < kListed; ++i)
    text += std::string(" [") + (s.blocks[i].allocated ? "handed out " : "cached ") +
            human_bytes(s.blocks[i].size) + "]";
  if (s.blocks.size() > kListed) text += " ... " + grouped(s.blocks.size() - kListed) + " more";
  return text;
}

SegmentsWorker::SegmentsWorker(std::shared_ptr<const TraceDoc> trace, std::string spec,
                               std::optional<std::uint64_t> memory_limit)
    : trace_(std::move(trace)), spec_(std::move(spec)), memory_limit_(memory_limit) {
  if (const std::string error = pytorch_family_error(spec_); !error.empty())
    throw std::invalid_argument(error);
  target_ = std::numeric_limits<std::uint64_t>::max();  // nothing asked yet
  cursor_thread_ = std::thread([this] { run_cursor(); });
  if (memory_limit_)
    failure_thread_ = std::thread([this] { search_failure(); });
  else
    failure_searched_ = true;
}

SegmentsWorker::~SegmentsWorker() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  cursor_thread_.join();
  if (failure_thread_.joinable()) failure_thread_.join();
}

void SegmentsWorker::seek(std::uint64_t position) {
  position = std::min<std::uint64_t>(position, trace_->resolved.ops.size());
  if (target_.load() == position) return;
  {
    std::lock_guard lock(mutex_);
    target_ = position;
  }
  wake_.notify_all();
}

std::shared_ptr<const SegmentsState> SegmentsWorker::state() const {
  std::lock_guard lock(mutex_);
  return state_;
}

std::optional<FirstFailure> SegmentsWorker::first_failure() const {
  std::lock_guard lock(mutex_);
  return failure_;
}

bool SegmentsWorker::settled() const {
  if (!failure_searched_.load()) return false;
  std::lock_guard lock(mutex_);
  if (!error_.empty()) return true;
  const std::uint64_t target = target_.load();
  return target == std::numeric_limits<std::uint64_t>::max() ||
         (state_ && state_->position == target);
}

std::string SegmentsWorker::error() const {
  std::lock_guard lock(mutex_);
  return error_;
}

// Waits for a seek, replays toward it in steps (looking at the target between steps, so that a
// newer seek takes over at once), and publishes the state once there. Only going back makes a
// new cursor: the replay starts over from the first operation.
void SegmentsWorker::run_cursor() {
  std::unique_ptr<ReplayCursor> cursor;
  std::uint64_t published = std::numeric_limits<std::uint64_t>::max();
  try {
    for (;;) {
      std::uint64_t want = 0;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] {
          return stop_.load() || (target_.load() != published &&
                                  target_.load() != std::numeric_limits<std::uint64_t>::max());
        });
        if (stop_) return;
        want = target_.load();
      }
      if (!cursor || want < cursor->position()) {
        cursor.reset();  // one replay's state at a time
        cursor =
            std::make_unique<ReplayCursor>(trace_->resolved, spec_, options_for(memory_limit_));
      }
      while (cursor->position() < want) {
        cursor->advance_to(std::min(want, cursor->position() + kStep));
        replayed_ = cursor->position();
        if (stop_) return;
        const std::uint64_t now = target_.load();
        if (now < cursor->position()) break;  // moved back: start over
        want = now;
      }
      if (cursor->position() != want) continue;
      std::shared_ptr<const SegmentsState> state = state_of(*cursor);
      std::lock_guard lock(mutex_);
      state_ = std::move(state);
      published = want;
    }
  } catch (const std::exception& e) {
    std::lock_guard lock(mutex_);
    error_ = e.what();
  }
}

void SegmentsWorker::search_failure() {
  try {
    ReplayOptions options = options_for(memory_limit_);
    options.stop_at_first_failure = true;  // only the first one is wanted
    options.cancel = &stop_;
    ReplayOutcome outcome = replay_sim(trace_->resolved, spec_, options);
    std::lock_guard lock(mutex_);
    failure_ = outcome.result.first_failure;
  } catch (const std::exception& e) {
    std::lock_guard lock(mutex_);
    error_ = e.what();
  }
  failure_searched_ = true;
}

}  // namespace alloclab::gui
