#include "cli_common.hpp"

#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "alloclab/cli/help_format.hpp"
#include "alloclab/format/alt/alt.hpp"
#include "alloclab/format/alt/stream_load.hpp"
#include "alloclab/format/formats.hpp"
#include "alloclab/replay/report.hpp"

namespace alloclab::cli {
namespace {
namespace fs = std::filesystem;
int g_exit_status = 0;
std::string g_command_line;
}  // namespace

void set_command_line(int argc, char** argv) {
  g_command_line.clear();
  for (int i = 0; i < argc; ++i) {
    if (i) g_command_line += ' ';
    g_command_line += argv[i];
  }
}
const std::string& command_line() {
  return g_command_line;
}

int exit_status() {
  return g_exit_status;
}
void set_exit_status(int status) {
  g_exit_status = status;
}

void add_all_commands(CLI::App& app) {
  // Subcommands take their parent's formatter when they are added: set it first.
  app.formatter(std::make_shared<HelpFormatter>());
  add_info_command(app);
  add_convert_command(app);
  add_generate_command(app);
  add_replay_command(app);
  add_strategies_command(app);
  add_sweep_command(app);
  add_merge_command(app);
  add_advise_command(app);
  add_record_command(app);
  add_calibrate_command(app);
  add_gui_command(app);
}

namespace {

std::optional<TraceFormat> chosen_format(const std::string& format) {
  if (format.empty()) return std::nullopt;
  const std::optional<TraceFormat> chosen = parse_format(format);
  if (!chosen)
    throw std::invalid_argument("unknown format '" + format +
                                "' (accepted: alt, csv, rmm, torch, chrome)");
  return chosen;
}

void print_warnings(const std::vector<std::string>& warnings) {
  for (const std::string& warning : warnings)
    std::fprintf(stderr, "alloclab: warning: %s\n", warning.c_str());
}

// The format a trace is read as: the one given; else .alt when the file starts with its magic,
// whatever its name; else the one its name (and for .csv and .json its content) says.
TraceFormat input_format(const std::string& path, const std::optional<TraceFormat>& chosen) {
  if (chosen) return *chosen;
  return looks_like_alt(path) ? TraceFormat::alt : format_from_path(path);
}

LoadedTrace load_detected(const std::string& path, const std::optional<TraceFormat>& chosen,
                          TraceFormat detected) {
  LoadedTrace loaded;
  if (detected == TraceFormat::alt) {
    AltLoadStats stats;
    loaded.trace = read_alt(path, &stats);
    loaded.file_bytes = stats.file_bytes;
  } else if (!chosen && detected == TraceFormat::chrome) {
    loaded.trace = read_trace(path);  // a .json that is no snapshot: the reader says what it is
  } else {
    loaded.trace = read_trace(path, detected);
  }
  print_warnings(loaded.trace.warnings);
  return loaded;
}

}  // namespace

LoadedTrace load_trace(const std::string& path, const std::string& format) {
  const std::optional<TraceFormat> chosen = chosen_format(format);
  return load_detected(path, chosen, input_format(path, chosen));
}

ReplayInput load_for_replay(const std::string& path, const std::string& format) {
  ReplayInput input;
  const std::optional<TraceFormat> chosen = chosen_format(format);
  const TraceFormat detected = input_format(path, chosen);
  if (detected == TraceFormat::alt) {
    // Streamed: the whole trace's event columns would otherwise be held beside the resolved
    // trace, doubling the peak memory of a large trace's load.
    AltLoadStats stats;
    ResolvedLoad loaded = load_alt_resolved(path, &stats);
    print_warnings(loaded.summary.warnings);
    input.resolved = std::move(loaded.resolved);
    input.summary = std::move(loaded.summary);
    input.summary.file_bytes = stats.file_bytes;
  } else {
    const LoadedTrace loaded = load_detected(path, chosen, detected);
    input.resolved = resolve(loaded.trace);
    input.summary = summarize(loaded.trace, input.resolved);
    input.summary.file_bytes = loaded.file_bytes;
  }
  input.summary.source = path;
  return input;
}

void print_replay_notes(const TraceSummary& summary) {
  if (summary.implicit_run)
    std::printf("(no run markers in the trace: it is replayed as one run)\n");
  const Anomalies& a = summary.anomalies;
  if (a.total() == 0) return;
  std::string kinds;
  const std::pair<AnomalyKind, std::uint64_t> counts[] = {
      {AnomalyKind::free_unknown, a.free_unknown},
      {AnomalyKind::double_free, a.double_free},
      {AnomalyKind::alloc_over_live, a.alloc_over_live},
      {AnomalyKind::nested_run_begin, a.nested_run_begin},
      {AnomalyKind::run_end_outside_run, a.run_end_outside_run}};
  for (const auto& [kind, count] : counts)
    if (count > 0)
      kinds += (kinds.empty() ? "" : ", ") + std::string(to_string(kind)) + " " + grouped(count);
  std::printf(
      "(the trace has %s anomal%s (%s), repaired to be replayed: these numbers rest on the "
      "repaired trace; `alloclab info %s` says where they are)\n",
      grouped(a.total()).c_str(), a.total() == 1 ? "y" : "ies", kinds.c_str(),
      summary.source.c_str());
}

namespace {

// The temporary file being written, for the signal handler (a fixed buffer: no allocation there).
char g_temporary[4096];
constexpr int kCleanupSignals[] = {SIGINT, SIGTERM, SIGHUP};

extern "C" void remove_temporary_and_die(int sig) {
  ::unlink(g_temporary);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

// While alive, the signals that end a process by default remove the temporary file first.
class TemporaryFileGuard {
 public:
  explicit TemporaryFileGuard(const std::string& temporary) {
    if (temporary.size() >= sizeof g_temporary)
      throw std::runtime_error("output path too long: " + temporary);
    std::memcpy(g_temporary, temporary.c_str(), temporary.size() + 1);
    struct sigaction action = {};
    action.sa_handler = remove_temporary_and_die;
    sigemptyset(&action.sa_mask);
    for (std::size_t i = 0; i < std::size(kCleanupSignals); ++i)
      ::sigaction(kCleanupSignals[i], &action, &previous_[i]);
  }
  ~TemporaryFileGuard() {
    for (std::size_t i = 0; i < std::size(kCleanupSignals); ++i)
      ::sigaction(kCleanupSignals[i], &previous_[i], nullptr);
    ::unlink(g_temporary);  // gone already after a successful rename
  }
  TemporaryFileGuard(const TemporaryFileGuard&) = delete;
  TemporaryFileGuard& operator=(const TemporaryFileGuard&) = delete;

 private:
  struct sigaction previous_[std::size(kCleanupSignals)] = {};
};

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

}  // namespace

void write_atomically(const std::string& path,
                      const std::function<void(const std::string& temporary)>& write) {
  const fs::path target(path);
  const std::string temporary = (target.parent_path() / (".alloclab-" + std::to_string(::getpid()) +
                                                         "-" + target.filename().string()))
                                    .string();
  TemporaryFileGuard guard(temporary);
  try {
    write(temporary);
  } catch (const std::runtime_error& e) {
    // Writers name the file they were given, the hidden temporary; the user knows `path`.
    throw std::runtime_error(replace_all(replace_all(e.what(), temporary, path),
                                         fs::path(temporary).filename().string(), path));
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0)
    throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
}

void write_output(const std::string& path, const std::function<void(std::ostream&)>& write) {
  write_atomically(path, [&](const std::string& temporary) {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
    write(out);
    out.flush();
    if (!out) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
  });
}

void write_json_output(const std::string& path, const nlohmann::json& value) {
  // Streamed, not dump()ed: a report of a 100M-event trace would be a gigabyte-sized string.
  write_output(path, [&](std::ostream& out) {
    write_json(out, value, 1);
    out << '\n';
  });
}

std::filesystem::path binary_dir() {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) throw std::runtime_error("cannot find the alloclab binary: " + error.message());
  return self.parent_path();
}

}  // namespace alloclab::cli
