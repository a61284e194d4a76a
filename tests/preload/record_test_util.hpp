#pragma once
// Running torture programs under `alloclab record` and reading back what they and the trace say.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "alloclab/format/alt/alt.hpp"
#include "alloclab/format/resolve.hpp"
#include "sanitizer_skips.hpp"
#include "tests/cli/cli_test_util.hpp"

namespace alloclab::test {

// A fresh directory per test, removed afterwards.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "alloclab-tracer-XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// alloclab record's exit status and everything it printed.
using Recorded = CliResult;

inline Recorded record(const std::string& trace, const std::string& command,
                       const std::string& env = {}, const std::string& options = {}) {
  return run_shell(env + " " + ALLOCLAB_CLI + " record " + options + " -o " + trace + " -- " +
                   command);
}

inline std::map<std::string, std::uint64_t> read_counts(const std::string& path) {
  std::map<std::string, std::uint64_t> counts;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const auto eq = line.find('=');
    if (eq != std::string::npos) counts[line.substr(0, eq)] = std::stoull(line.substr(eq + 1));
  }
  return counts;
}

// What happened inside the runs labelled `label`.
struct RunCounts {
  std::uint64_t runs = 0;
  std::uint64_t allocs = 0;
  std::uint64_t frees = 0;
  std::uint64_t maps = 0;
  std::uint64_t unmaps = 0;
  std::map<std::uint64_t, std::uint64_t> allocs_by_alignment;
};

inline RunCounts count_in_runs(const Trace& trace, const std::string& label) {
  RunCounts c;
  bool inside = false;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    switch (trace.op(i)) {
      case Op::run_begin:
        inside = trace.label(i) == label;
        c.runs += inside;
        break;
      case Op::run_end:
        inside = false;
        break;
      case Op::alloc:
        if (!inside) break;
        if (trace.kind(i) == MemoryKind::mapped) {
          ++c.maps;
        } else {
          ++c.allocs;
          ++c.allocs_by_alignment[trace.alignment(i)];
        }
        break;
      case Op::free:
        if (inside) ++(trace.kind(i) == MemoryKind::mapped ? c.unmaps : c.frees);
        break;
      case Op::mark:
        break;
    }
  }
  return c;
}

}  // namespace alloclab::test
