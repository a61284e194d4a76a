#pragma once
// `alloclab record`: runs a program under the recorders (the preload recorder, the CUDA one, or
// both), and afterwards waits for their writers, merges what must be merged and prints one
// summary line per trace.
#include <sys/resource.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "alloclab/launch/record_cuda.hpp"

namespace alloclab::launch {

struct RecordOptions {
  std::string output;  // empty: alloclab.CMD.PID.alt in the current directory
  std::uint64_t min_size = 0;
  unsigned stacks = 0;
  std::uint64_t time_resolution = 64;
  bool follow_fork = false;
  bool follow_exec = false;
  bool force = false;  // replace `output` if it exists (removed before the program runs)
  std::vector<std::string> command;
  CudaRecordOptions cuda;
  // For `alloclab run --record`: a library preloaded after the recorder (which then records
  // the program's calls, not the library's), and variables set for the program.
  std::string also_preload;
  std::vector<std::pair<std::string, std::string>> environment;
  // When set, receives the program's resource usage (wait4) and its wall time in seconds.
  struct rusage* usage = nullptr;
  double* wall_seconds = nullptr;
  long* pid = nullptr;  // receives the program's pid
};

// Checks everything that can be checked first (the outputs, the program), runs the program and
// returns record's exit status: the program's own (128 + N when signal N killed it), 127 when it
// could not be run, 2 when it succeeded but left no readable trace. Throws on bad options.
int record(const RecordOptions& options);

}  // namespace alloclab::launch
