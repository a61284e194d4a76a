// Every allocation API the CUDA tracer claims, called for real under `record --cuda`: the trace
// holds exactly the events the program says it caused (address, size, memory kind, stream, pool),
// in its order, and nothing else. Skips without a device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "alloclab/format/alt/alt.hpp"
#include "alloclab/format/resolve.hpp"
#include "cuda_test_util.hpp"

namespace alloclab::test {
namespace {

struct Expected {
  bool alloc = false;
  std::string api;
  std::string kind;
  std::uint64_t size = 0, address = 0, stream = 0, pool = 0;
};

std::uint64_t hex(const std::string& text) {
  return std::stoull(text, nullptr, 16);
}

std::vector<Expected> program_account(const std::string& output) {
  std::vector<Expected> expected;
  const std::regex alloc(
      "every_api: alloc api=(\\w+) kind=([\\w-]+) size=(\\d+) address=0x([0-9a-f]+) "
      "stream=0x([0-9a-f]+) pool=0x([0-9a-f]+)");
  const std::regex free("every_api: free api=(\\w+) kind=([\\w-]+) address=0x([0-9a-f]+)");
  std::size_t start = 0;
  while (start < output.size()) {
    std::size_t end = output.find('\n', start);
    if (end == std::string::npos) end = output.size();
    const std::string line = output.substr(start, end - start);
    start = end + 1;
    std::smatch m;
    if (std::regex_match(line, m, alloc))
      expected.push_back({true, m[1], m[2], std::stoull(m[3]), hex(m[4]), hex(m[5]), hex(m[6])});
    else if (std::regex_match(line, m, free))
      expected.push_back({false, m[1], m[2], 0, hex(m[3]), 0, 0});
  }
  return expected;
}

TEST(CudaDeviceRecord, every_allocation_api_is_recorded_as_the_program_made_it) {
#ifdef EVERY_API_PROGRAM
  if (const std::string why = why_no_cuda_device(); !why.empty()) GTEST_SKIP() << why;
  CudaScratch scratch;
  const std::string trace_file = scratch.file("every-api.alt");
  const CliResult r = run_cli("record --cuda -o " + trace_file + " -- " + EVERY_API_PROGRAM);
  ASSERT_EQ(r.status, 0) << r.output;
  const std::vector<Expected> expected = program_account(r.output);
  // 37, and the zero-byte request's 1 or 2 when CUDA made it an allocation.
  ASSERT_GE(expected.size(), 37u) << r.output;
  std::uint64_t failed = 0;
  for (const Expected& e : expected) failed += e.alloc && e.address == 0;

  const Trace trace = read_alt(trace_file);
  std::vector<std::size_t> recorded;
  for (std::size_t i = 0; i < trace.size(); ++i)
    if (trace.op(i) == Op::alloc || trace.op(i) == Op::free) recorded.push_back(i);
  EXPECT_EQ(recorded.size(), expected.size()) << r.output;

  // Every mismatch is reported, not only the first: a device run is rare and each one counts.
  for (std::size_t k = 0; k < std::min(recorded.size(), expected.size()); ++k) {
    const std::size_t i = recorded[k];
    const Expected& e = expected[k];
    const std::string where = "event " + std::to_string(k) + " (" + e.api + ")";
    EXPECT_EQ(trace.op(i), e.alloc ? Op::alloc : Op::free) << where;
    EXPECT_EQ(trace.address(i), e.address) << where;
    EXPECT_EQ(std::string(to_string(trace.kind(i))), e.kind) << where;
    EXPECT_EQ(trace.device(i), 0) << where;
    if (e.alloc) {
      EXPECT_EQ(trace.size_of(i), e.size) << where;
      EXPECT_EQ(trace.stream(i), e.stream) << where;
      EXPECT_EQ(trace.pool(i), e.pool) << where;
    }
  }
  const ResolvedTrace resolved = resolve(trace);
  EXPECT_EQ(resolved.anomalies.total(), 0u);
  EXPECT_EQ(resolved.anomalies.failed_allocs, failed);
  EXPECT_GE(failed, 1u);
  EXPECT_EQ(resolved.anomalies.leaks, 0u);
#else
  GTEST_SKIP() << "every_api was not built (no CUDA driver library)";
#endif
}

}  // namespace
// --stacks N: each allocation carries the host stack of the program's call, the tracer's,
// CUPTI's, the driver's and the (shared) runtime's frames left out, named after the program
// ended: the first cudaMalloc, of 512 bytes, is main's own call. Frees carry none.
TEST(CudaDeviceRecord, stacks_name_the_programs_allocating_function_innermost) {
#ifdef EVERY_API_PROGRAM
  if (const std::string why = why_no_cuda_device(); !why.empty()) GTEST_SKIP() << why;
  CudaScratch scratch;
  const std::string trace_file = scratch.file("every-api-stacks.alt");
  const CliResult r =
      run_cli("record --cuda --stacks 8 -o " + trace_file + " -- " + EVERY_API_PROGRAM);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_FALSE(std::filesystem::exists(trace_file + ".maps"));
  const Trace trace = read_alt(trace_file);
  std::optional<std::size_t> first_malloc;
  std::size_t allocs = 0, allocs_with_stack = 0;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    if (trace.op(i) == Op::free) {
      EXPECT_EQ(trace.stack_id(i), 0u) << "event " << i;
    }
    if (trace.op(i) != Op::alloc) continue;
    ++allocs;
    allocs_with_stack += trace.stack_id(i) != 0;
    if (!first_malloc && trace.size_of(i) == 512 && trace.kind(i) == MemoryKind::device)
      first_malloc = i;
  }
  EXPECT_EQ(allocs_with_stack, allocs);
  ASSERT_TRUE(first_malloc.has_value());
  const std::uint32_t id = trace.stack_id(*first_malloc);
  ASSERT_NE(id, 0u);
  const std::vector<std::uint32_t>& stack = trace.stacks()[id - 1];
  ASSERT_FALSE(stack.empty());
  ASSERT_LE(stack.size(), 8u);
  const StackFrame& inner = trace.frames()[stack.front()];
  EXPECT_EQ(inner.module, std::filesystem::canonical(EVERY_API_PROGRAM).string());
#ifdef ALLOCLAB_LIBDW
  EXPECT_EQ(inner.function, "main");
#endif
  EXPECT_EQ(trace.metadata.value("stack_depth", 0), 8);
#else
  GTEST_SKIP() << "every_api was not built (no CUDA driver library)";
#endif
}

}  // namespace alloclab::test
