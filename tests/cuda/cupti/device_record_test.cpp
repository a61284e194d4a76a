// graph_runtime recorded under `record --cuda` on a real device: the trace resolves with no
// anomalies and its counts are the program's own. Skips without a device.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>

#include "alloclab/format/alt/alt.hpp"
#include "alloclab/format/resolve.hpp"
#include "cuda_test_util.hpp"

namespace alloclab::test {
namespace {

#ifdef GRAPH_RUNTIME_PROGRAM
struct Counts {
  std::uint64_t runs = 0, allocations = 0, frees = 0;
};

Counts program_counts(const std::string& output) {
  std::smatch m;
  const std::regex line("graph_runtime: runs=(\\d+) allocations=(\\d+) frees=(\\d+)");
  Counts c;
  if (std::regex_search(output, m, line)) {
    c.runs = std::stoull(m[1]);
    c.allocations = std::stoull(m[2]);
    c.frees = std::stoull(m[3]);
  }
  return c;
}

void check_recording(const std::string& flags, const std::string& program_flags, bool host_too) {
  if (const std::string why = why_no_cuda_device(); !why.empty()) GTEST_SKIP() << why;
  if (host_too) ALLOCLAB_SKIP_UNDER_ASAN();
  CudaScratch scratch;
  const std::string trace = scratch.file("graph.alt");
  const CliResult r = run_cli("record --cuda --run-range run " + flags + " -o " + trace + " -- " +
                              GRAPH_RUNTIME_PROGRAM + " --runs 5 " + program_flags);
  ASSERT_EQ(r.status, 0) << r.output;
  const Counts own = program_counts(r.output);
  ASSERT_EQ(own.runs, 5u) << r.output;
  const Trace recorded = read_alt(trace);
  Trace device_only;
  for (std::size_t i = 0; i < recorded.size(); ++i)
    if (recorded.device(i) != cpu_device || recorded.op(i) >= Op::run_begin)
      device_only.push_back(recorded.event(i));
  const ResolvedTrace resolved = resolve(device_only);
  EXPECT_EQ(resolved.anomalies.total(), 0u);
  EXPECT_EQ(resolved.anomalies.leaks, 0u);
  EXPECT_EQ(resolved.allocation_count(), own.allocations);
  EXPECT_EQ(resolved.runs.size(), 5u);
  if (host_too) {
    EXPECT_GT(recorded.size(), device_only.size());
    EXPECT_EQ(resolve(recorded).anomalies.total(), 0u);
  }
}
#endif

TEST(CudaDeviceRecord, graph_runtime_cuda_malloc_counts_match_and_resolve_cleanly) {
#ifdef GRAPH_RUNTIME_PROGRAM
  check_recording("", "", false);
#else
  GTEST_SKIP() << "graph_runtime was not built";
#endif
}

TEST(CudaDeviceRecord, graph_runtime_stream_ordered_counts_match_and_resolve_cleanly) {
#ifdef GRAPH_RUNTIME_PROGRAM
  check_recording("", "--async", false);
#else
  GTEST_SKIP() << "graph_runtime was not built";
#endif
}

TEST(CudaDeviceRecord, graph_runtime_with_host_allocations_in_the_same_trace) {
#ifdef GRAPH_RUNTIME_PROGRAM
  check_recording("--cpu", "", true);
#else
  GTEST_SKIP() << "graph_runtime was not built";
#endif
}

TEST(CudaDeviceRecord, follow_exec_traces_each_worker_process_into_its_own_file) {
#ifdef GRAPH_RUNTIME_PROGRAM
  if (const std::string why = why_no_cuda_device(); !why.empty()) GTEST_SKIP() << why;
  CudaScratch scratch;
  const std::string trace = scratch.file("launcher.alt");
  // A launcher that never uses CUDA starts two workers that do (fork + exec, like torchrun).
  const std::string worker = std::string(GRAPH_RUNTIME_PROGRAM) + " --runs 2";
  const CliResult r = run_cli("record --cuda --follow-exec -o " + trace + " -- sh -c '" + worker +
                              " & " + worker + " --async; wait'");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("the started process wrote no trace"), std::string::npos) << r.output;
  std::vector<std::string> followers;
  for (const auto& entry : std::filesystem::directory_iterator(scratch.file("")))
    if (entry.path().string().ends_with(".cuda.alt")) followers.push_back(entry.path().string());
  ASSERT_EQ(followers.size(), 2u) << r.output;
  std::uint64_t traced_allocations = 0;
  for (const std::string& file : followers) {
    EXPECT_NE(r.output.find(file), std::string::npos) << "not in the summary: " << file;
    const Trace t = read_alt(file);
    const ResolvedTrace resolved = resolve(t);
    EXPECT_EQ(resolved.anomalies.total(), 0u) << file;
    // No --run-range: no markers, so the whole trace is one implicit run.
    EXPECT_TRUE(resolved.implicit_run) << file;
    EXPECT_EQ(resolved.runs.size(), 1u) << file;
    traced_allocations += resolved.allocation_count();
    EXPECT_EQ(t.metadata.value("image", ""), "follower") << file;
  }
  // Both workers print their own counts; together they are what the traces hold.
  std::uint64_t own = 0;
  const std::regex line("graph_runtime: runs=(\\d+) allocations=(\\d+) frees=(\\d+)");
  for (std::sregex_iterator m(r.output.begin(), r.output.end(), line), end; m != end; ++m)
    own += std::stoull((*m)[2]);
  EXPECT_EQ(traced_allocations, own) << r.output;
#else
  GTEST_SKIP() << "graph_runtime was not built";
#endif
}

}  // namespace
}  // namespace alloclab::test
