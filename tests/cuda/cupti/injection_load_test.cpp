// liballoclab_cuda.so loaded by hand, the way the CUDA driver loads it: it exports
// InitializeInjection and, without a device, declines cleanly and leaves no file behind.
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "cuda_test_util.hpp"

namespace alloclab::test {
namespace {

using InitializeInjection = int (*)();

InitializeInjection load_entry_point() {
  void* library = dlopen(ALLOCLAB_CUDA_INJECTION_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  EXPECT_NE(library, nullptr) << dlerror();
  if (!library) return nullptr;
  return reinterpret_cast<InitializeInjection>(dlsym(library, "InitializeInjection"));
}

TEST(CudaInjection, exports_the_cuda_and_nvtx_entry_points_and_no_other_function) {
  ASSERT_NE(load_entry_point(), nullptr);
  // The tracer's own code stays hidden: a program's symbols never bind to it, nor it to theirs.
  const CliResult nm =
      run_shell(std::string("nm -D --defined-only ") + ALLOCLAB_CUDA_INJECTION_LIBRARY);
  if (nm.status == 127) GTEST_SKIP() << "nm (binutils) is not installed";
  ASSERT_EQ(nm.status, 0) << nm.output;
  std::istringstream lines(nm.output);
  std::string line;
  std::vector<std::string> functions;
  while (std::getline(lines, line))
    if (line.find(" T ") != std::string::npos)
      functions.push_back(line.substr(line.rfind(' ') + 1));
  std::sort(functions.begin(), functions.end());
  EXPECT_EQ(functions,
            (std::vector<std::string>{"InitializeInjection", "InitializeInjectionNvtx2"}))
      << nm.output;
}

TEST(CudaInjection, without_an_output_it_declines_and_writes_nothing) {
  InitializeInjection init = load_entry_point();
  ASSERT_NE(init, nullptr);
  unsetenv("ALLOCLAB_CUDA_OUTPUT");
  EXPECT_EQ(init(), 0);
}

TEST(CudaInjection, a_file_exists_exactly_when_tracing_started) {
  if (const std::string why = why_no_cuda_device(); why.empty())
    GTEST_SKIP() << "a CUDA device is present: initialising the injection by hand outside the "
                    "driver's cuInit would trace this test process; the device tests cover it";
  InitializeInjection init = load_entry_point();
  ASSERT_NE(init, nullptr);
  CudaScratch scratch;
  const std::string output = scratch.file("hand.alt");
  setenv("ALLOCLAB_CUDA_OUTPUT", output.c_str(), 1);
  const int started = init();
  unsetenv("ALLOCLAB_CUDA_OUTPUT");
  // No device: CUPTI refuses the subscription; the library says so and leaves nothing.
  EXPECT_EQ(started, 0);
  EXPECT_FALSE(std::filesystem::exists(output));
}

}  // namespace
}  // namespace alloclab::test
