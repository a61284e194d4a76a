// `alloclab record --stacks N`: call stacks of allocations, deduplicated and named.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "alloclab/format/stacks.hpp"
#include "record_test_util.hpp"

namespace alloclab::test {
namespace {

// Allocations inside the run "sites" whose stack names `function` in any frame.
std::uint64_t allocations_from(const Trace& trace, const std::string& function) {
  std::uint64_t n = 0;
  bool inside = false;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    if (trace.op(i) == Op::run_begin) inside = trace.label(i) == "sites";
    if (trace.op(i) == Op::run_end) inside = false;
    if (!inside || trace.op(i) != Op::alloc || trace.stack_id(i) == 0) continue;
    for (std::uint32_t f : trace.stacks()[trace.stack_id(i) - 1])
      if (trace.frames()[f].function == function) {
        ++n;
        break;
      }
  }
  return n;
}

TEST(RecordStacks, two_call_sites_give_two_named_stacks) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ALLOCLAB_SKIP_UNDER_TSAN("the instrumented program's frames differ; checked in the plain build");
  ScratchDir dir;
  const std::string trace_path = dir.file("stacks.alt");
  const std::string counts = dir.file("counts.txt");
  const Recorded r =
      record(trace_path, std::string(TORTURE_STACKS) + " " + counts, {}, "--stacks 16");
  ASSERT_EQ(r.status, 0) << r.output;
  const Trace trace = read_alt(trace_path);
  EXPECT_TRUE(trace.warnings.empty());
  ASSERT_TRUE(trace.has_stacks());
  EXPECT_EQ(trace.metadata.value("stack_depth", 0), 16);

  std::set<std::uint32_t> site_stacks;
  for (std::size_t i = 0; i < trace.size(); ++i)
    if (trace.op(i) == Op::alloc && (trace.size_of(i) == 100 || trace.size_of(i) == 3000))
      site_stacks.insert(trace.stack_id(i));
  EXPECT_GE(site_stacks.size(), 2u);
  const auto counted = read_counts(counts);
  EXPECT_EQ(allocations_from(trace, "stacks_site_one"), counted.at("site_one"));
  EXPECT_EQ(allocations_from(trace, "stacks_site_two"), counted.at("site_two"));
  // Innermost first: the site itself, then its caller.
  for (std::uint32_t id : site_stacks) {
    if (id == 0) continue;
    const auto& frames = trace.stacks()[id - 1];
    ASSERT_GE(frames.size(), 2u);
    EXPECT_EQ(trace.frames()[frames[1]].function, "main");
  }
  // Unique stacks are stored once: 65 allocations from two loops make a handful of stacks.
  EXPECT_LT(trace.stacks().size(), 40u);
}

// The frame of stacks_site_two in the stack of each 3000-byte allocation of `trace`.
std::vector<StackFrame> site_two_frames(const Trace& trace) {
  std::vector<StackFrame> found;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    if (trace.op(i) != Op::alloc || trace.size_of(i) != 3000 || trace.stack_id(i) == 0) continue;
    for (std::uint32_t f : trace.stacks()[trace.stack_id(i) - 1])
      if (trace.frames()[f].function == "stacks_site_two") found.push_back(trace.frames()[f]);
  }
  return found;
}

TEST(RecordStacks, frames_of_a_program_with_debug_information_name_file_and_line) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ALLOCLAB_SKIP_UNDER_TSAN("the instrumented program's frames differ; checked in the plain build");
#ifndef ALLOCLAB_LIBDW
  GTEST_SKIP() << "built without libdw (ALLOCLAB_LIBDW): frames are not named";
#endif
  ScratchDir dir;
  const std::string trace_path = dir.file("lines.alt");
  const std::string counts = dir.file("counts.txt");
  const Recorded r =
      record(trace_path, std::string(TORTURE_STACKS) + " " + counts, {}, "--stacks 8");
  ASSERT_EQ(r.status, 0) << r.output;
  const Trace trace = read_alt(trace_path);
  const auto counted = read_counts(counts);
  const std::vector<StackFrame> frames = site_two_frames(trace);
  ASSERT_EQ(frames.size(), counted.at("site_two"));
  for (const StackFrame& frame : frames) {
    EXPECT_EQ(std::filesystem::path(frame.file).filename(), "stacks.c") << frame.file;
    EXPECT_EQ(frame.line, counted.at("site_two_line"));
    EXPECT_EQ(std::filesystem::path(frame.module).filename(), "torture_stacks");
  }
  const std::string where =
      "stacks_site_two (stacks.c:" + std::to_string(counted.at("site_two_line")) + ")";
  EXPECT_EQ(describe_frame(frames.front()), where);

  const CliResult text = run_shell(std::string(ALLOCLAB_CLI) + " info --stacks " + trace_path);
  ASSERT_EQ(text.status, 0) << text.output;
  EXPECT_NE(text.output.find("      " + where + "\n"), std::string::npos) << text.output;
  const CliResult json =
      run_shell(std::string(ALLOCLAB_CLI) + " info --json --stacks=1 " + trace_path);
  ASSERT_EQ(json.status, 0) << json.output;
  const auto j = nlohmann::json::parse(json.output.substr(json.output.find('{')));
  const auto& top = j["top_stacks_by_bytes"][0]["frames"][0];
  EXPECT_EQ(top["function"], "stacks_site_two");
  EXPECT_EQ(std::filesystem::path(top["file"].get<std::string>()).filename(), "stacks.c");
  EXPECT_EQ(top["line"], counted.at("site_two_line"));
}

