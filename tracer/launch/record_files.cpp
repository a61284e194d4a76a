#include "alloclab/launch/record_files.hpp"

#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string_view>

#include "alloclab/format/alt/alt.hpp"
#include "alloclab/format/units.hpp"
#include "alloclab/launch/program_probe.hpp"
#include "alloclab/protocol/environment.hpp"

namespace alloclab::launch {

std::filesystem::path binary_dir() {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) throw std::runtime_error("cannot find the alloclab binary: " + error.message());
  return self.parent_path();
}

std::filesystem::path library_dir() {
  return binary_dir().parent_path() / "lib";
}
namespace {

std::uint64_t dropped_events(const Trace& trace) {
  // The tracer leaves a mark when it had to drop events (no memory for a buffer).
  const std::string_view dropped_mark = protocol::dropped_marker;
  std::uint64_t dropped = 0;
  for (std::size_t i = 0; i < trace.size(); ++i)
    if (trace.op(i) == Op::mark && trace.label(i).starts_with(dropped_mark))
      dropped += std::strtoull(std::string(trace.label(i).substr(dropped_mark.size())).c_str(),
                               nullptr, 10);
  return dropped;
}

// A tracer built with ThreadSanitizer (scripts/test-tsan) traces programs built with it.
bool tracer_runs_with(const std::string& runtime) {
#if defined(__SANITIZE_THREAD__)
  return runtime.starts_with("libtsan.so");
#else
  (void)runtime;
  return false;
#endif
}

}  // namespace

std::string find_program(const std::string& command) {
  if (command.find('/') != std::string::npos) return command;
  const char* path = std::getenv("PATH");
  std::string_view dirs = path && *path ? path : "/usr/local/bin:/usr/bin:/bin";
  while (true) {
    const std::size_t colon = dirs.find(':');
    const std::string dir(dirs.substr(0, colon));
    const std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + command;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
    if (colon == std::string_view::npos) return {};
    dirs.remove_prefix(colon + 1);
  }
}

TraceFileList::TraceFileList() {
  std::string pattern = (std::filesystem::temp_directory_path() / "alloclab-files-XXXXXX").string();
  const int fd = ::mkstemp(pattern.data());
  if (fd < 0) throw std::runtime_error("cannot create a file list in the temporary directory");
  ::close(fd);
  path_ = pattern;
}

TraceFileList::~TraceFileList() {
  ::unlink(path_.c_str());
}

std::vector<TracedFile> TraceFileList::read(const std::string& root,
                                            const std::string& root_written_as) const {
  std::vector<TracedFile> files{{root, {}}};
  std::ifstream in(path_);
  std::string line;
  while (std::getline(in, line)) {
    const bool incomplete = line.starts_with(protocol::list_incomplete);
    if (!incomplete && !line.starts_with(protocol::list_trace)) continue;
    std::string path =
        line.substr((incomplete ? protocol::list_incomplete : protocol::list_trace).size());
    std::string why;
    if (incomplete) {
      const std::size_t tab = path.find('\t');
      if (tab == std::string::npos) continue;
      why = path.substr(tab + 1);
      path.resize(tab);
    }
    if (path == root_written_as) path = root;
    TracedFile* known = nullptr;
    for (TracedFile& file : files)
      if (file.path == path) known = &file;
    if (!known) known = &files.emplace_back(TracedFile{path, {}});
    if (!why.empty()) known->incomplete = why;
  }
  return files;
}

UntracedImages TraceFileList::untraced() const {
  UntracedImages images;
  std::ifstream in(path_);
  std::string line;
  while (std::getline(in, line)) {
    const bool exec = line.starts_with(protocol::list_untraced_exec);
    if (!exec && !line.starts_with(protocol::list_untraced_fork)) continue;
    const char* number = line.c_str() + line.find(' ') + 1;
    char* end = nullptr;
    const long pid = std::strtol(number, &end, 10);
    if (end == number) continue;
    if (exec)
      images.execs.emplace_back(pid, *end == ' ' ? std::string(end + 1) : std::string("?"));
    else
      images.forks.push_back(pid);
  }
  return images;
}

