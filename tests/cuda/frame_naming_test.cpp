// `record --cuda --stacks N` names the CUDA tracer's frames after the program ended, from the
// maps it saved: here the maps are this test's own, and the frames addresses in it.
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "alloclab/format/alt/alt.hpp"
#include "alloclab/launch/record_cuda.hpp"
#include "tests/cuda/tracer_test_util.hpp"
#include "tracer/cuda/saved_maps.hpp"
#include "tracer/writer/frame_namer.hpp"

// A function of this program, at an address of its own (not inlined, not folded).
extern "C" __attribute__((noinline)) int alloclab_cuda_naming_probe(int x) {
  asm volatile("" ::: "memory");
  return x * 3 + 1;
}

namespace alloclab::test {
namespace {

std::string own_path() {
  return std::filesystem::canonical("/proc/self/exe").string();
}

TEST(CudaFrameNaming, saved_maps_name_a_function_of_this_program_and_of_libc) {
  writer::FrameNamer namer(writer::FrameNamer::SavedMaps{own_maps()});
  const writer::FrameName own =
      namer.name(return_address_in(reinterpret_cast<const void*>(&alloclab_cuda_naming_probe)));
  EXPECT_EQ(own.module, own_path());
  const void* malloc_address = libc_malloc();
  ASSERT_NE(malloc_address, nullptr);
  const writer::FrameName libc = namer.name(return_address_in(malloc_address));
  EXPECT_NE(libc.module.find("libc.so"), std::string::npos) << libc.module;
#ifdef ALLOCLAB_LIBDW
  EXPECT_EQ(own.function, "alloclab_cuda_naming_probe");
  EXPECT_NE(libc.function.find("malloc"), std::string::npos) << libc.function;
#endif
  // An address no saved mapping holds keeps no module (and the namer never reads this
  // process's maps instead).
  const writer::FrameName nowhere = namer.name(0x10);
  EXPECT_TRUE(nowhere.module.empty());
  EXPECT_TRUE(nowhere.function.empty());
}

// Empty maps name nothing: a namer built from saved text looks at nothing else.
TEST(CudaFrameNaming, empty_saved_maps_leave_frames_with_their_address) {
  writer::FrameNamer namer(writer::FrameNamer::SavedMaps{""});
  const writer::FrameName name =
      namer.name(return_address_in(reinterpret_cast<const void*>(&alloclab_cuda_naming_probe)));
  EXPECT_TRUE(name.module.empty());
  EXPECT_TRUE(name.function.empty());
}

// Each frame is named with the snapshot saved for its index: frames from a snapshot's
// first_frame on, up to the next one's.
TEST(CudaFrameNaming, each_frame_is_named_with_the_maps_saved_for_its_index) {
  Trace trace;
  const std::uint64_t probe =
      return_address_in(reinterpret_cast<const void*>(&alloclab_cuda_naming_probe));
  for (int i = 0; i < 4; ++i) trace.add_frame(StackFrame{probe, {}, {}});
  // Frames 0-1: no snapshot yet; 2: this process's maps; 3: maps that hold nothing.
  launch::name_saved_frames(trace, {{2, own_maps()}, {3, ""}});
  EXPECT_TRUE(trace.frames()[0].module.empty());
  EXPECT_TRUE(trace.frames()[1].module.empty());
  EXPECT_EQ(trace.frames()[2].module, own_path());
  EXPECT_TRUE(trace.frames()[3].module.empty());
  for (const StackFrame& frame : trace.frames()) EXPECT_EQ(frame.address, probe);
}

// A trace that cannot be read is left as it is, with its maps, and record goes on.
TEST(CudaFrameNaming, a_trace_that_cannot_be_named_is_left_with_its_maps) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("alloclab-cuda-naming-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string trace = (dir / "damaged.cuda.alt").string();
  {
    std::ofstream out(trace);
    out << "not an alt file";
    std::ofstream maps(cuda::saved_maps_path(trace));
    maps << cuda::saved_maps_line({0, own_maps()});
  }
  testing::internal::CaptureStderr();
  EXPECT_NO_THROW(launch::name_cuda_trace_file(trace));
  const std::string said = testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("the frames of " + trace + " stay unnamed"), std::string::npos) << said;
  EXPECT_TRUE(std::filesystem::exists(cuda::saved_maps_path(trace)));
  std::ifstream in(trace);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "not an alt file");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace alloclab::test
