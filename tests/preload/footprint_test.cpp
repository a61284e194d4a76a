// The tracer adds nothing of its own to what a program does: no event of its own in the trace
// (its initialisation, its libraries' constructors, its writer, its unwinder), and no library
// but itself in the program. The program is tests/preload/programs/footprint.c.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <string>

#include "record_test_util.hpp"

namespace alloclab::test {
namespace {

std::set<std::string> lines_of(const std::string& path) {
  std::set<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.insert(line);
  return lines;
}

std::string file_name(const std::string& path) {
  return path.substr(path.rfind('/') + 1);
}

TEST(RecordFootprint, a_program_that_allocates_nothing_records_no_event) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  for (const char* options : {"", "--stacks 8"}) {
    const std::string trace = dir.file(std::string("t") + (*options ? "s" : "") + ".alt");
    const Recorded r = record(trace, std::string(TORTURE_FOOTPRINT) + " none", {}, options);
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("recorded 0 events"), std::string::npos) << options << r.output;
    EXPECT_EQ(read_alt(trace).size(), 0u) << options;
  }
}

TEST(RecordFootprint, a_program_with_n_allocations_records_exactly_those) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  constexpr std::uint64_t n = 10000;
  for (const char* options : {"", "--stacks 8"}) {
    const std::string trace = dir.file(std::string("t") + (*options ? "s" : "") + ".alt");
    const Recorded r =
        record(trace, std::string(TORTURE_FOOTPRINT) + " exact " + std::to_string(n), {}, options);
    ASSERT_EQ(r.status, 0) << r.output;
    const Trace t = read_alt(trace);
    ASSERT_EQ(t.size(), 2 * n) << options;
    std::uint64_t allocs = 0, with_stack = 0;
    for (std::size_t i = 0; i < t.size(); ++i) {
      allocs += t.op(i) == Op::alloc;
      with_stack += t.op(i) == Op::alloc && t.stack_id(i) != 0;
    }
    EXPECT_EQ(allocs, n) << options;
    EXPECT_EQ(resolve(t).anomalies.total(), 0u) << options;
    if (*options) {
      EXPECT_EQ(with_stack, n) << "every allocation has its stack";
    }
  }
}

// libunwind's first unwind on a thread has glibc allocate its thread-local storage, which glibc
// frees when the thread is joined: neither is the program's.
TEST(RecordFootprint, threads_whose_stacks_are_taken_show_no_block_of_the_unwinder) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  const std::string trace = dir.file("t.alt");
  const std::string counts = dir.file("c.txt");
  const Recorded r = record(
      trace, std::string(TORTURE_FOOTPRINT) + " threads " + counts + " 16 500", {}, "--stacks 8");
  ASSERT_EQ(r.status, 0) << r.output;
  const Trace t = read_alt(trace);
  EXPECT_EQ(resolve(t).anomalies.total(), 0u);
  // Every host allocation in the run has a stack: glibc's for the threads (taken on the main
  // thread) and the workers' own.
  bool inside = false;
  std::uint64_t allocs = 0, without_stack = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t.op(i) == Op::run_begin || t.op(i) == Op::run_end) inside = t.op(i) == Op::run_begin;
    if (!inside || t.op(i) != Op::alloc || t.kind(i) != MemoryKind::host) continue;
    ++allocs;
    without_stack += t.stack_id(i) == 0;
  }
  EXPECT_GE(allocs, read_counts(counts).at("allocs"));
  EXPECT_EQ(without_stack, 0u);
}

// The tracer needs the C library alone; the program sees exactly one more object, the tracer.
TEST(RecordFootprint, the_tracer_adds_only_itself_to_a_programs_libraries) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  const std::string plain = dir.file("plain.txt");
  const std::string traced = dir.file("traced.txt");
  ASSERT_EQ(run_shell(std::string(TORTURE_FOOTPRINT) + " objects " + plain).status, 0);
  const Recorded r =
      record(dir.file("t.alt"), std::string(TORTURE_FOOTPRINT) + " objects " + traced);
  ASSERT_EQ(r.status, 0) << r.output;
  const std::set<std::string> before = lines_of(plain), after = lines_of(traced);
  std::set<std::string> added;
  std::set_difference(after.begin(), after.end(), before.begin(), before.end(),
                      std::inserter(added, added.end()));
  ASSERT_EQ(added.size(), 1u) << r.output;
  EXPECT_EQ(file_name(*added.begin()), "liballoclab_preload.so");
  EXPECT_TRUE(std::includes(after.begin(), after.end(), before.begin(), before.end()));
}

}  // namespace
}  // namespace alloclab::test
