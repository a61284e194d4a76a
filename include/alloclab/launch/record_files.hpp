#pragma once
// `alloclab record`'s side of following a program's processes and of output safety: the list of
// trace files the tracer fills in (tracer/preload/lifecycle.hpp describes the protocol), the
// refusal of setuid/setgid programs, and one summary line per file written.
#include <filesystem>
#include <string>
#include <vector>

namespace alloclab::launch {

// The folder of the running program (build/bin, or bin/ of an installed tree), where the
// programs installed beside alloclab are (alloclab-gui).
std::filesystem::path binary_dir();
// Where the recorders are: lib/ beside the bin/ folder of the running program (the build tree
// and an installed tree alike).
std::filesystem::path library_dir();

struct TracedFile {
  std::string path;
  std::string incomplete;  // why the tracer stopped writing it; empty when it is whole
};

// Images the tracer saw but did not trace (without --follow-exec, --follow-fork).
struct UntracedImages {
  std::vector<std::pair<long, std::string>> execs;  // (pid, program) in the order they started
  std::vector<long> forks;                          // pids of forked children
};

class TraceFileList {
 public:
  // An empty list file (mode 0600) in the temporary directory, removed again by the destructor.
  TraceFileList();
  ~TraceFileList();
  TraceFileList(const TraceFileList&) = delete;
  TraceFileList& operator=(const TraceFileList&) = delete;

  const std::string& path() const { return path_; }
  // The files in the order their images started; `root` first, also when its tracer listed
  // nothing (or listed it as `root_written_as`, the name the tracer wrote before a merge).
  std::vector<TracedFile> read(const std::string& root, const std::string& root_written_as) const;
  UntracedImages untraced() const;
  // The writer processes the tracer started ("writer PID"), in the order they started.
  std::vector<long> writer_processes() const;

 private:
  std::string path_;
};

// Waits for the tracer's writer processes: a program that was killed leaves its writer to write
// the last events and close the file, and `record` reads the files after that. `record` is the
// child subreaper of what it runs (so a writer, which is nobody's child in the program, is its
// child). At most `patience_ms` for them all; says which ones it gave up on.
void wait_for_writer_processes(const TraceFileList& files, int patience_ms = 60000);

// In the child, before exec: what the tracer follows, and where it lists its files.
void set_follow_environment(bool follow_fork, bool follow_exec, const std::string& list);

// Where execvp would find `command`: itself when it names a path, else the first executable
// regular file of that name on PATH (empty when there is none).
std::string find_program(const std::string& command);

// Throws std::runtime_error when `command` (looked up on PATH as execvp does) is setuid or
// setgid: the loader ignores LD_PRELOAD there, and a tracer has no business in such a process.
void refuse_setid_program(const std::string& command);

// Looks at `command`'s ELF file before it runs: throws std::runtime_error for a program built
// with a sanitizer (none runs with the tracer loaded), warns on stderr when the tracer cannot
// see its allocations (statically linked; defines malloc itself).
void check_program_linkage(const std::string& command);

// A note per kind of image left untraced, naming the flag that traces it. `root_pid` is the
// started program's: when it replaced itself by exec (a wrapper script, a version manager's
// shim), the note says that the trace holds only what ran before.
void explain_untraced(const UntracedImages& untraced, long root_pid, const std::string& command);

// One line per file: events, bytes per event, dropped events; a warning for an incomplete one.
// Returns false when no file at all was written (the first, the program's own, may be missing
// when only its children wrote traces).
bool summarize_traces(const std::vector<TracedFile>& files);

}  // namespace alloclab::launch
