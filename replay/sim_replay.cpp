#include "alloclab/replay/sim_replay.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "alloclab/format/address_map.hpp"
#include "alloclab/replay/cost_model.hpp"
#include "alloclab/replay/parallel.hpp"
#include "alloclab/replay/replay_cursor.hpp"
#include "alloclab/replay/run_tally.hpp"
#include "alloclab/replay/timing.hpp"
#include "alloclab/strategies/params.hpp"
#include "alloclab/strategies/registry.hpp"
#include "alloclab/strategies/upstream/counting.hpp"
#include "alloclab/strategies/upstream/registry.hpp"
#include "segment_follower.hpp"

namespace alloclab {
namespace {

// One device's own figures, kept for the report of a failed request (FirstFailure): live and
// handed-out bytes, and the peaks of handed-out and reserved bytes so far.
struct DeviceTally {
  DeviceId device = cpu_device;
  std::uint64_t live = 0;
  std::uint64_t allocated = 0;
  std::uint64_t peak_allocated = 0;
  std::uint64_t peak_reserved = 0;
};

// Between a strategy and its counting upstream when a replay has an observer: logs the upstream
// calls with their blocks, for the replayer to hand to the observer once it knows which
// operation made them and how many evictions the strategy counted there.
class ObservingUpstream final : public Upstream {
 public:
  struct Call {
    bool free = false;
    Block block;
  };
  explicit ObservingUpstream(Upstream& inner) : inner_(inner) {}

  std::optional<Block> allocate(std::uint64_t bytes) override {
    std::optional<Block> block = inner_.allocate(bytes);
    if (block) calls_.push_back(Call{false, *block});
    return block;
  }
  void deallocate(const Block& block) override {
    inner_.deallocate(block);
    calls_.push_back(Call{true, block});
  }
  // A mapping's pages are one call, as the counting upstream logs them (and as pytorch counts
  // the eviction of an unmapping): the first page's address and the bytes of all.
  bool allocate_pages(std::uint64_t page, std::uint64_t count, std::vector<Block>& pages) override {
    const std::size_t first = pages.size();
    if (!inner_.allocate_pages(page, count, pages)) return false;
    calls_.push_back(Call{false, pages_block(pages, first)});
    return true;
  }
  void deallocate_pages(const std::vector<Block>& pages) override {
    inner_.deallocate_pages(pages);
    calls_.push_back(Call{true, pages_block(pages, 0)});
  }
  void touch(std::uint64_t address, std::uint64_t bytes) override { inner_.touch(address, bytes); }

  std::vector<Call>& calls() { return calls_; }

 private:
  static Block pages_block(const std::vector<Block>& pages, std::size_t first) {
    Block all{first < pages.size() ? pages[first].address : 0, 0};
    for (std::size_t k = first; k < pages.size(); ++k) all.capacity += pages[k].capacity;
    return all;
  }
  Upstream& inner_;
  std::vector<Call> calls_;
};

// One device's allocator stack. Devices are independent allocators, as in a real program (one
// caching allocator per GPU). In simulation:
//   strategy -> counting -> [modelled (cost model)] -> simulated upstream
// on a real upstream, with the timing adaptors around the strategy and the upstream call:
//   timed strategy -> strategy -> counting -> timed upstream -> [limit] -> real upstream
// With an observer, an observing upstream sits right under the strategy.
struct Lane {
  Lane(std::string_view spec, const ReplayOptions& options, ReplayLatencies* latencies,
       ModelledTime* modelled) {
    UpstreamOptions upstream_options;
    upstream_options.limit_bytes = options.memory_limit;
    base = make_upstream(options.upstream, upstream_options);
    Upstream* below_counting = base.get();
    if (latencies) {
      timed = std::make_unique<TimedUpstream>(*base, *latencies);
      below_counting = timed.get();
    } else if (options.cost_model) {
      timed = std::make_unique<ModelledUpstream>(*base, *options.cost_model, *modelled);
      below_counting = timed.get();
    }
    counting = std::make_unique<CountingUpstream>(*below_counting);
    Upstream* under_strategy = counting.get();
    if (options.observer) {
      observing = std::make_unique<ObservingUpstream>(*counting);
      under_strategy = observing.get();
    }
    strategy = make_strategy(spec, *under_strategy);
    // Touching writes to the blocks' addresses, which must then be the upstream's memory.
    if (options.touch && !strategy->hands_out_upstream_memory())
      throw std::invalid_argument(
          "--touch cannot be used with " + std::string(spec) +
          ": its blocks lie in a virtual address range it models, which no upstream backs");
    if (latencies)
      strategy = std::make_unique<TimedStrategy>(std::move(strategy), *latencies,
                                                 options.touch ? base.get() : nullptr);
  }
  std::unique_ptr<Upstream> base;
  std::unique_ptr<Upstream> timed;  // the timing or cost-model adaptor, if any
  std::unique_ptr<CountingUpstream> counting;
  std::unique_ptr<ObservingUpstream> observing;  // with ReplayOptions::observer only
  std::unique_ptr<Strategy> strategy;  // declared last: destroyed first, before its upstreams
  std::map<std::uint64_t, std::uint64_t> live_ranges;  // invariant checks only: address -> end
  DeviceTally tally;
};

// Counters summed over lanes, for run deltas and the final metrics.
struct Totals {
  std::uint64_t requests = 0, hits = 0, failed = 0, evictions = 0, slack = 0, cached = 0;
  std::uint64_t upstream_allocs = 0, upstream_frees = 0;
};

class SeriesBuilder {
 public:
  SeriesBuilder(std::size_t ops, std::size_t max_points)
      : bucket_(std::max<std::size_t>(1, (ops + std::max<std::size_t>(max_points, 1) - 1) /
                                             std::max<std::size_t>(max_points, 1))) {}

