#pragma once
// Resolution: pairs frees with allocations by (device, address) once, at load, giving the
// replay model of docs/strategy-contract.md: alloc(id, size), free(id), run_begin, run_end.
// Anomalies are counted by kind and never fatal.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "alloclab/format/start_state.hpp"
#include "alloclab/format/trace.hpp"

namespace alloclab {

enum class ReplayOp : std::uint8_t { alloc = 0, free = 1, run_begin = 2, run_end = 3 };

struct ResolvedOp {
  // Flags (docs/strategy-contract.md, "realloc"): a realloc that returned the block it was given
  // is a free of the old allocation, marked kept_for_realloc (its block stays with the program),
  // then an alloc of the new one, marked realloc_in_place, which takes that block when it fits.
  // The resolver marks both or neither; ResolvedTrace::kept_for_realloc pairs them.
  static constexpr std::uint8_t kept_for_realloc = 1;  // on a free
  static constexpr std::uint8_t realloc_in_place = 2;  // on an alloc

  std::uint32_t id = 0;  // allocation id for alloc/free, run index for run_begin/run_end
  ReplayOp op = ReplayOp::alloc;
  std::uint8_t flags = 0;

  bool has(std::uint8_t flag) const { return (flags & flag) != 0; }
};
// Eight bytes, as without the flags: a replay holds one per operation of the whole trace.
static_assert(sizeof(ResolvedOp) == 8);

struct Anomalies {
  std::uint64_t free_unknown = 0;  // free of an address never allocated (or long gone)
  // In the trace of a process recorded from its fork on (metadata "image": "fork"), a free of an
  // unknown address is of a block allocated before the fork: expected, not an error.
  std::uint64_t inherited_frees = 0;
  std::uint64_t double_free = 0;          // free of an address already freed and not reallocated
  std::uint64_t alloc_over_live = 0;      // alloc at a live address: a missed free, fixed up
  std::uint64_t free_null = 0;            // free(0): legal, ignored
  std::uint64_t failed_allocs = 0;        // alloc with address 0: the recorded allocator failed
  std::uint64_t nested_run_begin = 0;     // run_begin inside a run: the open run is ended first
  std::uint64_t run_end_outside_run = 0;  // ignored
  std::uint64_t unterminated_runs = 0;    // a run still open at the end of the trace
  std::uint64_t leaks = 0;                // allocations still live at the end (never freed)
  std::uint64_t leaked_bytes = 0;

