// `alloclab run`: the program under the live library, then the reports its processes wrote.
#include "alloclab/launch/run.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "alloclab/launch/program_wait.hpp"
#include "alloclab/launch/record.hpp"
#include "alloclab/launch/record_files.hpp"
#include "alloclab/protocol/environment.hpp"

namespace alloclab::launch {
namespace {

std::string live_library() {
  if (const char* env = std::getenv("ALLOCLAB_LIVE_LIBRARY"); env && *env) return env;
  const std::filesystem::path library = library_dir() / "liballoclab_live.so";
  if (!std::filesystem::exists(library))
    throw std::runtime_error("live library not found at " + library.string() +
                             " (set ALLOCLAB_LIVE_LIBRARY)");
  return library.string();
}

// `run --cuda`'s library, preloaded after the live one. Not built without the CUDA toolkit.
std::string live_cuda_library() {
  if (const char* env = std::getenv("ALLOCLAB_LIVE_CUDA_LIBRARY"); env && *env) return env;
  const std::filesystem::path library = library_dir() / "liballoclab_live_cuda.so";
  if (!std::filesystem::exists(library))
    throw std::runtime_error(
        "run --cuda: the CUDA live library was not found at " + library.string() +
        (ALLOCLAB_HAVE_CUDA ? " (set ALLOCLAB_LIVE_CUDA_LIBRARY)"
                            : " (this alloclab was built without the CUDA toolkit)"));
  return library.string();
}

// A private folder for the processes' reports, removed with what is in it.
class ReportFolder {
 public:
  ReportFolder() {
    std::string pattern = (std::filesystem::temp_directory_path() / "alloclab-run.XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr)
      throw std::runtime_error("cannot make a temporary folder: " + std::string(strerror(errno)));
    path_ = pattern;
  }
  ~ReportFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ReportFolder(const ReportFolder&) = delete;
  ReportFolder& operator=(const ReportFolder&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::vector<std::pair<std::string, std::string>> live_environment(const RunOptions& options,
                                                                  const std::string& folder) {
  const bool ranges = !options.run_range.empty();
  std::vector<std::pair<std::string, std::string>> environment{
      {protocol::env_live_spec, options.spec},
      {protocol::env_live_min_size, std::to_string(options.min_size)},
      {protocol::env_live_report_dir, folder},
      {protocol::env_live_markers, options.markers || ranges ? "1" : "0"}};
  if (ranges) {
    // The CUDA live library is NVTX's injection (tracer/live/nvtx_runs.cpp), as libcupti is
    // under `record --cuda --run-range`.
    environment.emplace_back(protocol::env_run_range, options.run_range);
    environment.emplace_back("NVTX_INJECTION64_PATH", live_cuda_library());
  }
  return environment;
}

// Without a trace: the program with the live library preloaded, waited for with its usage.
int run_plain(const RunOptions& options, const std::string& library, const std::string& folder,
              struct rusage& usage, double& wall_seconds, long& pid) {
  refuse_setid_program(options.command.front());
  check_program_linkage(options.command.front());
  int status_pipe[2];
  if (pipe2(status_pipe, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe: ") + strerror(errno));
  std::fflush(nullptr);
  const auto started = std::chrono::steady_clock::now();
  const pid_t child = fork();
  if (child < 0) throw std::runtime_error(std::string("fork: ") + strerror(errno));
  if (child == 0) {
    close(status_pipe[0]);
    for (const auto& [name, value] : live_environment(options, folder))
      setenv(name.c_str(), value.c_str(), 1);
    std::string preload = library;
    if (const char* existing = std::getenv("LD_PRELOAD"); existing && *existing)
      preload += std::string(":") + existing;
    setenv("LD_PRELOAD", preload.c_str(), 1);
    std::vector<char*> argv;
    for (const std::string& arg : options.command) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    default_signals_for_program();
    execvp(argv[0], argv.data());
    const int error = errno;
    const ssize_t ignored = write(status_pipe[1], &error, sizeof error);
    (void)ignored;
    _exit(127);
  }
  close(status_pipe[1]);
  pid = child;
  const int raw = wait_for_program(child, usage);
  wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  restore_signals();
  int exec_error = 0;
  const bool exec_failed = read(status_pipe[0], &exec_error, sizeof exec_error) ==
                           static_cast<ssize_t>(sizeof exec_error);
  close(status_pipe[0]);
  if (exec_failed) {
    std::fprintf(stderr, "alloclab: cannot run %s: %s\n", options.command.front().c_str(),
                 strerror(exec_error));
    return 127;
  }
  return program_exit_status(raw, options.command.front());
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

RunOutcome run(const RunOptions& options) {
  if (options.command.empty())
    throw std::invalid_argument("run: no command given (run -s SPEC -- CMD ...)");
  if (!options.run_range.empty() && !options.cuda)
    throw std::invalid_argument("run: --run-range needs --cuda (runs come from NVTX ranges)");
  if (!options.run_range.empty()) note_replaced_nvtx_injection("run");
  std::string library = live_library();
  if (options.cuda) library += ":" + live_cuda_library();
  const ReportFolder folder;
  RunOutcome outcome;
  struct rusage usage {};
  if (options.record_output.empty()) {
    outcome.status =
        run_plain(options, library, folder.path(), usage, outcome.wall_seconds, outcome.root_pid);
  } else {
    RecordOptions record_options;
    record_options.output = options.record_output;
    record_options.force = options.force;
    record_options.command = options.command;
    record_options.also_preload = library;
    record_options.environment = live_environment(options, folder.path());
    record_options.usage = &usage;
    record_options.wall_seconds = &outcome.wall_seconds;
    record_options.pid = &outcome.root_pid;
    outcome.status = record(record_options);
  }
  outcome.user_seconds = static_cast<double>(usage.ru_utime.tv_sec) +
                         static_cast<double>(usage.ru_utime.tv_usec) / 1e6;
  outcome.system_seconds = static_cast<double>(usage.ru_stime.tv_sec) +
                           static_cast<double>(usage.ru_stime.tv_usec) / 1e6;
  outcome.minor_faults = static_cast<std::uint64_t>(usage.ru_minflt);
  outcome.major_faults = static_cast<std::uint64_t>(usage.ru_majflt);
  outcome.peak_rss_bytes = static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;  // KiB on Linux

  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(folder.path()))
    files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  for (const std::filesystem::path& file : files) {
    live::LiveReport report =
        live::parse_live_report(read_file(file), "the report of " + file.filename().string());
    if (!report.device.empty()) {
      outcome.device_reports.push_back(std::move(report));
      continue;
    }
    const bool root = static_cast<long>(report.pid) == outcome.root_pid;
    outcome.reports.push_back(std::move(report));
    if (root) {
      std::rotate(outcome.reports.begin(), outcome.reports.end() - 1, outcome.reports.end());
      outcome.root_reported = true;
    }
  }
  // The started process's devices first, each process's in the order of its devices' files.
  std::stable_partition(
      outcome.device_reports.begin(), outcome.device_reports.end(),
      [&](const live::LiveReport& r) { return static_cast<long>(r.pid) == outcome.root_pid; });
  return outcome;
}

}  // namespace alloclab::launch