  void add(std::size_t op, std::uint64_t time, std::uint64_t live, std::uint64_t reserved) {
    if (left_in_bucket_ == 0) {  // a countdown: no division on the per-operation path
      left_in_bucket_ = bucket_ - 1;
      points_.push_back(SeriesPoint{op, time, live, live, reserved, reserved});
      return;
    }
    --left_in_bucket_;
    SeriesPoint& p = points_.back();
    p.live_min = std::min(p.live_min, live);
    p.live_max = std::max(p.live_max, live);
    p.reserved_min = std::min(p.reserved_min, reserved);
    p.reserved_max = std::max(p.reserved_max, reserved);
  }
  std::vector<SeriesPoint> take() { return std::move(points_); }

 private:
  std::size_t bucket_;
  std::size_t left_in_bucket_ = 0;
  std::vector<SeriesPoint> points_;
};

class Replayer {
 public:
  Replayer(const ResolvedTrace& trace, std::string_view spec, const ReplayOptions& options)
      : trace_(trace), options_(options), series_(trace.ops.size(), options.max_series_points) {
    real_ = is_real_upstream(options.upstream);
    if (real_ && options.cost_model)
      throw std::invalid_argument("a cost model applies to simulation only (--upstream sim)");
    if (!real_ && options.touch)
      throw std::invalid_argument(
          "--touch needs a real upstream (the simulated one has no memory)");
    if (real_) latencies_ = std::make_unique<ReplayLatencies>();
    if (options.cost_model) modelled_ = ModelledTime{};
    std::map<DeviceId, std::size_t> lane_of_device;
    for (const Origin& origin : trace.origins) lane_of_device.emplace(origin.device, 0);
    if (lane_of_device.empty()) lane_of_device.emplace(cpu_device, 0);
    for (auto& [device, lane] : lane_of_device) {
      lane = lanes_.size();
      lanes_.push_back(std::make_unique<Lane>(spec, options, latencies_.get(),
                                              modelled_ ? &*modelled_ : nullptr));
      lanes_.back()->tally.device = device;
    }
    for (const Origin& origin : trace.origins)
      lane_of_origin_.push_back(lane_of_device[origin.device]);
    result_.strategy = std::string(spec);
    if (trace.start_state) start_from_recorded_state();
    if (!trace.segment_calls.empty()) follow_segments(lane_of_device);
    // The start state's upstream blocks: known to the observer, charged to nothing.
    if (observer_)
      for (std::size_t lane = 0; lane < lanes_.size(); ++lane) report_calls(lane, 0);
  }

  // Stepping, for ReplayCursor: replays the operations from position() up to `to` (exclusive),
  // or up to the first failure when options.stop_at_first_failure says the program ends there.
  void advance_to(std::size_t to) {
    to = std::min(to, trace_.ops.size());
    while (position_ < to && !result_.stopped_at_first_failure) step(position_++);
  }
  std::size_t position() const { return position_; }
  std::size_t lane_count() const { return lanes_.size(); }
  DeviceId lane_device(std::size_t lane) const { return lanes_[lane]->tally.device; }
  const Strategy& lane_strategy(std::size_t lane) const { return *lanes_[lane]->strategy; }
  std::uint64_t live_bytes() const { return live_; }
  std::uint64_t reserved_bytes() const { return reserved_; }
  const std::optional<FirstFailure>& first_failure() const { return result_.first_failure; }

