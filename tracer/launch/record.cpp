// `alloclab record`: runs a program under the recorders, waits for it and its writers, and
// summarises the traces they wrote.
#include "alloclab/launch/record.hpp"
#include "alloclab/protocol/environment.hpp"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "alloclab/format/alt/alt.hpp"
#include "alloclab/format/output_files.hpp"
#include "alloclab/format/resolve.hpp"
#include "alloclab/launch/program_wait.hpp"
#include "alloclab/launch/record_files.hpp"

namespace alloclab::launch {
namespace {

std::string preload_library() {
  if (const char* env = std::getenv("ALLOCLAB_PRELOAD"); env && *env) return env;
  const std::filesystem::path library = library_dir() / "liballoclab_preload.so";
  if (!std::filesystem::exists(library))
    throw std::runtime_error("preload library not found at " + library.string() +
                             " (set ALLOCLAB_PRELOAD)");
  return library.string();
}

std::string absolute(const std::string& path) {
  return std::filesystem::absolute(path).lexically_normal().string();
}

// The child: environment for the tracer, then exec. Only async-signal-safe-ish calls matter
// little here (the parent is single-threaded), but nothing returns: exit 127 if exec fails.
[[noreturn]] void exec_traced(const RecordOptions& options, const std::string& library,
                              const std::string& output, int status_pipe,
                              const std::string& cuda_injection) {
  for (const auto& [name, value] : options.environment) setenv(name.c_str(), value.c_str(), 1);
  if (options.cuda.preload()) {
    std::string preload = library;
    if (!options.also_preload.empty()) preload += ":" + options.also_preload;
    if (const char* existing = std::getenv("LD_PRELOAD"); existing && *existing)
      preload += std::string(":") + existing;
    setenv("LD_PRELOAD", preload.c_str(), 1);
    setenv(protocol::env_output, cpu_trace_path(options.cuda, output).c_str(), 1);
  }
  if (options.cuda.cuda) set_cuda_environment(options.cuda, cuda_injection, output);
  setenv(protocol::env_min_size, std::to_string(options.min_size).c_str(), 1);
  setenv(protocol::env_stacks, std::to_string(options.stacks).c_str(), 1);
  setenv(protocol::env_time_resolution, std::to_string(options.time_resolution).c_str(), 1);
  setenv(protocol::env_trace_pid, std::to_string(getpid()).c_str(), 1);
  std::vector<char*> argv;
  for (const std::string& arg : options.command) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  default_signals_for_program();
  execvp(argv[0], argv.data());
  const int error = errno;
  const ssize_t ignored = write(status_pipe, &error, sizeof error);
  (void)ignored;
  _exit(127);
}

}  // namespace

int record(const RecordOptions& options) {
  if (options.command.empty())
    throw std::invalid_argument("record: no command given (record -- CMD ...)");
  check_cuda_options(options.cuda);
  const std::string library = options.cuda.preload() ? preload_library() : std::string();
  const std::string cuda_injection = options.cuda.cuda ? cuda_injection_library() : std::string();
  if (options.output == "-")
    throw std::invalid_argument(
        "record: -o - would be standard output, which is the program's; name a file");
  OutputPlan outputs(options.force);
  // With --force the old trace is removed before the program runs: the program must not be it.
  outputs.input(find_program(options.command.front()));
  // The default name is made in the current directory once the program's pid is known.
  if (options.output.empty())
    outputs.directory(".");
  else
    outputs.output("-o", options.output);
  // Before the program runs: a trace that cannot be written would be found missing only after.
  outputs.check();
  if (!options.output.empty()) check_part_files(options.cuda, absolute(options.output));
  refuse_setid_program(options.command.front());
  if (!options.cuda.run_range.empty()) note_replaced_nvtx_injection("record");
  if (options.cuda.preload()) check_program_linkage(options.command.front());
  // The tracer never writes over a file (O_EXCL): what --force replaces goes first. A symbolic
  // link is removed itself, never the file it points to.
  if (options.force && !options.output.empty()) std::filesystem::remove(options.output);
  const TraceFileList files;

  // The default name needs the child's pid, so the child learns its output through a pipe.
  int names[2];
  int status_pipe[2];
  if (pipe2(names, O_CLOEXEC) != 0 || pipe2(status_pipe, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  std::fflush(nullptr);
  // The tracer's writer processes become this process's children when their parent, a short-
  // lived child of the program, exits: `record` can then wait for them.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  const auto started = std::chrono::steady_clock::now();
  const pid_t child = fork();
  if (child < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (child == 0) {
    close(names[1]);
    close(status_pipe[0]);
    std::string output;
    char c;
    while (read(names[0], &c, 1) == 1 && c != '\0') output += c;
    set_follow_environment(options.follow_fork, options.follow_exec, files.path());
    exec_traced(options, library, output, status_pipe[1], cuda_injection);
  }
  close(names[0]);
  close(status_pipe[1]);
  if (options.pid) *options.pid = child;
  const std::string base = std::filesystem::path(options.command.front()).filename().string();
  const std::string output =
      absolute(options.output.empty() ? "alloclab." + base + "." + std::to_string(child) + ".alt"
                                      : options.output);
  const ssize_t ignored = write(names[1], output.c_str(), output.size() + 1);
  (void)ignored;
  close(names[1]);

  struct rusage usage {};
  const int raw = wait_for_program(child, usage);
  if (options.wall_seconds)
    *options.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (options.usage) *options.usage = usage;
  wait_for_writer_processes(files);
  restore_signals();

  int exec_error = 0;
  const bool exec_failed = read(status_pipe[0], &exec_error, sizeof exec_error) ==
                           static_cast<ssize_t>(sizeof exec_error);
  close(status_pipe[0]);
  if (exec_failed) {
    std::fprintf(stderr, "alloclab: cannot run %s: %s\n", options.command.front().c_str(),
                 std::strerror(exec_error));
    return 127;
  }

  const int status = program_exit_status(raw, options.command.front());
  if (options.cuda.cuda) finish_cuda_record(options.cuda, output);
  const std::string written_as =
      options.cuda.preload() ? cpu_trace_path(options.cuda, output) : output;
  const std::vector<TracedFile> traced =
      merge_follower_traces(options.cuda, files.read(output, written_as));
  const bool summarized = summarize_traces(traced);
  explain_untraced(files.untraced(), child, options.command.front());
  return !summarized && status == 0 ? 2 : status;
}

}  // namespace alloclab::launch
