// `alloclab record -- CMD ARGS...`: runs CMD with the preload tracer and writes its trace.
#include <CLI/CLI.hpp>

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <string.h>
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
#include "alloclab/trace/resolve.hpp"
#include "cli_common.hpp"

namespace alloclab::cli {
namespace {

struct RecordOptions {
  std::string output;
  std::uint64_t min_size = 0;
  std::vector<std::string> command;
};

std::string preload_library() {
  if (const char* env = std::getenv("ALLOCLAB_PRELOAD"); env && *env) return env;
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) throw std::runtime_error("cannot find the alloclab binary: " + error.message());
  const std::filesystem::path library =
      self.parent_path().parent_path() / "lib" / "liballoclab_preload.so";
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
                              const std::string& output, int status_pipe) {
  std::string preload = library;
  if (const char* existing = std::getenv("LD_PRELOAD"); existing && *existing)
    preload += std::string(":") + existing;
  setenv("LD_PRELOAD", preload.c_str(), 1);
  setenv("ALLOCLAB_OUTPUT", output.c_str(), 1);
  setenv("ALLOCLAB_MIN_SIZE", std::to_string(options.min_size).c_str(), 1);
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

void run_record(const RecordOptions& options) {
  if (options.command.empty())
    throw std::invalid_argument("record: no command given (record -- CMD ...)");
  const std::string library = preload_library();
  if (!options.output.empty() && std::filesystem::exists(options.output))
    throw std::runtime_error(options.output + " exists; choose another name or remove it");

  // The default name needs the child's pid, so the child learns its output through a pipe.
  int names[2];
  int status_pipe[2];
  if (pipe2(names, O_CLOEXEC) != 0 || pipe2(status_pipe, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  std::fflush(nullptr);
  const pid_t child = fork();
  if (child < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (child == 0) {
    close(names[1]);
    close(status_pipe[0]);
    std::string output;
    char c;
    while (read(names[0], &c, 1) == 1 && c != '\0') output += c;
    exec_traced(options, library, output, status_pipe[1]);
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
  }, old_int{}, old_quit{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGQUIT, &ignore, &old_quit);
  int raw = 0;
  while (waitpid(child, &raw, 0) < 0 && errno == EINTR) {
  }
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

  if (!std::filesystem::exists(output)) {
    std::fprintf(stderr, "alloclab: no trace was written to %s (did the program start?)\n",
                 output.c_str());
    if (status == 0) set_exit_status(2);
    return;
  }
  AltLoadStats stats;
  const Trace trace = read_alt(output, &stats);
  for (const std::string& warning : trace.warnings)
    std::fprintf(stderr, "alloclab: warning: %s\n", warning.c_str());
  // The tracer leaves a mark when it had to drop events (no memory for a buffer).
  std::uint64_t dropped = 0;
  static constexpr std::string_view dropped_mark = "alloclab:dropped=";
  for (std::size_t i = 0; i < trace.size(); ++i)
    if (trace.op(i) == Op::mark && trace.label(i).starts_with(dropped_mark))
      dropped += std::strtoull(std::string(trace.label(i).substr(dropped_mark.size())).c_str(),
                               nullptr, 10);
  const double per_event =
      trace.empty() ? 0.0
                    : static_cast<double>(stats.file_bytes) / static_cast<double>(trace.size());
  std::fprintf(stderr, "alloclab: recorded %s events (%.2f bytes/event, %llu dropped) to %s\n",
               grouped(trace.size()).c_str(), per_event, static_cast<unsigned long long>(dropped),
               output.c_str());
}

}  // namespace

void add_record_command(CLI::App& app) {
  auto options = std::make_shared<RecordOptions>();
  CLI::App* cmd = app.add_subcommand(
      "record", "Run a program and record its allocations (record [-o FILE.alt] -- CMD ARGS...)");
  cmd->add_option("-o,--output", options->output,
                  "trace file to create (default: alloclab.CMD.PID.alt here)");
  cmd->add_option("--min-size", options->min_size,
                  "record only blocks of at least this many usable bytes");
  cmd->add_option("command", options->command, "the program and its arguments, after --")
      ->required();
  cmd->callback([options] { run_record(*options); });
}

}  // namespace alloclab::cli