  ReplayOutcome run() {
    const auto start = std::chrono::steady_clock::now();
    constexpr std::size_t report_every = 1 << 16;
    bool interrupted = false;
    const bool paced = real_ && options_.timing == TimingMode::recorded;
    auto deadline = std::chrono::steady_clock::now();
    std::uint64_t reported = 0;
    for (std::size_t k = 0; k < trace_.ops.size(); ++k) {
      if (paced && k > 0) deadline = wait_for_gap(k, deadline);
      step(k);
      if (result_.stopped_at_first_failure) break;
      if ((k + 1) % report_every == 0) {
        if (options_.progress) options_.progress->fetch_add(report_every);
        reported += report_every;
        if (options_.cancel && options_.cancel->load(std::memory_order_relaxed)) {
          interrupted = true;
          break;
        }
      }
    }
    // After a stop, the operations not replayed are work no longer left to do.
    if (options_.progress)
      options_.progress->fetch_add(result_.stopped_at_first_failure
                                       ? trace_.ops.size() - reported
                                       : trace_.ops.size() % report_every);
    // A replay stopped at its first failure holds the recording against what it replayed only.
    if (!interrupted && !result_.stopped_at_first_failure) follow_segments_to_the_end();
    if (in_run_) close_run();
    finish();
    result_.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (real_) free_live_blocks();
    for (auto& lane : lanes_) lane->strategy->release();
    return ReplayOutcome{std::move(result_), interrupted};
  }

 private:
  // Busy-waits until the trace's gap before operation k has passed since `deadline` (the time
  // operation k-1 was due); returns when operation k is due. See TimingMode.
  std::chrono::steady_clock::time_point wait_for_gap(
      std::size_t k, std::chrono::steady_clock::time_point deadline) {
    const std::uint64_t now_ns = trace_.op_time_ns[k], before_ns = trace_.op_time_ns[k - 1];
    const std::uint64_t gap = now_ns > before_ns ? now_ns - before_ns : 0;
    if (gap > kMaxRecordedGapNs) return std::chrono::steady_clock::now();  // skipped
    deadline += std::chrono::nanoseconds(gap);
    while (std::chrono::steady_clock::now() < deadline) {
    }
    return deadline;
  }

  // Real memory must go back: blocks still live at the end (leaks of the trace, or the rest of an
  // interrupted replay) are returned through the strategy, then release() empties its cache.
  // They go back in the order they were allocated, whatever the map's layout.
  void free_live_blocks() {
    std::vector<std::pair<std::uint32_t, Block>> live;
    live.reserve(blocks_.size());
    blocks_.for_each([&](std::uint64_t id, const Block& block) {
      live.emplace_back(static_cast<std::uint32_t>(id), block);
    });
    blocks_.clear();
    std::sort(live.begin(), live.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [id, block] : live) lane_of(id).strategy->deallocate(block);
  }

  std::size_t lane_index(std::uint32_t id) const {
    return lane_of_origin_[trace_.alloc_origin[id]];
  }
  Lane& lane_of(std::uint32_t id) { return *lanes_[lane_index(id)]; }

  void step(std::size_t k) {
    const ResolvedOp op = trace_.ops[k];
    switch (op.op) {
      // Tested here, not inside the follow functions: a trace without recorded segment calls
      // (most) pays no call per operation.
      case ReplayOp::alloc:
        if (follower_) follow_before(k, lane_index(op.id));
        if (op.has(ResolvedOp::realloc_in_place))
          reallocate_in_place(k, op.id);
        else
          allocate(k, op.id);
        if (follower_) follow_after(k, lane_index(op.id));
        break;
      case ReplayOp::free:
        if (follower_) follow_before(k, lane_index(op.id));
        // The block stays live, set aside for the in-place realloc that follows.
        if (!op.has(ResolvedOp::kept_for_realloc)) deallocate(op.id);
        if (follower_) follow_after(k, lane_index(op.id));
        break;
      case ReplayOp::run_begin:
        for (std::size_t lane = 0; lane < lanes_.size(); ++lane) follow_before(k, lane);
        if (in_run_) close_run();
        open_run(op.id);
        for (std::size_t lane = 0; lane < lanes_.size(); ++lane)
          observed(lane, [&] { lanes_[lane]->strategy->begin_run(); });
        for (std::size_t lane = 0; lane < lanes_.size(); ++lane) follow_after(k, lane);
        break;
      case ReplayOp::run_end:
        for (std::size_t lane = 0; lane < lanes_.size(); ++lane) follow_before(k, lane);
        for (std::size_t lane = 0; lane < lanes_.size(); ++lane)
          observed(lane, [&] { lanes_[lane]->strategy->end_run(); });
        recount_reserved();
        for (std::size_t lane = 0; lane < lanes_.size(); ++lane) follow_after(k, lane);
        break;
    }
    peak_live_ = std::max(peak_live_, live_);
    peak_reserved_ = std::max(peak_reserved_, reserved_);
    if (in_run_) {
      run_.observe(live_, reserved_);
      if (op.op == ReplayOp::run_end) close_run();
    }
    series_.add(k, trace_.op_time_ns[k], live_, reserved_);
    if (options_.check_invariants && reserved_ < live_)
      throw std::logic_error("operation " + std::to_string(k) + ": reserved " +
                             std::to_string(reserved_) + " < live " + std::to_string(live_));
  }

