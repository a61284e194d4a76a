#pragma once
// `alloclab run`: runs a program with a strategy in front of its allocator (the live library,
// tracer/live), optionally recorded at the same time, and collects what each of its processes
// reported at exit.
#include <cstdint>
#include <string>
#include <vector>

#include "alloclab/live/live_report.hpp"

namespace alloclab::launch {

struct RunOptions {
  std::string spec;
  std::uint64_t min_size = 0;
  // The program marks its runs: none is assumed before its first marker.
  bool markers = false;
  std::string record_output;  // empty: no trace
  bool force = false;         // replace record_output if it exists
  // `--cuda`: the device allocations (cudaMalloc, cuMemAlloc) go through the strategy too.
  bool cuda = false;
  // `--run-range`, with `cuda`: every NVTX range whose name matches this glob is a run, as
  // `record --cuda --run-range` makes it one; runs then come from markers only (`markers`).
  std::string run_range;
  std::vector<std::string> command;
};

struct RunOutcome {
  // The program's exit status as record's (128 + N for signal N; 127 when it could not run).
  int status = 0;
  double wall_seconds = 0;
  double user_seconds = 0;
  double system_seconds = 0;
  std::uint64_t minor_faults = 0;
  std::uint64_t major_faults = 0;
  std::uint64_t peak_rss_bytes = 0;  // the largest of the program's processes
  long root_pid = 0;
  // What the processes reported, the started process first when it reported (its last image:
  // an exec keeps the pid). A process that did not exit normally (killed, _exit, exec) reports
  // nothing.
  std::vector<live::LiveReport> reports;
  bool root_reported = false;
  // The devices' reports (LiveReport::device set), the started process's first, each process's
  // in device order.
  std::vector<live::LiveReport> device_reports;
};

// Checks the program and the outputs first; throws std::runtime_error for what cannot be run
// or read (a report file that cannot be parsed names it), std::invalid_argument for options
// that mean nothing together.
RunOutcome run(const RunOptions& options);

}  // namespace alloclab::launch