TEST(RecordStacks, frames_of_a_program_without_debug_information_keep_function_and_module) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ALLOCLAB_SKIP_UNDER_TSAN("the instrumented program's frames differ; checked in the plain build");
  ScratchDir dir;
  const std::string trace_path = dir.file("nodebug.alt");
  const std::string counts = dir.file("counts.txt");
  const Recorded r =
      record(trace_path, std::string(TORTURE_STACKS_NODEBUG) + " " + counts, {}, "--stacks 8");
  ASSERT_EQ(r.status, 0) << r.output;
  const Trace trace = read_alt(trace_path);
  const std::vector<StackFrame> frames = site_two_frames(trace);
  ASSERT_EQ(frames.size(), read_counts(counts).at("site_two"));
  for (const StackFrame& frame : frames) {
    EXPECT_NE(frame.address, 0u);
    EXPECT_EQ(std::filesystem::path(frame.module).filename(), "torture_stacks_nodebug");
    EXPECT_EQ(frame.file, "");
    EXPECT_EQ(frame.line, 0u);
  }
  EXPECT_EQ(describe_frame(frames.front()), "stacks_site_two (torture_stacks_nodebug)");
}

TEST(RecordStacks, info_lists_the_sites_by_count_and_bytes) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ALLOCLAB_SKIP_UNDER_TSAN("the instrumented program's frames differ; checked in the plain build");
  ScratchDir dir;
  const std::string trace_path = dir.file("stacks.alt");
  ASSERT_EQ(record(trace_path, TORTURE_STACKS, {}, "--stacks 8").status, 0);
  const CliResult text = run_shell(std::string(ALLOCLAB_CLI) + " info --stacks " + trace_path);
  ASSERT_EQ(text.status, 0) << text.output;
  EXPECT_NE(text.output.find("top allocation stacks by bytes"), std::string::npos);
  EXPECT_NE(text.output.find("stacks_site_two (stacks.c:"), std::string::npos) << text.output;
  const CliResult json =
      run_shell(std::string(ALLOCLAB_CLI) + " info --json --stacks=3 " + trace_path);
  ASSERT_EQ(json.status, 0) << json.output;
  const auto j = nlohmann::json::parse(json.output.substr(json.output.find('{')));
  ASSERT_LE(j["top_stacks_by_bytes"].size(), 3u);
  // 25 x 3000 bytes is the most any one stack allocated in this program.
  EXPECT_EQ(j["top_stacks_by_bytes"][0]["bytes"], 75000u);
  EXPECT_EQ(j["top_stacks_by_bytes"][0]["frames"][0]["function"], "stacks_site_two");
}

TEST(RecordStacks, off_by_default) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  const std::string trace_path = dir.file("plain.alt");
  ASSERT_EQ(record(trace_path, TORTURE_STACKS).status, 0);
  const Trace trace = read_alt(trace_path);
  EXPECT_FALSE(trace.has_stacks());
  EXPECT_TRUE(trace.stacks().empty());
  EXPECT_EQ(trace.metadata.value("stack_depth", -1), 0);
  const CliResult info = run_shell(std::string(ALLOCLAB_CLI) + " info --stacks " + trace_path);
  EXPECT_NE(info.output.find("no call stacks in this trace"), std::string::npos) << info.output;
}

// The unwinder the build uses (libunwind with ALLOCLAB_LIBUNWIND, else backtrace()) is named in
// the metadata of a trace with stacks, and the frames start at the call sites either way (above).
TEST(RecordStacks, metadata_names_the_unwinder) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ALLOCLAB_SKIP_UNDER_TSAN("the instrumented program's frames differ; checked in the plain build");
  ScratchDir dir;
  const std::string with = dir.file("with.alt");
  ASSERT_EQ(record(with, TORTURE_STACKS, {}, "--stacks 4").status, 0);
  EXPECT_EQ(read_alt(with).metadata.value("unwinder", ""), ALLOCLAB_STACKS_UNWINDER);
  const std::string forced = dir.file("forced.alt");
  ASSERT_EQ(record(forced, TORTURE_STACKS, "ALLOCLAB_UNWINDER=backtrace", "--stacks 4").status, 0);
  const Trace trace = read_alt(forced);
  EXPECT_EQ(trace.metadata.value("unwinder", ""), "backtrace");
  EXPECT_GT(allocations_from(trace, "stacks_site_two"), 0u);
  const std::string without = dir.file("without.alt");
  ASSERT_EQ(record(without, TORTURE_STACKS).status, 0);
  EXPECT_FALSE(read_alt(without).metadata.contains("unwinder"));
}

