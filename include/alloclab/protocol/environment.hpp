#pragma once
// What `alloclab record` (tracer/launch) and the recorders (tracer/preload, its writer,
// tracer/cuda) say to each other outside the shared memory: the environment variables record
// sets for the program (they travel from image to image), the lines of the list of files the
// recorders append to, and the marker a trace ends with when events were dropped. Spelled once,
// here; header-only and allocation-free (the preload recorder links no C++ runtime).
#include <string_view>

namespace alloclab::protocol {

// Set by record for the program:
inline constexpr char env_output[] = "ALLOCLAB_OUTPUT";  // the first image's trace (preload)
inline constexpr char env_cuda_output[] = "ALLOCLAB_CUDA_OUTPUT";  // the CUDA recorder's trace
inline constexpr char env_file_list[] = "ALLOCLAB_FILE_LIST";      // the list below: record made it
inline constexpr char env_min_size[] = "ALLOCLAB_MIN_SIZE";        // --min-size
inline constexpr char env_stacks[] = "ALLOCLAB_STACKS";            // --stacks
inline constexpr char env_time_resolution[] = "ALLOCLAB_TIME_RESOLUTION";  // --time-resolution
inline constexpr char env_follow_fork[] = "ALLOCLAB_FOLLOW_FORK";  // "1": children are traced
inline constexpr char env_follow_exec[] = "ALLOCLAB_FOLLOW_EXEC";  // "1": exec'd images are
inline constexpr char env_run_range[] = "ALLOCLAB_RUN_RANGE";      // --run-range (CUDA, a glob)
// The pid of the process record started: an image of it is the first one unless exec'd.
inline constexpr char env_trace_pid[] = "ALLOCLAB_TRACE_PID";
// Seeded "0" by record; the first image sets it to its pid, so an image that finds it non-zero
// was started by exec.
inline constexpr char env_started_pid[] = "ALLOCLAB_STARTED_PID";
// Set by `alloclab run` for its library in the program (tracer/live):
inline constexpr char env_live_spec[] = "ALLOCLAB_LIVE_SPEC";              // -s SPEC
inline constexpr char env_live_min_size[] = "ALLOCLAB_LIVE_MIN_SIZE";      // --min-size
inline constexpr char env_live_report_dir[] = "ALLOCLAB_LIVE_REPORT_DIR";  // live.PID.txt there
inline constexpr char env_live_markers[] = "ALLOCLAB_LIVE_MARKERS";  // "1": runs from markers only
// For tests and experiments: the writer's flush period in ms, the unwinder ("backtrace"), the
// writer program to start instead of the one next to the preload library.
inline constexpr char env_flush_period_ms[] = "ALLOCLAB_FLUSH_PERIOD_MS";
inline constexpr char env_unwinder[] = "ALLOCLAB_UNWINDER";
inline constexpr char env_writer_program[] = "ALLOCLAB_WRITER_PROGRAM";

// Lines the recorders append to the file list (each line written whole, by one write):
//   trace PATH              a trace an image wrote (or is writing)
//   incomplete PATH<TAB>WHY  its writer stopped writing it
//   untraced-exec PID EXE   an image started by exec and left untraced (no --follow-exec)
//   untraced-fork PID       a forked child left untraced (no --follow-fork)
//   writer PID              a writer process: record waits for it before it reads the traces
inline constexpr std::string_view list_trace = "trace ";
inline constexpr std::string_view list_incomplete = "incomplete ";
inline constexpr std::string_view list_untraced_exec = "untraced-exec ";
inline constexpr std::string_view list_untraced_fork = "untraced-fork ";
inline constexpr std::string_view list_writer = "writer ";

// The label of the mark a trace ends with when the recorder had to drop events, then their
// count: "alloclab:dropped=N".
inline constexpr std::string_view dropped_marker = "alloclab:dropped=";

}  // namespace alloclab::protocol
