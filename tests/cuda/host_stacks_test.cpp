// Host call stacks of CUDA allocations (`record --cuda --stacks N`): which frames are dropped,
// the unwinder on this thread, and the sink's stack table and saved maps.
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "alloclab/format/alt/alt.hpp"
#include "tests/cuda/tracer_test_util.hpp"
#include "tracer/cuda/host_stacks.hpp"
#include "tracer/cuda/saved_maps.hpp"
#include "tracer/cuda/sink.hpp"

namespace alloclab::cuda {
namespace {

using test::device_event;

std::string stacks_scratch_file(const std::string& name) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("alloclab-cuda-stacks-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  std::filesystem::remove(path);
  std::filesystem::remove(saved_maps_path(path.string()));
  return path.string();
}

TEST(HostStacks, leading_frames_in_cuda_and_tracer_modules_are_dropped) {
  const std::vector<ModuleRange> modules = {{0x1000, 0x2000}, {0x5000, 0x6000}};
  // callback, CUPTI, runtime, then the program's call; a later frame in a module is kept.
  const std::vector<std::uint64_t> frames = {0x1010, 0x5020, 0x1fff, 0x9000, 0x5000, 0x9100};
  EXPECT_EQ(frames_to_drop(modules, frames), 3u);
}

TEST(HostStacks, nothing_is_dropped_when_the_first_frame_is_the_programs) {
  const std::vector<ModuleRange> modules = {{0x1000, 0x2000}};
  EXPECT_EQ(frames_to_drop(modules, std::vector<std::uint64_t>{0x2000, 0x1000}), 0u);
  EXPECT_EQ(frames_to_drop({}, std::vector<std::uint64_t>{0x1000}), 0u);
  EXPECT_EQ(frames_to_drop(modules, std::vector<std::uint64_t>{}), 0u);
}

TEST(HostStacks, a_stack_wholly_inside_the_modules_is_dropped_whole) {
  const std::vector<ModuleRange> modules = {{0x1000, 0x2000}};
  EXPECT_EQ(frames_to_drop(modules, std::vector<std::uint64_t>{0x1000, 0x1001, 0x1ffe}), 3u);
}

TEST(HostStacks, cuda_libraries_are_known_by_file_name_in_any_directory) {
  EXPECT_TRUE(is_cuda_library("/usr/lib/x86_64-linux-gnu/libcuda.so.1"));
  EXPECT_TRUE(is_cuda_library("/opt/venv/nvidia/cuda_runtime/lib/libcudart.so.12"));
  EXPECT_TRUE(is_cuda_library("/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.2025.1.0"));
  EXPECT_TRUE(is_cuda_library("libcudart.so"));
  EXPECT_FALSE(is_cuda_library("/usr/lib/libcudnn.so.9"));
  EXPECT_FALSE(is_cuda_library("/opt/torch/lib/libtorch_cuda.so"));
  EXPECT_FALSE(is_cuda_library("/home/me/libcuda.so.dir/prog"));
}

// The object holding `self` is among the ranges dropped: here that is this test program.
TEST(HostStacks, the_tracers_own_object_is_found_among_the_loaded_modules) {
  const auto self = reinterpret_cast<std::uint64_t>(&frames_to_drop);
  const std::vector<ModuleRange> modules =
      loaded_cuda_modules(reinterpret_cast<const void*>(&frames_to_drop));
  bool found = false;
  for (const ModuleRange& m : modules) found = found || m.contains(self);
  EXPECT_TRUE(found);
}

// Linked into this program, the "tracer" is the program: every frame of it is dropped, and
// what is left is the C library's start of the process, below main.
TEST(HostStacks, a_captured_stack_leaves_out_the_tracers_frames_and_keeps_its_depth) {
  for (const bool libunwind : {true, false}) {
    HostStacks stacks(3, libunwind);
    std::uint64_t frames[max_host_stack_depth];
    const int n = stacks.capture(frames);
    ASSERT_GE(n, 1) << stacks.unwinder();
    EXPECT_LE(n, 3);
    for (const ModuleRange& dropped :
         loaded_cuda_modules(reinterpret_cast<const void*>(&frames_to_drop)))
      EXPECT_FALSE(dropped.contains(frames[0])) << std::hex << frames[0];
  }
}

// Writes happen when a test flushes, not on a timer.
constexpr auto flush_by_hand = std::chrono::hours(1);

TEST(CudaSinkStacks, identical_stacks_share_one_id_and_frees_carry_none) {
  const std::string path = stacks_scratch_file("interned.alt");
  const std::vector<std::uint64_t> a = {0x401000, 0x402000, 0x403000};
  const std::vector<std::uint64_t> b = {0x401000, 0x404000};
  {
    EventSink sink(path, nlohmann::json::object(), flush_by_hand);
    sink.add(device_event(Op::alloc, 1, 0x10, 8), a);
    sink.add(device_event(Op::alloc, 2, 0x20, 8), a);
    sink.add(device_event(Op::alloc, 3, 0x30, 8), b);
    sink.add(device_event(Op::free, 4, 0x10));
    sink.flush();
    // A later write finds the stacks of earlier ones: ids are the file's, not the write's.
    sink.add(device_event(Op::alloc, 5, 0x40, 8), b);
    sink.add(device_event(Op::alloc, 6, 0x50, 8));
    sink.close();
  }
  const Trace t = read_alt(path);
  ASSERT_EQ(t.size(), 6u);
  ASSERT_EQ(t.stacks().size(), 2u);
  ASSERT_EQ(t.frames().size(), 4u);  // 0x401000 once
  EXPECT_NE(t.stack_id(0), 0u);
  EXPECT_EQ(t.stack_id(1), t.stack_id(0));
  EXPECT_NE(t.stack_id(2), t.stack_id(0));
  EXPECT_EQ(t.stack_id(3), 0u);
  EXPECT_EQ(t.stack_id(4), t.stack_id(2));
  EXPECT_EQ(t.stack_id(5), 0u);
  const auto addresses = [&](std::uint32_t id) {
    std::vector<std::uint64_t> out;
    for (std::uint32_t f : t.stacks()[id - 1]) out.push_back(t.frames()[f].address);
    return out;
  };
  EXPECT_EQ(addresses(t.stack_id(0)), a);
  EXPECT_EQ(addresses(t.stack_id(2)), b);
  // Nothing is named inside the program.
  for (const StackFrame& frame : t.frames()) {
    EXPECT_TRUE(frame.function.empty());
    EXPECT_TRUE(frame.module.empty());
  }
  std::filesystem::remove(path);
  std::filesystem::remove(saved_maps_path(path));
}

TEST(CudaSinkStacks, maps_are_saved_with_the_first_stack_and_again_after_a_load) {
  const std::string path = stacks_scratch_file("maps.alt");
  {
    EventSink sink(path, nlohmann::json::object(), flush_by_hand);
    sink.add(device_event(Op::alloc, 1, 0x10, 8));
    sink.flush();
    EXPECT_FALSE(std::filesystem::exists(saved_maps_path(path)));  // no stack, no maps
    sink.add(device_event(Op::alloc, 2, 0x20, 8), std::vector<std::uint64_t>{0x1, 0x2});
    sink.flush();
    // New frames, but nothing was loaded since: the saved maps cover them.
    sink.add(device_event(Op::alloc, 3, 0x30, 8), std::vector<std::uint64_t>{0x3});
    sink.flush();
    void* loaded = dlopen(LOADABLE_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(loaded, nullptr) << dlerror();
    sink.add(device_event(Op::alloc, 4, 0x40, 8), std::vector<std::uint64_t>{0x2, 0x4});
    sink.close();
    dlclose(loaded);
  }
  std::vector<std::string> warnings;
  const std::vector<SavedMaps> saved = read_saved_maps(saved_maps_path(path), warnings);
  EXPECT_TRUE(warnings.empty());
  ASSERT_EQ(saved.size(), 2u);
  EXPECT_EQ(saved[0].first_frame, 0u);
  EXPECT_EQ(saved[1].first_frame, 3u);  // frames 0x1, 0x2, 0x3 came before the load
  const std::string loadable = std::filesystem::path(LOADABLE_LIBRARY).filename().string();
  EXPECT_EQ(saved[0].text.find(loadable), std::string::npos);
  EXPECT_NE(saved[1].text.find(loadable), std::string::npos);
  EXPECT_NE(saved[0].text.find("[stack]"), std::string::npos);
  std::filesystem::remove(path);
  std::filesystem::remove(saved_maps_path(path));
}

TEST(CudaSinkStacks, a_damaged_saved_maps_line_is_skipped_with_a_warning) {
  const std::string path = stacks_scratch_file("damaged.alt.maps");
  {
    std::ofstream out(path);
    out << saved_maps_line({0, "a"}) << "{\"first_frame\": 7, \"maps\": \"cut"
        << "\n"
        << saved_maps_line({9, "b"});
  }
  std::vector<std::string> warnings;
  const std::vector<SavedMaps> saved = read_saved_maps(path, warnings);
  ASSERT_EQ(saved.size(), 2u);
  EXPECT_EQ(saved[1].first_frame, 9u);
  EXPECT_EQ(saved[1].text, "b");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find(path + ":2:"), std::string::npos) << warnings[0];
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace alloclab::cuda
