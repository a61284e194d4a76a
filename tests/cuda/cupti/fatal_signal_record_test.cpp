// `record --cuda --cpu` and a program that aborts: the preload tracer installs its fatal-signal
// handler first (at program start), the CUDA tracer's takes its place at cuInit and calls it, so
// both traces keep their last events. No device is needed: this test binary, run again under
// record, plays a CUDA program whose injection library started tracing (an EventSink at
// ALLOCLAB_CUDA_OUTPUT, the handlers installed as injection.cpp does), then aborts.
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <sys/resource.h>
#include <time.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "alloclab/format/alt/alt.hpp"
#include "cuda_test_util.hpp"
#include "tracer/cuda/fatal_signal.hpp"
#include "tracer/cuda/sink.hpp"

namespace alloclab::test {
namespace {

constexpr std::uint64_t cuda_events = 500;
constexpr std::size_t marker_size = 123457;  // the host block allocated just before the abort
constexpr const char* helper_switch = "ALLOCLAB_TEST_CUDA_ABORT";

std::uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

[[noreturn]] void abort_like_a_traced_cuda_program() {
  const rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  const char* output = std::getenv("ALLOCLAB_CUDA_OUTPUT");
  if (!output) std::_Exit(3);
  void* preload_guard = dlsym(RTLD_DEFAULT, "alloclab_preload_guard");
  if (!preload_guard) std::_Exit(4);  // not under record --cpu
  // The writer's period is far too long for the timer to write anything: only the handler can.
  auto* sink =
      new cuda::EventSink(output, {{"recorder", "fatal signal test"}}, std::chrono::hours(1));
  for (std::uint64_t i = 0; i < cuda_events; ++i) {
    Event e;
    e.op = i % 2 == 0 ? Op::alloc : Op::free;
    e.time_ns = now_ns();
    e.address = 0x7000'0000 + (i / 2) * 256;
    e.size = i % 2 == 0 ? 256 : 0;
    e.kind = MemoryKind::device;
    sink->add(e);
  }
  cuda::install_fatal_flush(sink, preload_guard);
  void* volatile block = std::malloc(marker_size);
  (void)block;
  std::abort();
}

// Runs before main when record started this binary as the aborting program.
[[maybe_unused]] const bool helper = [] {
  if (std::getenv(helper_switch)) abort_like_a_traced_cuda_program();
  return false;
}();

TEST(RecordCudaCpu, an_abort_keeps_the_last_events_of_both_tracers) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  CudaScratch scratch;
  const std::string trace = scratch.file("abort.alt");
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const CliResult r = run_shell(std::string(helper_switch) + "=1 " + ALLOCLAB_CLI +
                                " record --cuda --cpu -o " + trace + " -- " + self);
  ASSERT_EQ(r.status, 128 + 6) << r.output;
  ASSERT_TRUE(std::filesystem::exists(trace)) << r.output;
  const Trace recorded = read_alt(trace);
  std::size_t device = 0, marker = 0;
  for (std::size_t i = 0; i < recorded.size(); ++i) {
    device += recorded.kind(i) == MemoryKind::device;
    marker += recorded.op(i) == Op::alloc && recorded.size_of(i) == marker_size;
  }
  EXPECT_EQ(device, cuda_events) << r.output;  // written by the CUDA tracer's handler
  EXPECT_EQ(marker, 1u) << r.output;           // written by the preload tracer's, chained
}

}  // namespace
}  // namespace alloclab::test