std::vector<long> TraceFileList::writer_processes() const {
  std::vector<long> pids;
  std::ifstream in(path_);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.starts_with(protocol::list_writer)) continue;
    const char* number = line.c_str() + line.find(' ') + 1;
    char* end = nullptr;
    const long pid = std::strtol(number, &end, 10);
    if (end != number && pid > 0) pids.push_back(pid);
  }
  return pids;
}

void wait_for_writer_processes(const TraceFileList& files, int patience_ms) {
  int waited_ms = 0;
  for (const long pid : files.writer_processes()) {
    for (;;) {
      int status = 0;
      const pid_t done = ::waitpid(static_cast<pid_t>(pid), &status, WNOHANG | __WALL);
      if (done != 0 && !(done < 0 && errno == EINTR)) break;  // ended, or not ours to wait for
      if (waited_ms >= patience_ms) {
        std::fprintf(stderr,
                     "alloclab: warning: the tracer's writer process %ld has not finished after "
                     "%d s; its trace may lack the last events\n",
                     pid, patience_ms / 1000);
        return;
      }
      ::usleep(1000);  // a writer ends within milliseconds of its program as a rule
      ++waited_ms;
    }
  }
}

void explain_untraced(const UntracedImages& untraced, long root_pid, const std::string& command) {
  std::size_t root_execs = 0;
  std::string root_became;
  std::size_t other_execs = 0;
  std::string other_example;
  for (const auto& [pid, program] : untraced.execs) {
    if (pid == root_pid) {
      ++root_execs;
      root_became = program;  // a shim's chain (bash, env, ...) ends in the program that matters
    } else if (other_execs++ == 0) {
      other_example = program;
    }
  }
  if (root_execs == 1)
    std::fprintf(stderr,
                 "alloclab: note: %s replaced itself by exec with %s, which was not traced: the "
                 "trace holds only what ran before; --follow-exec traces it too\n",
                 command.c_str(), root_became.c_str());
  else if (root_execs > 1)
    std::fprintf(stderr,
                 "alloclab: note: %s replaced itself by exec %zu times, the last with %s; none "
                 "was traced: the trace holds only what ran before; --follow-exec traces them "
                 "too\n",
                 command.c_str(), root_execs, root_became.c_str());
  if (other_execs > 0)
    std::fprintf(stderr,
                 "alloclab: note: %zu %s%s started by exec %s not traced (the first: %s); "
                 "--follow-exec traces %s\n",
                 other_execs, root_execs > 0 ? "other " : "",
                 other_execs == 1 ? "program" : "programs", other_execs == 1 ? "was" : "were",
                 other_example.c_str(), other_execs == 1 ? "it" : "them");
  const std::size_t forks = untraced.forks.size();
  if (forks > 0)
    std::fprintf(stderr, "alloclab: note: %zu forked %s not traced; --follow-fork traces %s\n",
                 forks, forks == 1 ? "process was" : "processes were", forks == 1 ? "it" : "them");
}

void set_follow_environment(bool follow_fork, bool follow_exec, const std::string& list) {
  setenv(protocol::env_follow_fork, follow_fork ? "1" : "0", 1);
  setenv(protocol::env_follow_exec, follow_exec ? "1" : "0", 1);
  setenv(protocol::env_file_list, list.c_str(), 1);
  // Seeded here so that the program's first image changes it in place (see lifecycle.hpp).
  setenv(protocol::env_started_pid, "0", 1);
}