  // The trace's start state (ResolvedTrace::start_state): each lane starts holding the blocks
  // live before the first event; a model of the recorded allocator adopts the recorded segments
  // with them, any other strategy allocates them. None of it is counted or timed: the counters
  // start after it, the memory peaks include it.
  void start_from_recorded_state() {
    const StartState& start = *trace_.start_state;
    std::map<DeviceId, std::size_t> lane_of_device;
    for (std::size_t lane = 0; lane < lanes_.size(); ++lane)
      lane_of_device[lanes_[lane]->tally.device] = lane;
    // Per lane, the segments to hold and the allocation id of each of their pieces.
    struct Held {
      std::vector<HeldSegment> segments;
      std::vector<std::vector<std::uint32_t>> ids;
    };
    std::vector<Held> held(lanes_.size());
    // A device with segments but no allocation has no lane: its segments change nothing.
    // Otherwise a segment's place in its lane's list.
    std::vector<std::optional<std::size_t>> slot(start.segments.size());
    for (std::size_t k = 0; k < start.segments.size(); ++k) {
      const StartSegment& seg = start.segments[k];
      const auto lane = lane_of_device.find(seg.device);
      if (lane == lane_of_device.end()) continue;
      Held& h = held[lane->second];
      slot[k] = h.segments.size();
      std::optional<bool> small;
      if (seg.pool != SegmentPool::unknown) small = seg.pool == SegmentPool::small;
      h.segments.push_back(HeldSegment{seg.size, seg.stream, small, {}});
      h.ids.emplace_back();
    }
    const std::vector<std::optional<std::size_t>> segment_of =
        segment_of_blocks(start.blocks, start.segments);
    for (std::uint32_t id = 0; id < start.blocks.size(); ++id) {
      const StartBlock& b = start.blocks[id];
      Held& h = held[lane_index(id)];
      const std::optional<std::size_t> k = segment_of[id];
      if (k && slot[*k]) {
        const std::uint64_t offset = b.address - start.segments[*k].address;
        h.segments[*slot[*k]].pieces.push_back(HeldPiece{offset, b.requested, b.capacity});
        h.ids[*slot[*k]].push_back(id);
      } else {
        h.segments.push_back(
            HeldSegment{0, b.stream, std::nullopt, {{0, b.requested, b.capacity}}});
        h.ids.push_back({id});
      }
    }
    for (std::size_t lane = 0; lane < lanes_.size(); ++lane)
      hold(lane, held[lane].segments, held[lane].ids);
    recount_reserved();
    peak_live_ = live_;
    peak_reserved_ = reserved_;
    warm_ = totals();
    if (latencies_) *latencies_ = ReplayLatencies{};
    if (modelled_) modelled_ = ModelledTime{};
  }

  void hold(std::size_t lane_index, const std::vector<HeldSegment>& segments,
            const std::vector<std::vector<std::uint32_t>>& ids) {
    Lane& lane = *lanes_[lane_index];
    std::vector<std::uint32_t> order;
    for (const auto& in_segment : ids)
      order.insert(order.end(), in_segment.begin(), in_segment.end());
    std::uint64_t state_bytes = 0;
    for (const HeldSegment& seg : segments) state_bytes += seg.size;
    for (const std::uint32_t id : order) state_bytes += trace_.alloc_size[id];
    std::vector<Block> blocks;
    if (lane.strategy->adopts_segments()) {
      std::optional<std::vector<Block>> adopted = lane.strategy->adopt(segments);
      if (!adopted) start_does_not_fit(lane, state_bytes);
      blocks = std::move(*adopted);
    } else {
      // In allocation id order, as the recording lists them.
      std::sort(order.begin(), order.end());
      for (const std::uint32_t id : order) {
        const std::optional<Block> block =
            lane.strategy->allocate(trace_.alloc_size[id], trace_.stream_of(id));
        if (!block) start_does_not_fit(lane, state_bytes);
        blocks.push_back(*block);
      }
    }
    for (std::size_t i = 0; i < order.size(); ++i) {
      const std::uint32_t id = order[i];
      const Block& block = blocks.at(i);
      if (block.address != 0) blocks_.insert_or_assign(id, block);
      live_ += trace_.alloc_size[id];
      lane.tally.live += trace_.alloc_size[id];
      lane.tally.allocated += block.capacity;
      if (options_.check_invariants) check_new_block(lane, 0, block, trace_.alloc_size[id]);
    }
    lane.tally.peak_allocated = lane.tally.allocated;
    lane.tally.peak_reserved = lane.counting->reserved_bytes();
  }

  // `state_bytes`: the recorded segments' bytes plus the live blocks' requested bytes of the
  // lane, what the message can say the state amounts to.
  [[noreturn]] void start_does_not_fit(const Lane& lane, std::uint64_t state_bytes) const {
    const std::string what = "the trace starts from a recorded allocator state on " +
                             device_name(lane.tally.device) + " (segments and live blocks of " +
                             std::to_string(state_bytes) + " bytes) that " + result_.strategy +
                             " cannot hold";
    if (options_.memory_limit)
      throw std::invalid_argument(what + " under --memory-limit " +
                                  std::to_string(*options_.memory_limit) +
                                  ": the program held more than that when the history begins");
    throw std::invalid_argument(what +
                                ": its own limit (per_process_memory_fraction) is below "
                                "what the program held when the history begins");
  }

