#pragma once
// What the segments view shows, without a window: the `pytorch` model's segments and their
// pieces after any operation of a trace, for one setting (a pytorch or pytorch-conf spec).
// A SegmentsWorker computes them off the UI thread with a ReplayCursor, which goes forward from
// where it stands and starts over only to go back, so a frame only ever asks and reads; it also
// looks for the setting's first failure under a memory limit, with a replay of its own.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "alloclab/format/resolve.hpp"
#include "alloclab/replay/metrics.hpp"
#include "alloclab/strategies/pytorch.hpp"
#include "model.hpp"

namespace alloclab::gui {

// The segments of one device's pool (small or large) on one stream, in address order.
struct SegmentGroup {
  DeviceId device = cpu_device;
  bool small = false;
  std::uint64_t stream = 0;
  std::vector<PyTorchSegmentInfo> segments;
  std::uint64_t reserved = 0;   // bytes of these segments
  std::uint64_t allocated = 0;  // bytes of their pieces handed out
};

// The model's state after the first `position` operations of the trace.
struct SegmentsState {
  std::uint64_t position = 0;
  std::vector<SegmentGroup> groups;  // by device, the large pool before the small, then stream
  std::uint64_t reserved = 0, allocated = 0;
  std::uint64_t segments = 0, pieces = 0;
  std::uint64_t widest_large = 0, widest_small = 0;  // the largest segment of each pool
  std::uint64_t cached() const { return reserved - allocated; }
};

// Groups segments by (device, pool, stream) as the view shows them, with their totals. Each
// input holds one device's segments (PyTorchCachingStrategy::segments()).
SegmentsState group_segments(
    std::uint64_t position,
    const std::vector<std::pair<DeviceId, std::vector<PyTorchSegmentInfo>>>& by_device);

// "" when `spec` makes a strategy of the pytorch family (pytorch, pytorch-conf), else why not.
std::string pytorch_family_error(const std::string& spec);

// Operations replayed through trace event `event` (the ops whose event is at most it), and
// through time `time_ns` (the ops stamped at most then; merged threads' rare stamps that go
// back are taken where they stand).
std::uint64_t ops_through_event(const ResolvedTrace& trace, std::uint64_t event);
std::uint64_t ops_through_time(const ResolvedTrace& trace, std::uint64_t time_ns);
// The trace event operation `op` replays (`op` itself for a trace without the correspondence).
std::uint64_t event_of(const ResolvedTrace& trace, std::uint64_t op);

// What the view writes, kept here to be tested without a window:
// "0x7f0a00000000".
std::string hex_address(std::uint64_t address);
// "after event 12 (operation 10 of 40: alloc 2.00 MiB on stream 0), t = 1.2 ms".
std::string position_text(const ResolvedTrace& trace, std::uint64_t position);
// "cuda:0, large pool, stream 0: 3 segments, 60.00 MiB, 12.00 MiB handed out".
std::string group_title(const SegmentGroup& group);
// "large segment 0x..., 20.00 MiB, 3 pieces: [cached 3.00 MiB] [handed out 5.00 MiB] ...":
// the first 16 pieces, then how many more.
std::string segment_text(const SegmentGroup& group, const PyTorchSegmentInfo& segment);

class SegmentsWorker {
 public:
  // Replays trace->resolved with `spec` on the simulated upstream, under `memory_limit` when
  // set, going on past failed requests (as --keep-going: the view can look past the first one).
  // Throws SpecError (or std::invalid_argument) at once for a spec not of the pytorch family.
  SegmentsWorker(std::shared_ptr<const TraceDoc> trace, std::string spec,
                 std::optional<std::uint64_t> memory_limit);
  ~SegmentsWorker();
  SegmentsWorker(const SegmentsWorker&) = delete;
  SegmentsWorker& operator=(const SegmentsWorker&) = delete;

  const std::string& spec() const { return spec_; }
  const std::optional<std::uint64_t>& memory_limit() const { return memory_limit_; }
  // Asks for the state after `position` operations (clamped to the trace's). Returns at once.
  void seek(std::uint64_t position);
  // The last state computed (null before the first). While the worker works toward the last
  // seek it is an earlier one.
  std::shared_ptr<const SegmentsState> state() const;
  // Operations replayed so far toward the last seek (for a progress display).
  std::uint64_t replayed() const { return replayed_.load(); }
  // The first failed request under the memory limit, once the search for it has ended.
  bool failure_searched() const { return failure_searched_.load(); }
  std::optional<FirstFailure> first_failure() const;
  // Nothing left to do: the state is the last seek's and the failure search has ended.
  bool settled() const;
  // Non-empty when the replay failed (it then stops).
  std::string error() const;

 private:
  void run_cursor();
  void search_failure();

  std::shared_ptr<const TraceDoc> trace_;
  std::string spec_;
  std::optional<std::uint64_t> memory_limit_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<std::uint64_t> target_{0};
  std::atomic<std::uint64_t> replayed_{0};
  std::atomic<bool> stop_{false};
  std::atomic<bool> failure_searched_{false};
  std::shared_ptr<const SegmentsState> state_;  // under mutex_
  std::optional<FirstFailure> failure_;         // under mutex_
  std::string error_;                           // under mutex_
  // Last: started once everything above exists, joined (in the destructor) before it goes.
  std::thread cursor_thread_, failure_thread_;
};

}  // namespace alloclab::gui