void refuse_setid_program(const std::string& command) {
  const std::string program = find_program(command);
  struct stat st {};
  if (program.empty() || ::stat(program.c_str(), &st) != 0) return;  // exec reports it
  const bool setuid = st.st_mode & S_ISUID;
  const bool setgid = (st.st_mode & S_ISGID) && (st.st_mode & S_IXGRP);
  if (setuid || setgid)
    throw std::runtime_error(
        "record: refusing to trace " + program + ": it is " + (setuid ? "setuid" : "setgid") +
        " (the loader ignores LD_PRELOAD there); trace a copy without the bit");
  // File capabilities make exec a secure execution too, unless the user has every capability
  // already (root).
  if (::geteuid() != 0 && ::getxattr(program.c_str(), "security.capability", nullptr, 0) > 0)
    throw std::runtime_error("record: refusing to trace " + program +
                             ": it has file capabilities (the loader ignores LD_PRELOAD there "
                             "for a user other than root); trace a copy without them");
}

void check_program_linkage(const std::string& command) {
  const std::string program = find_program(command);
  if (program.empty()) return;  // exec reports it
  const ProgramProbe probe = probe_program(program);
  if (probe.foreign)
    std::fprintf(stderr,
                 "alloclab: warning: %s is not a 64-bit little-endian program: the tracer cannot "
                 "load into it (the loader skips it), so none of its allocations can be "
                 "recorded\n",
                 program.c_str());
  if (!probe.elf) return;  // a script: its interpreter is what runs
  const std::string runtime = sanitizer_runtime(probe.needed);
  if (!runtime.empty() && !tracer_runs_with(runtime))
    throw std::runtime_error(
        "record: refusing to trace " + program + ": it is built with a sanitizer (" + runtime +
        "), whose runtime replaces malloc and does not run with the tracer loaded "
        "(AddressSanitizer stops the program, ThreadSanitizer crashes it, LeakSanitizer leaves "
        "no trace). Record a build without -fsanitize");
  if (!probe.dynamic)
    std::fprintf(stderr,
                 "alloclab: warning: %s is statically linked: the dynamic loader, which brings "
                 "the tracer in (LD_PRELOAD), never runs in it, so none of its allocations can "
                 "be recorded (programs it starts by exec can, with --follow-exec)\n",
                 program.c_str());
  if (!probe.defines.empty()) {
    std::string names;
    for (const std::string& name : probe.defines) names += (names.empty() ? "" : ", ") + name;
    std::fprintf(stderr,
                 "alloclab: warning: %s defines %s itself (an allocator or a sanitizer runtime "
                 "linked into it): its calls to them reach its own code before the tracer, which "
                 "sees only what that passes on to the C library\n",
                 program.c_str(), names.c_str());
  }
}

bool summarize_traces(const std::vector<TracedFile>& files) {
  bool any_written = false;
  for (std::size_t f = 0; f < files.size(); ++f) {
    const TracedFile& file = files[f];
    if (!std::filesystem::exists(file.path)) {
      // The started process may leave the work to children (a launcher whose workers use CUDA).
      if (f == 0 && files.size() > 1)
        std::fprintf(stderr, "alloclab: the started process wrote no trace (%s)\n",
                     file.path.c_str());
      else
        std::fprintf(stderr, "alloclab: no trace was written to %s (did the program start?)\n",
                     file.path.c_str());
      continue;
    }
    any_written = true;
    // Chunk headers and counts only: reading a large trace back here would take longer than
    // some programs run. The tracer's dropped-events mark is in the last chunk.
    AltLoadStats stats;
    const Trace trace = read_alt_tail(file.path, &stats);
    for (const std::string& warning : trace.warnings)
      std::fprintf(stderr, "alloclab: warning: %s\n", warning.c_str());
    const double per_event = stats.events == 0 ? 0.0
                                               : static_cast<double>(stats.file_bytes) /
                                                     static_cast<double>(stats.events);
    std::fprintf(stderr, "alloclab: recorded %s (%.2f bytes/event, %llu dropped) to %s\n",
                 counted(stats.events, "event").c_str(), per_event,
                 static_cast<unsigned long long>(dropped_events(trace)), file.path.c_str());
    if (!file.incomplete.empty())
      std::fprintf(stderr,
                   "alloclab: warning: %s is incomplete: tracing stopped, cannot write: %s\n",
                   file.path.c_str(), file.incomplete.c_str());
  }
  return any_written;
}

}  // namespace alloclab::launch