  // The recorded allocator's upstream calls (docs/strategies.md, "Fidelity"): followed lane by
  // lane, a program's empty_cache replayed as a release of the lane's strategy, and in
  // simulation each lane's upstream calls held against the recorded ones.
  void follow_segments(const std::map<DeviceId, std::size_t>& lane_of_device) {
    std::vector<DeviceId> devices(lanes_.size());
    for (const auto& [device, lane] : lane_of_device) devices[lane] = device;
    follower_ =
        std::make_unique<SegmentFollower>(trace_, lane_of_origin_, std::move(devices), !real_);
    for (std::size_t lane = 0; lane < lanes_.size(); ++lane)
      lanes_[lane]->counting->log_calls(follower_->log(lane));
  }

  void follow_before(std::size_t k, std::size_t lane) {
    if (!follower_ || !follower_->take(k, lane)) return;
    Lane& l = *lanes_[lane];
    const std::uint64_t before = l.counting->reserved_bytes();
    l.strategy->release();  // the program emptied its allocator's cache here
    reserved_ = reserved_ + l.counting->reserved_bytes() - before;
    follower_->released(k, lane);
  }

  void follow_after(std::size_t k, std::size_t lane) {
    if (follower_) follower_->served(k, lane);
  }

  // Recorded calls after the last operation: a last empty_cache is the program's, and counts.
  void follow_segments_to_the_end() {
    if (!follower_) return;
    for (std::size_t lane = 0; lane < lanes_.size(); ++lane) {
      follow_before(trace_.ops.size(), lane);
      follow_after(trace_.ops.size(), lane);
    }
  }

  // The strategy's counters an observed call changes, read before it.
  struct StatsMark {
    std::uint64_t hits = 0, slack = 0, evictions = 0;
  };
  StatsMark stats_mark(std::size_t lane) {
    // Calls logged since the last observed one were made outside any counted call (a release
    // for a recorded empty_cache): no evictions among them.
    report_calls(lane, 0);
    const StrategyStats& s = lanes_[lane]->strategy->stats();
    return {s.hits, s.slack_bytes, s.evictions};
  }
  std::uint64_t evictions_since(std::size_t lane, const StatsMark& mark) const {
    return lanes_[lane]->strategy->stats().evictions - mark.evictions;
  }

  // Hands lane's logged upstream calls to the observer in the order they were made, the first
  // `evictions` frees marked as evictions (ReplayObserver::upstream_freed); returns the bytes
  // taken from upstream.
  // Most requests make no upstream call: they pay one test, here, not a call.
  std::uint64_t report_calls(std::size_t lane, std::uint64_t evictions) {
    if (evictions == 0 && lanes_[lane]->observing->calls().empty()) return 0;
    return report_logged_calls(lane, evictions);
  }
  [[gnu::noinline]] std::uint64_t report_logged_calls(std::size_t lane, std::uint64_t evictions) {
    std::vector<ObservingUpstream::Call>& calls = lanes_[lane]->observing->calls();
    std::uint64_t taken = 0;
    for (const ObservingUpstream::Call& call : calls) {
      if (call.free) {
        const bool eviction = evictions > 0;
        if (eviction) --evictions;
        observer_->upstream_freed(lane, call.block, eviction);
      } else {
        taken += call.block.capacity;
        observer_->upstream_allocated(lane, call.block);
      }
    }
    calls.clear();
    for (; evictions > 0; --evictions) observer_->upstream_freed(lane, Block{}, true);
    return taken;
  }

  // A strategy call that is no request (begin_run, end_run), observed for its evictions.
  template <typename Call>
  void observed(std::size_t lane, Call call) {
    if (!observer_) {
      call();
      return;
    }
    const StatsMark mark = stats_mark(lane);
    call();
    report_calls(lane, evictions_since(lane, mark));
  }

  void allocate(std::size_t k, std::uint32_t id) {
    if (observer_) [[unlikely]]
      return observed_allocate(k, id);
    serve(k, id);
  }

  void observed_allocate(std::size_t k, std::uint32_t id) {
    const std::size_t lane = lane_index(id);
    const StatsMark mark = stats_mark(lane);
    const Block* block = serve(k, id);
    const StrategyStats& after = lanes_[lane]->strategy->stats();
    RequestCost cost;
    cost.hit = after.hits != mark.hits;
    cost.slack_bytes = after.slack_bytes - mark.slack;
    cost.upstream_bytes = report_calls(lane, evictions_since(lane, mark));
    observer_->requested(lane, id, block, cost);
  }

