// `alloclab record -- CMD ARGS...`: runs CMD with the preload tracer and writes its trace.
#include <CLI/CLI.hpp>

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "alloclab/trace/alt.hpp"
#include "alloclab/trace/output_files.hpp"
#include "alloclab/trace/resolve.hpp"
#include "cli_common.hpp"
#include "record_cuda.hpp"
#include "record_files.hpp"
#include "validators.hpp"

namespace alloclab::cli {
namespace {

struct RecordOptions {
  std::string output;
  std::uint64_t min_size = 0;
  unsigned stacks = 0;
  std::uint64_t time_resolution = 64;
  bool follow_fork = false;
  bool follow_exec = false;
  bool force = false;
  std::vector<std::string> command;
  CudaRecordOptions cuda;
};

std::string preload_library() {
  if (const char* env = std::getenv("ALLOCLAB_PRELOAD"); env && *env) return env;
  const std::filesystem::path library =
      binary_dir().parent_path() / "lib" / "liballoclab_preload.so";
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
  if (options.cuda.preload()) {
    std::string preload = library;
    if (const char* existing = std::getenv("LD_PRELOAD"); existing && *existing)
      preload += std::string(":") + existing;
    setenv("LD_PRELOAD", preload.c_str(), 1);
    setenv("ALLOCLAB_OUTPUT", cpu_trace_path(options.cuda, output).c_str(), 1);
  }
  if (options.cuda.cuda) set_cuda_environment(options.cuda, cuda_injection, output);
  setenv("ALLOCLAB_MIN_SIZE", std::to_string(options.min_size).c_str(), 1);
  setenv("ALLOCLAB_STACKS", std::to_string(options.stacks).c_str(), 1);
  setenv("ALLOCLAB_TIME_RESOLUTION", std::to_string(options.time_resolution).c_str(), 1);
  setenv("ALLOCLAB_TRACE_PID", std::to_string(getpid()).c_str(), 1);
  std::vector<char*> argv;
  for (const std::string& arg : options.command) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  signal(SIGINT, SIG_DFL);
  signal(SIGQUIT, SIG_DFL);
  execvp(argv[0], argv.data());
  const int error = errno;
  const ssize_t ignored = write(status_pipe, &error, sizeof error);
  (void)ignored;
  _exit(127);
}

// SIGTERM sent to `record` alone (kill, a batch system stopping the job) is meant for the
// program: passed on, it ends the program, and record still summarises.
volatile sig_atomic_t g_traced_child = 0;

void pass_signal_on(int signal) {
  if (g_traced_child > 0) kill(static_cast<pid_t>(g_traced_child), signal);
}

void run_record(const RecordOptions& options) {
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
  const std::string base = std::filesystem::path(options.command.front()).filename().string();
  const std::string output =
      absolute(options.output.empty() ? "alloclab." + base + "." + std::to_string(child) + ".alt"
                                      : options.output);
  const ssize_t ignored = write(names[1], output.c_str(), output.size() + 1);
  (void)ignored;
  close(names[1]);

  // The terminal sends ^C and ^\ to the whole process group: the child decides what they mean.
  struct sigaction ignore {
  }, pass_on{}, old_int{}, old_quit{}, old_term{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGQUIT, &ignore, &old_quit);
  g_traced_child = child;
  pass_on.sa_handler = pass_signal_on;
  sigemptyset(&pass_on.sa_mask);
  sigaction(SIGTERM, &pass_on, &old_term);
  int raw = 0;
  while (waitpid(child, &raw, 0) < 0 && errno == EINTR) {
  }
  g_traced_child = 0;  // first: its pid may be reused once reaped
  wait_for_writer_processes(files);
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);

  int exec_error = 0;
  const bool exec_failed = read(status_pipe[0], &exec_error, sizeof exec_error) ==
                           static_cast<ssize_t>(sizeof exec_error);
  close(status_pipe[0]);
  if (exec_failed) {
    std::fprintf(stderr, "alloclab: cannot run %s: %s\n", options.command.front().c_str(),
                 std::strerror(exec_error));
    set_exit_status(127);
    return;
  }

  int status = 0;
  if (WIFSIGNALED(raw)) {
    std::fprintf(stderr, "alloclab: %s killed by signal %d (%s)\n", options.command.front().c_str(),
                 WTERMSIG(raw), strsignal(WTERMSIG(raw)));
    status = 128 + WTERMSIG(raw);
  } else {
    status = WEXITSTATUS(raw);
  }
  set_exit_status(status);

  if (options.cuda.cuda) finish_cuda_record(options.cuda, output);
  const std::string written_as =
      options.cuda.preload() ? cpu_trace_path(options.cuda, output) : output;
  const std::vector<TracedFile> traced =
      merge_follower_traces(options.cuda, files.read(output, written_as));
  if (!summarize_traces(traced) && status == 0) set_exit_status(2);
  explain_untraced(files.untraced(), child, options.command.front());
}

}  // namespace

void add_record_command(CLI::App& app) {
  auto options = std::make_shared<RecordOptions>();
  CLI::App* cmd = app.add_subcommand(
      "record", "Run a program and record its allocations (record [-o FILE.alt] -- CMD ARGS...)");
  cmd->add_option("-o,--output", options->output,
                  "trace file to create (default: alloclab.CMD.PID.alt here)")
      ->type_name("FILE");
  cmd->add_flag("-f,--force", options->force,
                "replace the -o file if it exists (it is removed before the program runs)");
  cmd->add_option("--min-size", options->min_size,
                  "record only blocks of at least this many usable bytes")
      ->check(not_negative())
      ->type_name("BYTES");
  cmd->add_option(
         "--stacks", options->stacks,
         "record up to N frames (at most 64) of the call stack of every allocation (slow: ~1 us "
         "each)")
      ->check(CLI::Range(0, 64))
      ->type_name("N");
  cmd->add_option("--time-resolution", options->time_resolution,
                  "round timestamps down to this many nanoseconds, a power of two from 1 to 2^30 "
                  "(default 64)")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 30) &
              CLI::Validator(
                  [](const std::string& text) {
                    const std::uint64_t v = std::strtoull(text.c_str(), nullptr, 10);
                    return v != 0 && (v & (v - 1)) == 0 ? std::string()
                                                        : std::string("not a power of two");
                  },
                  "POWER_OF_TWO"))
      ->type_name("NS");
  cmd->add_flag("--follow-fork", options->follow_fork,
                "trace forked children too, each into <output stem>.<pid>.alt (with --cuda: "
                "also every other process that initialises CUDA, <stem>.<pid>.cuda.alt)");
  cmd->add_flag("--follow-exec", options->follow_exec,
                "trace programs started by exec too, each into <output stem>.<pid>.alt (with "
                "--cuda: as --follow-fork)");
  cmd->add_flag("--cuda", options->cuda.cuda,
                "record CUDA allocations (CUPTI injection; see docs/cuda-tracer.md)");
  cmd->add_flag("--cpu", options->cuda.cpu,
                "with --cuda: record host allocations into the same trace too");
  cmd->add_option("--run-range", options->cuda.run_range,
                  "with --cuda: each NVTX range whose name matches (a glob) is a run")
      ->type_name("GLOB");
  cmd->add_option("command", options->command, "the program and its arguments, after --")
      ->required();
  cmd->callback([options] { run_record(*options); });
}

}  // namespace alloclab::cli