  // Anomalies that mean the trace and the program disagree (free_null and leaks are not errors).
  std::uint64_t total() const {
    return free_unknown + double_free + alloc_over_live + nested_run_begin + run_end_outside_run;
  }
};

// The kinds Anomalies::total() counts, for saying where each happened.
enum class AnomalyKind : std::uint8_t {
  free_unknown,
  double_free,
  alloc_over_live,
  nested_run_begin,
  run_end_outside_run
};
std::string_view to_string(AnomalyKind kind);  // "free of unknown address", ...
std::string_view json_key(AnomalyKind kind);   // "free_unknown": its key in Anomalies' JSON

// Where one anomaly is: its event (the index in the trace, counted from 0 as `alloclab convert`
// numbers CSV rows after the header) and what that event was.
struct AnomalyAt {
  AnomalyKind kind = AnomalyKind::free_unknown;
  std::uint64_t event = 0;
  std::uint64_t time_ns = 0;
  std::uint64_t address = 0;
  std::uint64_t thread = 0;
  DeviceId device = cpu_device;
  bool operator==(const AnomalyAt&) const = default;
};

struct RunInfo {
  std::string label;
  std::uint64_t begin_op = 0;  // index into ops of the run_begin
  std::uint64_t end_op = 0;    // index of the run_end (== ops.size() if never ended)
  std::uint64_t begin_time_ns = 0;
  std::uint64_t end_time_ns = 0;
};

// What the recorded allocator asked of its own upstream: PyTorch's segment_alloc and
// segment_free (whole segments, cudaMalloc and cudaFree) and segment_map and segment_unmap
// (expandable segments, events of kind vmm).
enum class SegmentAction : std::uint8_t { alloc = 0, free = 1, map = 2, unmap = 3 };
std::string_view to_string(SegmentAction action);  // "segment_alloc", ... as PyTorch names them
inline bool is_alloc(SegmentAction action) {
  return action == SegmentAction::alloc || action == SegmentAction::map;
}

// One call of the recorded allocator to its upstream (an event with Event::segment), kept where
// it happened among the replayed operations: the replay holds the model's own upstream calls
// against them (replay/fidelity.hpp). Never replayed as a request.
struct SegmentCall {
  // The operation it comes before: the index into ops of the first operation made by a later
  // event (ops.size() when no operation follows).
  std::uint64_t before_op = 0;
  std::uint64_t event = 0;  // its index in the trace
  std::uint64_t time_ns = 0;
  std::uint64_t address = 0;
  std::uint64_t size = 0;
  std::uint16_t origin = 0;  // index into ResolvedTrace::origins (device, stream)
  SegmentAction action = SegmentAction::alloc;
  bool operator==(const SegmentCall&) const = default;
};

// The alignment of every block `alloclab run` hands a program from its strategy: a request
// asking more goes to the program's own allocator.
inline constexpr std::uint64_t run_block_alignment = 64;

// What a resolution leaves out of the replay.
struct ResolveOptions {
  // 0: off. Otherwise a host allocation (MemoryKind::host) of fewer bytes, or one asking an
  // alignment above run_block_alignment, and every anonymous mapping (MemoryKind::mapped), get
  // no allocation id and no operation, and their frees are matched without a word (not an
  // anomaly): `alloclab run` leaves them to the program's allocator and the kernel, not to the
  // strategy, and a replay that compares with it must do the same. Device memory is always
  // kept.
  std::uint64_t min_size = 0;
};

// What ResolveOptions::min_size left out.
struct BelowMinSize {
  std::uint64_t min_size = 0;      // ResolveOptions::min_size
  std::uint64_t allocations = 0;   // host allocations left out (either reason)
  std::uint64_t bytes = 0;         // their requested bytes, saturated at 2^64-1
  std::uint64_t over_aligned = 0;  // of `allocations`, those left out for their alignment alone
  std::uint64_t mappings = 0;      // anonymous mappings left out (not in `allocations`)
  bool operator==(const BelowMinSize&) const = default;
};

// An in-place realloc: allocation `id` is a realloc of allocation `kept`, which the realloc
// freed (an operation marked kept_for_realloc) and whose block it kept.
struct InPlaceRealloc {
  std::uint32_t id = 0;
  std::uint32_t kept = 0;
  bool operator==(const InPlaceRealloc&) const = default;
};

// Per operation 16 bytes and per allocation 10: what a replay holds for the whole trace, so
// nothing else is kept per allocation (an allocation's and its free's times are the times of
// its alloc and free operations).
struct ResolvedTrace {
  std::vector<ResolvedOp> ops;
  std::vector<std::uint64_t> op_time_ns;    // time of each op (for time series and runs)
  std::vector<std::uint64_t> alloc_size;    // by allocation id: requested bytes
  std::vector<std::uint16_t> alloc_origin;  // by allocation id: index into Trace::origins()
  std::vector<Origin> origins;              // copy of the trace's origin table
  std::vector<RunInfo> runs;
  // The trace had no run markers: the whole trace is one run. A run_begin comes first and no
  // run_end follows (the run ends with the trace, after the last operation, so like any final
  // clean-up its release is not counted).
  bool implicit_run = false;
  Anomalies anomalies;
  BelowMinSize below_min_size;
  // The first anomalies (at most max_listed_anomalies), in trace order: a trace that disagrees
  // with its program is read from where it first does.
  static constexpr std::size_t max_listed_anomalies = 1000;
  std::vector<AnomalyAt> first_anomalies;
  // Which trace event each operation replays, kept only where the correspondence breaks:
  // operation k replays event e + (k - o) for the last break (o, e) with o <= k. A break follows
  // each event that is not replayed (segment events, marks, frees of nothing, failed allocs) and
  // each operation the resolver adds (which takes the event that caused it: the free of an
  // alloc over a live block, the end of a run a nested run_begin ends, the implicit run_begin).
  // So an operation still costs its 16 bytes, and a break 16 more. Empty when `ops` was not made
  // by resolve.
  struct OpEventBreak {
    std::uint64_t op = 0;
    std::uint64_t event = 0;
    bool operator==(const OpEventBreak&) const = default;
  };
  std::vector<OpEventBreak> op_event_breaks;
  std::uint64_t segment_allocs = 0;  // the recorded allocator's own upstream calls (not replayed)
  std::uint64_t segment_frees = 0;
  std::uint64_t segment_bytes_allocated = 0;
  // Those calls one by one, in trace order (so by before_op): rare beside the requests (one per
  // cudaMalloc of the recorded allocator), so a list of their own costs no memory per operation.
  std::vector<SegmentCall> segment_calls;
  // The in-place reallocs (operations marked realloc_in_place), by id: one entry each, a few
  // per realloc-heavy program and none in most traces.
  std::vector<InPlaceRealloc> in_place_reallocs;

  // The recorded allocator's state before the first event, when the trace carries one
  // (alloclab/format/start_state.hpp). Its block k is allocation id k, live before operation 0
  // and freed by the trace's frees as any other; no operation allocates it.
  std::optional<StartState> start_state;
  std::uint32_t start_blocks() const {
    return start_state ? static_cast<std::uint32_t>(start_state->blocks.size()) : 0;
  }

  std::uint64_t allocation_count() const { return alloc_size.size(); }
  std::uint64_t stream_of(std::uint32_t id) const { return origins[alloc_origin[id]].stream; }
  DeviceId device_of(std::uint32_t id) const { return origins[alloc_origin[id]].device; }
  // The index in the trace (counted from 0, as AnomalyAt::event) of the event operation `op`
  // replays; nullopt without op_event_breaks or past the last operation. O(log breaks).
  std::optional<std::uint64_t> event_of_op(std::uint64_t op) const;
  // The allocation whose block allocation `id` keeps, when its alloc is marked realloc_in_place;
  // nullopt otherwise. O(log in-place reallocs).
  std::optional<std::uint32_t> kept_for_realloc(std::uint32_t id) const;
};

// `source` names the trace in the InputError thrown for a damaged start state.
ResolvedTrace resolve(const Trace& trace, const std::string& source = "trace",
                      const ResolveOptions& options = {});

// Resolution of a trace that arrives in parts, in order (a streamed load, which never holds all
// the events at once). resolve(trace) is this with the whole trace as its only part, so both
// give the same result.
class StreamResolver {
 public:
  // `expected_events` (0 if unknown) sizes the operation columns once, so they never grow by
  // copying (which would briefly hold them twice).
  explicit StreamResolver(std::uint64_t expected_events = 0, std::string source = "trace",
                          const ResolveOptions& options = {});
  ~StreamResolver();
  StreamResolver(const StreamResolver&) = delete;
  StreamResolver& operator=(const StreamResolver&) = delete;

  // All the events of `part` come after those of the parts before. Its origin indices refer to
  // part.origins(), a table that parts share and that only grows from part to part. The first
  // part's metadata gives the start state.
  void add(const Trace& part);
  // `origins` is the final origin table (the last part's).
  ResolvedTrace finish(const std::vector<Origin>& origins);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace alloclab