  // Returns the block allocation `id` now holds in blocks_ (null: none, as for a failed request).
  const Block* serve(std::size_t k, std::uint32_t id) {
    Lane& lane = lane_of(id);
    const std::uint64_t size = trace_.alloc_size[id];
    const std::uint64_t before = lane.counting->reserved_bytes();
    const std::optional<Block> block = lane.strategy->allocate(size, trace_.stream_of(id));
    const std::uint64_t after = lane.counting->reserved_bytes();
    reserved_ += after - before;
    DeviceTally& tally = lane.tally;
    tally.peak_reserved = std::max(tally.peak_reserved, after);
    // Counted by the strategy as failed; nothing becomes live.
    if (!block) {
      failed(lane, k, id);
      return blocks_.find(id);
    }
    // A block at address 0 counts as never handed out, as for a failed request.
    const Block* held = nullptr;
    if (block->address != 0) {
      Block* slot = blocks_.try_emplace(id).first;
      *slot = *block;
      held = slot;
      tally.allocated += block->capacity;
      tally.peak_allocated = std::max(tally.peak_allocated, tally.allocated);
    } else {
      held = blocks_.find(id);
    }
    live_ += size;
    tally.live += size;
    if (options_.check_invariants) check_new_block(lane, k, *block, size);
    return held;
  }

  // A realloc that kept its block (docs/strategy-contract.md): when the block set aside at the
  // realloc's free holds the new size, allocation `id` takes it as a request and a hit, with
  // slack capacity - size, and the strategy is not asked (the program's allocator answered in
  // place). Otherwise the strategy's block cannot grow where the recorded one did: a free, then
  // an alloc.
  void reallocate_in_place(std::size_t k, std::uint32_t id) {
    const std::optional<std::uint32_t> kept = trace_.kept_for_realloc(id);
    if (!kept) return allocate(k, id);  // never from resolve(), which pairs both flags
    const std::uint64_t size = trace_.alloc_size[id];
    const Block* held = blocks_.find(*kept);
    if (!held || held->capacity < size || lane_index(*kept) != lane_index(id)) {
      deallocate(*kept);
      return allocate(k, id);
    }
    const Block block = *held;
    blocks_.erase(*kept);
    blocks_.insert_or_assign(id, block);
    Lane& lane = lane_of(id);
    const std::uint64_t old_size = trace_.alloc_size[*kept];
    live_ = live_ - old_size + size;
    lane.tally.live = lane.tally.live - old_size + size;
    ++in_place_hits_;
    in_place_slack_ += block.capacity - size;
    if (observer_)
      observer_->requested(lane_index(id), id, &block, RequestCost{true, block.capacity - size, 0});
  }

  void deallocate(std::uint32_t id) {
    if (observer_) [[unlikely]]
      return observed_deallocate(id);
    give_back(id);
  }

  void observed_deallocate(std::uint32_t id) {
    Block block;
    if (!blocks_.take_into(id, block)) return;  // its allocation failed
    const std::size_t lane = lane_index(id);
    const StatsMark mark = stats_mark(lane);
    give_back(id, block);
    // Before the upstream calls: a block the strategy evicts at once is charged to `id`.
    observer_->freed(lane, id, block);
    report_calls(lane, evictions_since(lane, mark));
  }

  void give_back(std::uint32_t id) {
    Block block;
    if (!blocks_.take_into(id, block)) return;  // its allocation failed
    give_back(id, block);
  }

  // Returns `block`, which allocation `id` held and blocks_ no longer does, to the strategy.
  void give_back(std::uint32_t id, const Block& block) {
    Lane& lane = lane_of(id);
    if (options_.check_invariants) lane.live_ranges.erase(block.address);
    const std::uint64_t before = lane.counting->reserved_bytes();
    lane.strategy->deallocate(block);
    reserved_ = reserved_ + lane.counting->reserved_bytes() - before;  // may shrink: evictions
    live_ -= trace_.alloc_size[id];
    lane.tally.live -= trace_.alloc_size[id];
    lane.tally.allocated -= block.capacity;
  }

  // A failed request: the first is described, and with stop_at_first_failure the replay ends.
  void failed(const Lane& lane, std::size_t k, std::uint32_t id) {
    if (!result_.first_failure) result_.first_failure = first_failure(lane, k, id);
    if (options_.stop_at_first_failure) result_.stopped_at_first_failure = true;
  }

