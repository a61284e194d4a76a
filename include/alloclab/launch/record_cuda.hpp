#pragma once
// `alloclab record --cuda [--cpu] [--run-range NAME]`: the CUDA side of record. The CUDA driver
// loads liballoclab_cuda.so into the program (CUDA_INJECTION64_PATH); with --cpu the preload
// tracer runs beside it, each writes its own part file, and the two are merged by time after
// the program ends.
#include <string>
#include <vector>

namespace alloclab::cuda {
struct SavedMaps;
}

#include "alloclab/format/trace.hpp"
#include "alloclab/launch/record_files.hpp"

namespace alloclab::launch {

struct CudaRecordOptions {
  bool cuda = false;      // --cuda: record CUDA allocations
  bool cpu = false;       // --cpu: with --cuda, host allocations too
  std::string run_range;  // --run-range: NVTX range name (glob) that makes runs

  // Whether the preload (host) tracer runs: always without --cuda, with it only for --cpu.
  bool preload() const { return !cuda || cpu; }
};

// Throws std::invalid_argument for combinations that mean nothing (--run-range or --cpu without
// --cuda)
// and std::runtime_error when this build has no CUDA tracer.
void check_cuda_options(const CudaRecordOptions& options);

// Where each tracer writes for the final trace `output`: the output itself when it is the only
// tracer, a part file next to it when both run.
std::string cpu_trace_path(const CudaRecordOptions& options, const std::string& output);
std::string cuda_trace_path(const CudaRecordOptions& options, const std::string& output);

// Throws when a part file of `output` exists already (left by an interrupted recording): it
// would be merged into the new trace.
void check_part_files(const CudaRecordOptions& options, const std::string& output);

// The injection library: $ALLOCLAB_CUDA_INJECTION, else lib/liballoclab_cuda.so beside bin/.
std::string cuda_injection_library();

// `--run-range` makes alloclab NVTX's injection library (NVTX_INJECTION64_PATH), and NVTX takes
// one: when the environment names another (a profiler's, such as Nsight Systems'), says on
// stderr that it will not see this run's ranges. `command` is record's or run's name.
void note_replaced_nvtx_injection(const char* command);

// In the child before exec: CUDA_INJECTION64_PATH, ALLOCLAB_CUDA_OUTPUT, and for --run-range
// ALLOCLAB_RUN_RANGE and NVTX_INJECTION64_PATH (the injection library too: it hands NVTX to the
// CUPTI that serves its callbacks).
void set_cuda_environment(const CudaRecordOptions& options, const std::string& injection,
                          const std::string& output);

// `record --cuda --stacks N`: the CUDA tracer's frames carry addresses only, and the maps of
// the program it saved beside the trace (tracer/cuda/saved_maps.hpp) name them here, after the
// program ended. name_saved_frames names each frame of `trace` with the snapshot that covers
// its index (libdwfl over the objects at the saved paths: function, file and line where debug
// information exists; the object's path at least). name_cuda_trace_file does that to the .alt
// at `path` when maps were saved for it, rewrites it and removes the maps; when it cannot, it
// says so and leaves the trace with addresses only.
void name_saved_frames(Trace& trace, const std::vector<cuda::SavedMaps>& snapshots);
void name_cuda_trace_file(const std::string& path);

// After the program ended: names the CUDA trace's frames (name_cuda_trace_file), merges the part
// files into `output` (--cpu), and explains a missing CUDA trace. Part files are removed once
// merged.
void finish_cuda_record(const CudaRecordOptions& options, const std::string& output);

// The traces of followed processes (all but files[0]) get their frames named (as above). With
// --cpu, a followed process (not the started one) writes a host trace, OUT.PID.alt, and a
// CUDA trace, OUT.PID.cuda.alt: they become one, merged by time under the host trace's name.
// Only where a pid wrote exactly one whole trace of each kind: with several images of one pid
// which host trace goes with which CUDA trace is unknown, and those stay apart (with a note).
// Returns `files` without the traces merged away.
std::vector<TracedFile> merge_follower_traces(const CudaRecordOptions& options,
                                              std::vector<TracedFile> files);

}  // namespace alloclab::launch
