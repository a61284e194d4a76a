#pragma once
// Which processes of a program `alloclab record --cuda` traces, and under which names. The
// process `record` started writes ALLOCLAB_CUDA_OUTPUT. Any other process that initialises CUDA
// (a child started with fork + exec, like the workers of torchrun or of Python's
// multiprocessing, or a forked child of a parent that never used CUDA) loads the tracer too; with
// --follow-fork or --follow-exec it writes a trace of its own, <stem>.<pid>.cuda.alt, and lists it
// in ALLOCLAB_FILE_LIST for `record` to report. A forked child of a process that did use CUDA
// cannot use CUDA itself (the driver refuses) and has nothing to record.
#include <cstdint>
#include <string>

namespace alloclab::cuda {

struct ProcessDecision {
  bool traced = false;
  bool root = false;    // the process `record` started: it writes the output itself
  bool follow = false;  // --follow-fork or --follow-exec: other processes are traced too
};

// The trace's metadata "image": "root" for the process `record` started, "follower" for any
// other, and "exec" for a later image of the started process (it exec'd after an earlier image
// wrote the output, so this one writes under a follower's name).
const char* image_label(const ProcessDecision& process, bool took_follower_name);

// `owner`: ALLOCLAB_TRACE_PID (0: not set: the process is traced as the root). `follow`: either
// follow flag is on.
ProcessDecision decide_process(std::uint64_t owner, std::uint64_t pid, bool follow);

// The trace of a process other than the root: `output` (ALLOCLAB_CUDA_OUTPUT) without its ".alt"
// or ".cuda.part" ending, then .<pid>.cuda.alt; .<pid>.2.cuda.alt and on when an earlier process
// with the same pid (pids are reused) took the name.
std::string follower_trace_path(const std::string& output, std::uint64_t pid, int attempt);

// Appends "trace PATH" to the list `record` made (never creates it; nothing when `list` is null
// or empty). One write(2) with O_APPEND, so lines of concurrent processes never interleave.
void list_trace_file(const char* list, const std::string& path);

}  // namespace alloclab::cuda