  FirstFailure first_failure(const Lane& lane, std::size_t k, std::uint32_t id) const {
    const std::uint64_t size = trace_.alloc_size[id];
    const FailureState state = lane.strategy->failure_state(size);
    FirstFailure f;
    f.op_index = k;
    f.event_index = trace_.event_of_op(k);
    f.time_ns = trace_.op_time_ns[k];
    f.since_start_ns = f.time_ns >= trace_.op_time_ns[0] ? f.time_ns - trace_.op_time_ns[0] : 0;
    f.requested_bytes = size;
    f.upstream_request_bytes = state.upstream_request;
    f.stream = trace_.stream_of(id);
    f.device = lane.tally.device;
    f.live_bytes = lane.tally.live;
    f.allocated_bytes = lane.tally.allocated;
    f.reserved_bytes = lane.counting->reserved_bytes();
    f.largest_cached_block = state.largest_cached_block;
    f.memory_limit = options_.memory_limit;
    f.allowed_bytes = state.allowed_bytes;
    f.peak_allocated_bytes = lane.tally.peak_allocated;
    f.peak_reserved_bytes = lane.tally.peak_reserved;
    return f;
  }

  void check_new_block(Lane& lane, std::size_t k, const Block& block, std::uint64_t size) {
    const std::string where = "operation " + std::to_string(k) + ": ";
    if (block.capacity < size) throw std::logic_error(where + "block smaller than the request");
    const std::uint64_t end = block.address + std::max<std::uint64_t>(block.capacity, 1);
    auto next = lane.live_ranges.lower_bound(block.address);
    if (next != lane.live_ranges.end() && next->first < end)
      throw std::logic_error(where + "block overlaps a live block");
    if (next != lane.live_ranges.begin() && std::prev(next)->second > block.address)
      throw std::logic_error(where + "block overlaps a live block");
    lane.live_ranges.emplace(block.address, end);
  }

  void recount_reserved() {
    reserved_ = 0;
    for (auto& lane : lanes_) reserved_ += lane->counting->reserved_bytes();
  }

  Totals totals() const {
    Totals t;
    for (const auto& lane : lanes_) {
      const StrategyStats& s = lane->strategy->stats();
      t.requests += s.requests;
      t.hits += s.hits;
      t.failed += s.failed;
      t.evictions += s.evictions;
      t.slack += s.slack_bytes;
      t.cached += s.cached_bytes;
      t.upstream_allocs += lane->counting->allocs();
      t.upstream_frees += lane->counting->frees();
    }
    // In-place reallocs the replay served without asking the strategy (reallocate_in_place).
    t.requests += in_place_hits_;
    t.hits += in_place_hits_;
    t.slack += in_place_slack_;
    return t;
  }

  RunTotals run_totals() const {
    const Totals t = totals();
    RunTotals r{t.requests, t.hits, t.upstream_allocs, t.upstream_frees, t.evictions, t.slack, {}};
    // What the report's timing section sums: the strategy's own calls, measured or modelled.
    if (latencies_)
      r.allocation_time_ns =
          latencies_->strategy_allocate.total() + latencies_->strategy_deallocate.total();
    else if (modelled_)
      r.allocation_time_ns =
          modelled_->upstream_allocate + modelled_->upstream_deallocate +
          t.hits * static_cast<std::uint64_t>(std::llround(options_.cost_model->hit_ns));
    return r;
  }

  void open_run(std::uint32_t index) {
    run_.open(index < trace_.runs.size() ? trace_.runs[index].label : std::string(), run_totals(),
              live_, reserved_);
    in_run_ = true;
  }

  void close_run() {
    result_.runs.push_back(run_.close(run_totals()));
    in_run_ = false;
  }

  void finish() {
    Totals t = totals();
    // The start state is not counted (start_from_recorded_state).
    t.requests -= warm_.requests;
    t.hits -= warm_.hits;
    t.failed -= warm_.failed;
    t.evictions -= warm_.evictions;
    t.slack -= warm_.slack;
    t.upstream_allocs -= warm_.upstream_allocs;
    t.upstream_frees -= warm_.upstream_frees;
    Metrics& m = result_.metrics;
    m.requests = t.requests;
    m.hits = t.hits;
    m.misses = t.requests - t.hits;
    m.failed_requests = t.failed;
    m.upstream_allocs = t.upstream_allocs;
    m.upstream_frees = t.upstream_frees;
    m.evictions = t.evictions;
    m.peak_live_bytes = peak_live_;
    m.peak_reserved_bytes = peak_reserved_;
    m.final_cached_bytes = t.cached;
    m.slack_bytes = t.slack;
    result_.series = series_.take();
    for (const auto& lane : lanes_)
      for (const auto& [name, value] : lane->strategy->counters())
        result_.strategy_counters[name] += value;
    if (latencies_) result_.latency = latencies_->summaries(options_.touch);
    if (modelled_) {
      result_.modelled = *modelled_;
      const auto hit_ns = std::llround(options_.cost_model->hit_ns);
      result_.modelled->hits = t.hits * static_cast<std::uint64_t>(hit_ns);
    }
    if (follower_) {
      result_.empty_cache_calls = follower_->empty_caches();
      result_.fidelity = follower_->fidelity();
      // The final clean-up is compared with nothing.
      for (auto& lane : lanes_) lane->counting->log_calls(nullptr);
    }
  }