// A handler that maps memory interrupts allocations, and so the unwinding, thousands of times:
// no deadlock, every allocation recorded with its stack. (The handler's own events are dropped
// while it interrupts an unwind, the tracer's guarded work, a map and its unmap together.)
TEST(RecordStacks, signal_handlers_interrupt_the_unwinder) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  const std::string trace_path = dir.file("signal.alt");
  const std::string counts_path = dir.file("counts.txt");
  const Recorded r =
      record(trace_path, std::string(TORTURE_SIGNAL) + " " + counts_path, {}, "--stacks 16");
  ASSERT_EQ(r.status, 0) << r.output;
  const Trace trace = read_alt(trace_path);
  const auto counts = read_counts(counts_path);
  const RunCounts c = count_in_runs(trace, "work");
  EXPECT_EQ(c.allocs, counts.at("allocs"));
  EXPECT_EQ(c.frees, counts.at("frees"));
  EXPECT_EQ(c.maps, c.unmaps);
  EXPECT_LE(c.maps, counts.at("maps"));
  EXPECT_EQ(resolve(trace).anomalies.total(), 0u);
  std::uint64_t without_stack = 0;
  for (std::size_t i = 0; i < trace.size(); ++i)
    without_stack +=
        trace.op(i) == Op::alloc && trace.kind(i) != MemoryKind::mapped && trace.stack_id(i) == 0;
  EXPECT_LE(without_stack, 2u);  // at most what the C runtime allocated before the constructor
}

// Eight threads, each unwinding for the first time. libunwind, a dlopened library, gets its
// thread-local storage from malloc on a thread's first unwind, and glibc frees it when the thread
// is joined: that block is recorded (without a stack, at most one or two per thread) so the trace
// still pairs up, with no free of an unknown block.
TEST(RecordStacks, threads_unwind_without_anomalies) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  const std::string trace_path = dir.file("threads.alt");
  const std::string counts_path = dir.file("counts.txt");
  const Recorded r =
      record(trace_path, std::string(TORTURE_THREADS) + " " + counts_path, {}, "--stacks 16");
  ASSERT_EQ(r.status, 0) << r.output;
  const Trace trace = read_alt(trace_path);
  const auto counts = read_counts(counts_path);
  std::uint64_t with_stack = 0, without_stack = 0;
  bool inside = false;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    if (trace.op(i) == Op::run_begin) inside = trace.label(i) == "work";
    if (trace.op(i) == Op::run_end) inside = false;
    if (inside && trace.op(i) == Op::alloc && trace.kind(i) != MemoryKind::mapped)
      ++(trace.stack_id(i) != 0 ? with_stack : without_stack);
  }
  EXPECT_EQ(with_stack, counts.at("allocs"));
  EXPECT_LE(without_stack, 16u);
  if (std::string(ALLOCLAB_STACKS_UNWINDER) == "backtrace") {
    EXPECT_EQ(without_stack, 0u);
  }
  const Anomalies a = resolve(trace).anomalies;
  EXPECT_EQ(a.total(), 0u) << "free_unknown " << a.free_unknown;
}

TEST(RecordStacks, rejects_a_depth_beyond_64) {
  ScratchDir dir;
  const Recorded r = record(dir.file("deep.alt"), TORTURE_STACKS, {}, "--stacks 65");
  EXPECT_NE(r.status, 0);
  EXPECT_FALSE(std::filesystem::exists(dir.file("deep.alt")));
}

TEST(RecordStacks, timestamps_are_rounded_to_the_resolution) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  const std::string coarse = dir.file("coarse.alt");
  ASSERT_EQ(record(coarse, TORTURE_STACKS, {}, "--time-resolution 1024").status, 0);
  const Trace trace = read_alt(coarse);
  ASSERT_GT(trace.size(), 0u);
  for (std::size_t i = 0; i < trace.size(); ++i) ASSERT_EQ(trace.time_ns(i) % 1024, 0u) << i;
  EXPECT_EQ(trace.metadata.value("time_resolution_ns", 0), 1024);
  EXPECT_NE(record(dir.file("odd.alt"), TORTURE_STACKS, {}, "--time-resolution 100").status, 0);
}

}  // namespace
}  // namespace alloclab::test
