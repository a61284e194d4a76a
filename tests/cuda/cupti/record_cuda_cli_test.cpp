// `alloclab record --cuda/--cpu/--run-range` seen from the traced program's environment, and
// what record does when no CUDA trace appears (no device here, or a program without CUDA).
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "alloclab/format/alt/alt.hpp"
#include "cuda_test_util.hpp"
#include "tests/cuda/tracer_test_util.hpp"
#include "tracer/cuda/saved_maps.hpp"

// A function of this program, at an address of its own (not inlined, not folded).
extern "C" __attribute__((noinline)) int alloclab_record_cuda_naming_probe(int x) {
  asm volatile("" ::: "memory");
  return x * 3 + 1;
}

namespace alloclab::test {
namespace {

struct Recording {
  CliResult result;
  std::map<std::string, std::string> env;
};

Recording record_env(const CudaScratch& scratch, const std::string& flags,
                     const std::string& trace) {
  const std::string env_file = scratch.file("env.txt");
  Recording r;
  r.result =
      run_cli("record " + flags + " -o " + trace + " -- " + PRINT_ENV_PROGRAM + " " + env_file);
  r.env = read_env_file(env_file);
  return r;
}

TEST(RecordCuda, cuda_sets_the_injection_path_and_no_preload) {
  CudaScratch scratch;
  const std::string trace = scratch.file("t.alt");
  const Recording r = record_env(scratch, "--cuda", trace);
  EXPECT_EQ(r.env.at("CUDA_INJECTION64_PATH"),
            std::filesystem::canonical(ALLOCLAB_CUDA_INJECTION_LIBRARY).string());
  EXPECT_EQ(r.env.at("ALLOCLAB_CUDA_OUTPUT"), trace);
  EXPECT_EQ(r.env.count("LD_PRELOAD"), 0u);
  EXPECT_EQ(r.env.count("NVTX_INJECTION64_PATH"), 0u);
  EXPECT_EQ(r.env.count("ALLOCLAB_RUN_RANGE"), 0u);
  // The program never initialised CUDA: nothing recorded, and record says why.
  EXPECT_EQ(r.result.status, 2) << r.result.output;
  EXPECT_NE(r.result.output.find("no CUDA trace"), std::string::npos) << r.result.output;
  EXPECT_FALSE(std::filesystem::exists(trace));
}

TEST(RecordCuda, traces_listed_by_followers_are_summarised_when_the_launcher_wrote_none) {
  // What a follower process does (processes.hpp), done by hand so that no device is needed: a
  // launcher that never uses CUDA, whose worker wrote <stem>.<pid>.cuda.alt and listed it.
  CudaScratch scratch;
  const std::string trace = scratch.file("launcher.alt");
  const std::string worker_trace = scratch.file("launcher.4242.cuda.alt");
  const std::string fixture = std::string(ALLOCLAB_TEST_DATA) + "/alt-v2/all-columns.alt";
  const CliResult r =
      run_cli("record --cuda --follow-exec -o " + trace + " -- sh -c 'cp " + fixture + " " +
              worker_trace + " && echo \"trace " + worker_trace + "\" >> \"$ALLOCLAB_FILE_LIST\"'");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("the started process wrote no trace"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("recorded 7 events"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(worker_trace), std::string::npos) << r.output;
}

TEST(RecordCuda, run_range_routes_nvtx_through_the_injection_library) {
  CudaScratch scratch;
  const Recording r = record_env(scratch, "--cuda --run-range 'step*'", scratch.file("t.alt"));
  EXPECT_EQ(r.env.at("ALLOCLAB_RUN_RANGE"), "step*");
  // Not CUPTI's file: a program with a libcupti of its own would load that file a second time.
  EXPECT_EQ(r.env.at("NVTX_INJECTION64_PATH"), r.env.at("CUDA_INJECTION64_PATH"));
}

// Nsight Systems (say) named its own injection: the ranges are taken from it, and record says so.
TEST(RecordCuda, run_range_says_when_it_takes_nvtx_from_another_tool) {
  CudaScratch scratch;
  const std::string env_file = scratch.file("env.txt");
  const CliResult r =
      run_shell("NVTX_INJECTION64_PATH=/opt/profiler/libInjection64.so " +
                std::string(ALLOCLAB_CLI) + " record --cuda --run-range step -o " +
                scratch.file("t.alt") + " -- " + PRINT_ENV_PROGRAM + " " + env_file);
  EXPECT_NE(r.output.find("note: record --run-range takes NVTX's ranges from the injection "
                          "library NVTX_INJECTION64_PATH named (/opt/profiler/libInjection64.so)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(read_env_file(env_file).at("NVTX_INJECTION64_PATH"), "/opt/profiler/libInjection64.so");
}

TEST(RecordCuda, cuda_with_cpu_runs_both_tracers_and_leaves_one_trace) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  CudaScratch scratch;
  const std::string trace = scratch.file("both.alt");
  const Recording r = record_env(scratch, "--cuda --cpu", trace);
  EXPECT_EQ(r.env.at("ALLOCLAB_CUDA_OUTPUT"), trace + ".cuda.part");
  EXPECT_EQ(r.env.at("ALLOCLAB_OUTPUT"), trace + ".cpu.part");
  EXPECT_NE(r.env.at("LD_PRELOAD").find("liballoclab_preload.so"), std::string::npos);
  // No CUDA here: the host allocations alone make the trace, and no part file is left.
  EXPECT_EQ(r.result.status, 0) << r.result.output;
  EXPECT_NE(r.result.output.find("no CUDA trace"), std::string::npos) << r.result.output;
  ASSERT_TRUE(std::filesystem::exists(trace)) << r.result.output;
  EXPECT_FALSE(std::filesystem::exists(trace + ".cpu.part"));
  EXPECT_FALSE(std::filesystem::exists(trace + ".cuda.part"));
  const Trace recorded = read_alt(trace);
  std::size_t host_allocs = 0;
  for (std::size_t i = 0; i < recorded.size(); ++i)
    host_allocs += recorded.op(i) == Op::alloc && recorded.device(i) == cpu_device;
  EXPECT_GE(host_allocs, 10u);
}

// --stacks reaches the preload tracer (ALLOCLAB_STACKS), whose host allocations keep their
// stacks in the trace record leaves.
TEST(RecordCuda, cuda_with_cpu_and_stacks_records_the_host_allocations_stacks) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  CudaScratch scratch;
  const std::string trace = scratch.file("stacks.alt");
  const Recording r = record_env(scratch, "--cuda --cpu --stacks 8", trace);
  EXPECT_EQ(r.env.at("ALLOCLAB_STACKS"), "8");
  ASSERT_EQ(r.result.status, 0) << r.result.output;
  const Trace recorded = read_alt(trace);
  EXPECT_TRUE(recorded.has_stacks());
  std::size_t with_stack = 0;
  for (std::size_t i = 0; i < recorded.size(); ++i)
    with_stack += recorded.op(i) == Op::alloc && recorded.stack_id(i) != 0;
  EXPECT_GE(with_stack, 10u);
}

// --stacks reaches the CUDA tracer alone too (no preload tracer): no longer refused.
TEST(RecordCuda, stacks_with_cuda_alone_reach_the_cuda_tracer) {
  CudaScratch scratch;
  const std::string trace = scratch.file("t.alt");
  const Recording r = record_env(scratch, "--cuda --stacks 8", trace);
  EXPECT_EQ(r.env.at("ALLOCLAB_STACKS"), "8");
  EXPECT_EQ(r.env.at("CUDA_INJECTION64_PATH"),
            std::filesystem::canonical(ALLOCLAB_CUDA_INJECTION_LIBRARY).string());
  EXPECT_EQ(r.env.count("LD_PRELOAD"), 0u);
  EXPECT_EQ(r.result.output.find("--stacks"), std::string::npos) << r.result.output;
  // print_env never initialises CUDA: no trace, as without --stacks.
  EXPECT_EQ(r.result.status, 2) << r.result.output;
  EXPECT_NE(r.result.output.find("no CUDA trace"), std::string::npos) << r.result.output;
}

// The launcher's step, through the CLI: a followed process's CUDA trace with addresses only and
// its saved maps (what the tracer leaves), named when record collects it; the maps are removed.
TEST(RecordCuda, record_names_a_cuda_trace_from_its_saved_maps_and_removes_them) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  CudaScratch scratch;
  const std::string prepared = scratch.file("prepared.alt");
  const std::string launcher = scratch.file("launcher.alt");
  const std::string worker = scratch.file("launcher.4242.cuda.alt");
  const std::uint64_t probe =
      return_address_in(reinterpret_cast<const void*>(&alloclab_record_cuda_naming_probe));
  const std::uint64_t libc = return_address_in(libc_malloc());
  {
    Trace t;
    t.metadata["pid"] = 4242;
    Event e;
    e.op = Op::alloc;
    e.time_ns = 10;
    e.address = 0x7000;
    e.size = 256;
    e.device = 0;
    e.kind = MemoryKind::device;
    t.push_back(e);
    e.op = Op::free;
    e.time_ns = 20;
    e.size = 0;
    t.push_back(e);
    const std::uint32_t probe_frame = t.add_frame(StackFrame{probe, {}, {}});
    const std::uint32_t libc_frame = t.add_frame(StackFrame{libc, {}, {}});
    t.set_stack_id(0, t.add_stack({probe_frame, libc_frame}));
    write_alt(t, prepared);
    std::ofstream maps(prepared + ".maps");
    maps << cuda::saved_maps_line({0, own_maps()});
  }
  const CliResult r = run_cli("record --cuda --follow-exec -o " + launcher + " -- sh -c 'cp " +
                              prepared + " " + worker + " && cp " + prepared + ".maps " + worker +
                              ".maps && echo \"trace " + worker + "\" >> \"$ALLOCLAB_FILE_LIST\"'");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_FALSE(std::filesystem::exists(worker + ".maps"));
  const Trace named = read_alt(worker);
  ASSERT_EQ(named.size(), 2u);
  ASSERT_NE(named.stack_id(0), 0u);
  EXPECT_EQ(named.stack_id(1), 0u);
  const std::vector<std::uint32_t>& stack = named.stacks()[named.stack_id(0) - 1];
  ASSERT_EQ(stack.size(), 2u);
  const StackFrame& inner = named.frames()[stack[0]];
  const StackFrame& outer = named.frames()[stack[1]];
  EXPECT_EQ(inner.address, probe);
  EXPECT_EQ(inner.module, std::filesystem::canonical("/proc/self/exe").string());
  EXPECT_NE(outer.module.find("libc.so"), std::string::npos) << outer.module;
#ifdef ALLOCLAB_LIBDW
  EXPECT_EQ(inner.function, "alloclab_record_cuda_naming_probe");
  EXPECT_NE(outer.function.find("malloc"), std::string::npos) << outer.function;
#endif
}

// Two events of one process, on the CPU or on cuda:0, at the given times.
Trace process_trace(std::int64_t pid, DeviceId device, std::uint64_t first_time) {
  Trace t;
  t.metadata["pid"] = pid;
  Event e;
  e.device = device;
  e.kind = device == cpu_device ? MemoryKind::host : MemoryKind::device;
  e.op = Op::alloc;
  e.address = device == cpu_device ? 0x1000 : 0x7f0000000000;
  e.size = 512;
  e.time_ns = first_time;
  t.push_back(e);
  e.op = Op::free;
  e.size = 0;
  e.time_ns = first_time + 200;
  t.push_back(e);
  return t;
}

TEST(RecordCuda, with_cpu_a_followed_process_gets_one_trace_of_host_and_device_events) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  // What a worker that uses CUDA leaves (made by hand: no device here): its host trace, named
  // as the preload tracer names a follower's, and its CUDA trace, both listed.
  CudaScratch scratch;
  const std::string trace = scratch.file("job.alt");
  const std::string host = scratch.file("job.4242.alt");
  const std::string cuda = scratch.file("job.4242.cuda.alt");
  write_alt(process_trace(4242, cpu_device, 1000), host);
  write_alt(process_trace(4242, 0, 1100), cuda);
  // A CUDA trace of another process with no host trace of its own stays as it is.
  const std::string alone = scratch.file("job.5151.cuda.alt");
  write_alt(process_trace(5151, 0, 1000), alone);
  std::string list_them;
  for (const std::string& path : {host, cuda, alone})
    list_them += "echo \"trace " + path + "\" >> \"$ALLOCLAB_FILE_LIST\"; ";
  const CliResult r = run_cli("record --cuda --cpu --follow-exec -o " + trace + " -- sh -c '" +
                              list_them + "/bin/true'");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_FALSE(std::filesystem::exists(cuda)) << r.output;
  EXPECT_FALSE(std::filesystem::exists(host + ".merging"));
  const Trace merged = read_alt(host);
  ASSERT_EQ(merged.size(), 4u);
  EXPECT_EQ(merged.device(0), cpu_device);
  EXPECT_EQ(merged.device(1), 0);
  EXPECT_EQ(merged.op(2), Op::free);
  EXPECT_EQ(merged.device(2), cpu_device);
  EXPECT_EQ(merged.time_ns(3), 1300u);
  EXPECT_NE(r.output.find("recorded 4 events ("), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find(cuda), std::string::npos) << r.output;
  EXPECT_TRUE(std::filesystem::exists(alone));
  EXPECT_NE(r.output.find(alone), std::string::npos) << r.output;
  // /bin/true, a real follower, is named like the CUDA tracer's followers (job.PID.alt), not
  // after the part file the started process writes.
  std::size_t followers = 0;
  for (const auto& entry : std::filesystem::directory_iterator(scratch.dir())) {
    const std::string name = entry.path().filename().string();
    EXPECT_EQ(name.find(".part"), std::string::npos) << name;
    if (name != "job.4242.alt" && name.starts_with("job.") && name.ends_with(".alt") &&
        !name.ends_with(".cuda.alt") && name != "job.alt")
      ++followers;
  }
  EXPECT_EQ(followers, 1u) << r.output;
}

// With --cpu the CUDA tracer hides its own allocations from the preload tracer through
// alloclab_preload_guard; what the guard covers must not reach the trace.
TEST(RecordCuda, allocations_under_the_preload_guard_are_not_recorded) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  CudaScratch scratch;
  const std::string trace = scratch.file("guard.alt");
  const CliResult r = run_cli("record -o " + trace + " -- " + std::string(PRELOAD_GUARD_PROGRAM));
  ASSERT_EQ(r.status, 0) << r.output;
  const Trace recorded = read_alt(trace);
  std::size_t guarded = 0, plain = 0;
  for (std::size_t i = 0; i < recorded.size(); ++i) {
    if (recorded.op(i) != Op::alloc) continue;
    guarded += recorded.size_of(i) == 7777;
    plain += recorded.size_of(i) == 8888;
  }
  EXPECT_EQ(guarded, 0u);
  EXPECT_EQ(plain, 3u);
}