  const ResolvedTrace& trace_;
  const ReplayOptions& options_;
  ReplayObserver* observer_ = options_.observer;
  bool real_ = false;
  std::unique_ptr<ReplayLatencies> latencies_;  // real upstreams only; shared by every lane
  std::optional<ModelledTime> modelled_;        // with a cost model only; shared by every lane
  // A trace with recorded segment calls only. Declared before the lanes, whose upstreams log
  // into it: they go first.
  std::unique_ptr<SegmentFollower> follower_;
  std::vector<std::unique_ptr<Lane>> lanes_;
  std::vector<std::size_t> lane_of_origin_;
  // The blocks of the live allocations, by allocation id. A vector over every id would hold 16
  // bytes per allocation of the whole trace for the whole replay, while far fewer are live at
  // once.
  AddressMap<Block> blocks_;
  std::uint64_t live_ = 0, reserved_ = 0, peak_live_ = 0, peak_reserved_ = 0;
  std::size_t position_ = 0;  // operations replayed by advance_to
  bool in_run_ = false;
  RunTally run_;
  Totals warm_;  // what holding the start state counted, taken off every counter
  std::uint64_t in_place_hits_ = 0, in_place_slack_ = 0;  // reallocate_in_place's, all lanes
  SeriesBuilder series_;
  StrategyResult result_;
};

}  // namespace

struct ReplayCursor::Impl {
  Impl(const ResolvedTrace& trace, std::string_view spec, ReplayOptions o)
      : options(std::move(o)), replayer(trace, spec, options) {}
  ReplayOptions options;  // before the replayer, which keeps a reference to it
  Replayer replayer;
};

namespace {

ReplayOptions cursor_options(ReplayOptions options) {
  if (options.upstream != "sim")
    throw std::invalid_argument("a replay cursor steps simulated replays only (upstream 'sim')");
  options.max_series_points = 1;  // a cursor reports states, not a series
  options.progress = nullptr;
  options.cancel = nullptr;
  return options;
}

}  // namespace

ReplayCursor::ReplayCursor(const ResolvedTrace& trace, std::string_view spec, ReplayOptions options)
    : impl_(std::make_unique<Impl>(trace, spec, cursor_options(std::move(options)))) {}
ReplayCursor::~ReplayCursor() = default;
std::uint64_t ReplayCursor::position() const {
  return impl_->replayer.position();
}
void ReplayCursor::advance_to(std::uint64_t op) {
  impl_->replayer.advance_to(static_cast<std::size_t>(op));
}
std::size_t ReplayCursor::lane_count() const {
  return impl_->replayer.lane_count();
}
DeviceId ReplayCursor::lane_device(std::size_t lane) const {
  return impl_->replayer.lane_device(lane);
}
const Strategy& ReplayCursor::lane_strategy(std::size_t lane) const {
  return impl_->replayer.lane_strategy(lane);
}
std::uint64_t ReplayCursor::live_bytes() const {
  return impl_->replayer.live_bytes();
}
std::uint64_t ReplayCursor::reserved_bytes() const {
  return impl_->replayer.reserved_bytes();
}
const std::optional<FirstFailure>& ReplayCursor::first_failure() const {
  return impl_->replayer.first_failure();
}

ReplayOutcome replay_trace(const ResolvedTrace& trace, std::string_view spec,
                           const ReplayOptions& options) {
  return Replayer(trace, spec, options).run();
}

ReplayOutcome replay_sim(const ResolvedTrace& trace, std::string_view spec,
                         const ReplayOptions& options) {
  if (options.upstream == "sim") return replay_trace(trace, spec, options);
  ReplayOptions sim = options;
  sim.upstream = "sim";
  sim.touch = false;
  return replay_trace(trace, spec, sim);
}

std::vector<std::size_t> replay_order(const std::vector<std::string>& specs) {
  const auto slow = [](std::string_view spec) {
    const std::string_view name = trim_spaces(spec.substr(0, spec.find(':')));
    return name == "pytorch" || name == "pytorch-conf";
  };
  std::vector<std::size_t> order(specs.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_partition(order.begin(), order.end(), [&](std::size_t i) { return slow(specs[i]); });
  return order;
}

ReplaySetOutcome replay_specs(const ResolvedTrace& trace, const std::vector<std::string>& specs,
                              const ReplayOptions& options, std::size_t threads) {
  ReplaySetOutcome out;
  out.results.resize(specs.size());
  const std::vector<std::size_t> order = replay_order(specs);
  parallel_for(specs.size(), threads, [&](std::size_t job) {
    const std::size_t i = order[job];
    out.results[i] = replay_trace(trace, specs[i], options).result;
  });
  // A replay looks at cancel only now and then, and one that had not started returns at once:
  // whether the set is whole is the flag's state once all have returned.
  out.interrupted = options.cancel && options.cancel->load();
  return out;
}

}  // namespace alloclab
