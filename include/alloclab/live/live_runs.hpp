#pragma once
// The runs of a live run (`alloclab run`), each counted as a replay counts its runs (RunTally:
// the same counters with the same meaning), for the live report. The first kMaxListed runs are
// listed, later ones only counted: a program that marks every step of a long job keeps a list
// of bounded size inside itself and in its report, and the totals cover every run anyway.
//
// The list lives in pages of its own, mapped by a system call rather than through the malloc
// family or mmap's symbol: a recorder preloaded beside `alloclab run`'s library (`run --record`)
// would record them as the program's allocations, and the replay of its trace would count them.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "alloclab/protocol/recorder_memory.hpp"
#include "alloclab/replay/metrics.hpp"
#include "alloclab/replay/run_tally.hpp"

namespace alloclab::live {

class LiveRuns {
 public:
  static constexpr std::size_t kMaxListed = 10'000;

  LiveRuns() = default;
  ~LiveRuns();
  LiveRuns(const LiveRuns&) = delete;
  LiveRuns& operator=(const LiveRuns&) = delete;

  // A run starts (at its run_begin, before the strategy's begin_run) in this state. `label`:
  // the marker's, kept as the recorder keeps it (protocol::kept_label_length).
  void open(const char* label, const RunTotals& now, std::uint64_t live, std::uint64_t reserved);
  // After each operation; cheap, and harmless outside a run.
  void observe(std::uint64_t live, std::uint64_t reserved) { tally_.observe(live, reserved); }
  // The open run ends here (after its run_end operation).
  void close(const RunTotals& now);
  bool is_open() const { return open_; }

  // The runs listed so far, a run still open included as the end of the operations closes it
  // (at `now`, its final clean-up not counted).
  std::vector<RunMetrics> listed(const RunTotals& now) const;
  // The runs, the open one included, that are not listed.
  std::uint64_t not_listed() const;

 private:
  // A listed run without a heap of its own: its label inline, as the recorder's label slot.
  struct Listed {
    std::uint64_t requests, hits, upstream_allocs, upstream_frees, evictions, peak_live_bytes,
        peak_reserved_bytes, slack_bytes, allocation_ticks;
    char label[protocol::label_bytes];
  };
  static RunMetrics metrics_of(const Listed& run);

  RunTally tally_;
  char label_[protocol::label_bytes] = {};  // the open run's
  bool open_ = false;
  Listed* listed_ = nullptr;      // kMaxListed of them, mapped at the first run; null until then
  std::size_t count_ = 0;         // listed so far
  std::uint64_t not_listed_ = 0;  // closed runs past the first kMaxListed
  bool unmappable_ = false;       // the pages could not be mapped: nothing is listed
};

}  // namespace alloclab::live
