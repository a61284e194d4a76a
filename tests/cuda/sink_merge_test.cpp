// The CUDA tracer's event sink (queue + writer thread -> .alt) and the --cpu merge.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "alloclab/format/alt/alt.hpp"
#include "alloclab/format/merge_by_time.hpp"
#include "alloclab/format/resolve.hpp"
#include "tests/cuda/tracer_test_util.hpp"
#include "tracer/cuda/sink.hpp"

namespace alloclab::cuda {
namespace {

using test::device_event;

std::string scratch_file(const std::string& name) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("alloclab-cuda-sink-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  std::filesystem::remove(path);
  return path.string();
}

TEST(CudaSink, events_reach_the_file_in_order_and_close_is_idempotent) {
  const std::string path = scratch_file("order.alt");
  {
    EventSink sink(path, {{"recorder", "test"}}, std::chrono::milliseconds(1));
    for (std::uint64_t i = 0; i < 1000; ++i) {
      sink.add(device_event(Op::alloc, 2 * i, 0x1000 + i * 16, 16));
      sink.add(device_event(Op::free, 2 * i + 1, 0x1000 + i * 16));
      if (i % 100 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    sink.close();
    sink.close();
    EXPECT_EQ(sink.events_written(), 2000u);
    EXPECT_TRUE(sink.healthy());
    sink.add(device_event(Op::alloc, 9999, 0x1));
    EXPECT_EQ(sink.dropped(), 1u);
  }
  const Trace trace = read_alt(path);
  ASSERT_EQ(trace.size(), 2000u);
  for (std::size_t i = 1; i < trace.size(); ++i) ASSERT_LT(trace.time_ns(i - 1), trace.time_ns(i));
  EXPECT_EQ(trace.metadata["recorder"], "test");
  EXPECT_EQ(trace.device(0), 0);
  EXPECT_EQ(trace.kind(0), MemoryKind::device);
  EXPECT_EQ(resolve(trace).anomalies.total(), 0u);
}

TEST(CudaSink, cuda_memory_kinds_survive_the_file_and_have_names) {
  const std::string path = scratch_file("kinds.alt");
  {
    EventSink sink(path, nlohmann::json::object());
    for (MemoryKind kind :
         {MemoryKind::managed, MemoryKind::pinned, MemoryKind::async_pool, MemoryKind::vmm}) {
      Event e = device_event(Op::alloc, 1, 0x1000 + static_cast<int>(kind), 4);
      e.kind = kind;
      e.stream = 0x7000 + static_cast<int>(kind);
      sink.add(e);
    }
  }
  const Trace trace = read_alt(path);
  ASSERT_EQ(trace.size(), 4u);
  EXPECT_EQ(trace.kind(2), MemoryKind::async_pool);
  EXPECT_EQ(trace.stream(2), 0x7005u);
  EXPECT_EQ(trace.kind(3), MemoryKind::vmm);
  EXPECT_EQ(to_string(MemoryKind::async_pool), "async-pool");
  EXPECT_EQ(to_string(MemoryKind::vmm), "vmm");
  EXPECT_EQ(parse_memory_kind("async-pool"), MemoryKind::async_pool);
  EXPECT_EQ(parse_memory_kind("vmm"), MemoryKind::vmm);
  EXPECT_FALSE(parse_memory_kind("async_pool"));
}

TEST(CudaSink, events_are_on_disk_before_close) {
  const std::string path = scratch_file("periodic.alt");
  EventSink sink(path, nlohmann::json::object(), std::chrono::milliseconds(5));
  sink.add(device_event(Op::alloc, 1, 0x10, 8));
  for (int i = 0; i < 400 && sink.events_written() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(sink.events_written(), 1u);
  EXPECT_EQ(read_alt(path).size(), 1u);  // readable while the sink is still open
}

TEST(CudaSink, an_existing_file_is_never_overwritten) {
  const std::string path = scratch_file("exists.alt");
  { EventSink first(path, nlohmann::json::object()); }
  EXPECT_THROW(EventSink(path, nlohmann::json::object()), std::system_error);
}

TEST(CudaMerge, merge_orders_by_time_and_keeps_ties_and_each_traces_order) {
  Trace cuda;
  cuda.push_back(device_event(Op::alloc, 10, 0x7f00, 100));
  cuda.push_back(device_event(Op::free, 30, 0x7f00));
  cuda.metadata["recorder"] = "cuda";
  Trace cpu;
  Event host;
  host.op = Op::alloc;
  host.time_ns = 10;      // tie with the CUDA alloc: CUDA's comes first
  host.address = 0x7f00;  // the same number on the CPU: a different address space
  host.size = 8;
  cpu.push_back(host);
  host.op = Op::free;
  host.time_ns = 20;
  host.size = 0;
  cpu.push_back(host);
  cpu.metadata["recorder"] = "cpu";
  cpu.warnings.push_back("cpu warning");

  const Trace merged = merge_by_time(cuda, cpu);
  ASSERT_EQ(merged.size(), 4u);
  EXPECT_EQ(merged.device(0), 0);
  EXPECT_EQ(merged.device(1), cpu_device);
  EXPECT_EQ(merged.time_ns(2), 20u);
  EXPECT_EQ(merged.device(3), 0);
  EXPECT_EQ(merged.metadata["recorder"], "cuda");
  EXPECT_EQ(merged.metadata["merged_trace"]["recorder"], "cpu");
  EXPECT_EQ(merged.warnings.size(), 1u);
  const ResolvedTrace resolved = resolve(merged);
  EXPECT_EQ(resolved.anomalies.total(), 0u);
  EXPECT_EQ(resolved.allocation_count(), 2u);
}

// `record --cuda --cpu --stacks N`: the host allocations' stacks (and any the other trace has)
// survive the merge, each event still naming its own frames.
TEST(CudaMerge, merge_keeps_the_call_stacks_of_both_traces) {
  Trace cuda;
  const std::uint32_t launch = cuda.add_frame({0x500, "launch", "/bin/prog", "/src/prog.cu", 7});
  cuda.push_back(device_event(Op::alloc, 10, 0x7f00, 100));
  cuda.set_stack_id(0, cuda.add_stack({launch}));
  cuda.push_back(device_event(Op::free, 40, 0x7f00));
  Trace cpu;
  const std::uint32_t main_frame = cpu.add_frame({0x400, "main", "/bin/prog"});
  const std::uint32_t site = cpu.add_frame({0x410, "site", "/bin/prog", "/src/prog.c", 12});
  const std::uint32_t one = cpu.add_stack({main_frame});
  const std::uint32_t two = cpu.add_stack({site, main_frame});
  Event host;
  host.op = Op::alloc;
  host.size = 8;
  for (std::uint64_t k = 0; k < 3; ++k) {
    host.time_ns = 5 + 10 * k;  // 5, 15, 25: before, between and after the CUDA events
    host.address = 0x1000 + 64 * k;
    cpu.push_back(host);
    cpu.set_stack_id(k, k == 1 ? one : two);
  }

  const Trace merged = merge_by_time(cuda, cpu);
  ASSERT_EQ(merged.size(), 5u);
  ASSERT_EQ(merged.frames().size(), 3u);
  ASSERT_EQ(merged.stacks().size(), 3u);
  auto innermost = [&](std::size_t i) {
    const std::uint32_t id = merged.stack_id(i);
    return id == 0 ? std::string("none") : merged.frames()[merged.stacks()[id - 1][0]].function;
  };
  // Time order: host 5, cuda 10, host 15, host 25, cuda free 40.
  EXPECT_EQ(innermost(0), "site");
  EXPECT_EQ(innermost(1), "launch");
  EXPECT_EQ(innermost(2), "main");
  EXPECT_EQ(innermost(3), "site");
  EXPECT_EQ(innermost(4), "none");
  const auto& site_stack = merged.stacks()[merged.stack_id(3) - 1];
  ASSERT_EQ(site_stack.size(), 2u);
  EXPECT_EQ(merged.frames()[site_stack[0]].line, 12u);
  EXPECT_EQ(merged.frames()[site_stack[1]].function, "main");
}

TEST(CudaMerge, merging_with_an_empty_trace_is_the_trace) {
  Trace cuda;
  cuda.push_back(device_event(Op::alloc, 5, 0x10, 1));
  const Trace merged = merge_by_time(cuda, Trace{});
  ASSERT_EQ(merged.size(), 1u);
  EXPECT_EQ(merged.event(0), cuda.event(0));
}

}  // namespace
}  // namespace alloclab::cuda