TEST(RecordCuda, a_leftover_part_file_stops_a_cpu_recording_before_it_starts) {
  CudaScratch scratch;
  const std::string trace = scratch.file("t.alt");
  { std::ofstream(trace + ".cuda.part") << "stale"; }
  const CliResult r = run_cli("record --cuda --cpu -o " + trace + " -- " + PRINT_ENV_PROGRAM + " " +
                              scratch.file("env.txt"));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find(".cuda.part exists"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(scratch.file("env.txt")));
  EXPECT_FALSE(std::filesystem::exists(trace));
}

TEST(RecordCuda, run_range_without_cuda_is_a_usage_error) {
  CudaScratch scratch;
  const CliResult r = run_cli("record --run-range step -o " + scratch.file("t.alt") + " -- true");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("--run-range needs --cuda"), std::string::npos) << r.output;
}

TEST(RecordCuda, alloclab_cuda_injection_overrides_the_library_path) {
  CudaScratch scratch;
  run_shell("ALLOCLAB_CUDA_INJECTION=/elsewhere/liballoclab_cuda.so " + std::string(ALLOCLAB_CLI) +
            " record --cuda -o " + scratch.file("t.alt") + " -- " + PRINT_ENV_PROGRAM + " " +
            scratch.file("env.txt"));
  EXPECT_EQ(read_env_file(scratch.file("env.txt")).at("CUDA_INJECTION64_PATH"),
            "/elsewhere/liballoclab_cuda.so");
}

}  // namespace
}  // namespace alloclab::test
