// Where alloclab finds what is installed with it: programs beside its own binary, the recorders
// in lib/ beside bin/ (the build tree and an installed tree alike).
#include <gtest/gtest.h>

#include <filesystem>

#include "alloclab/launch/record_files.hpp"

namespace alloclab::launch {
namespace {

namespace fs = std::filesystem;

TEST(InstallPaths, binary_dir_is_the_folder_of_the_running_program) {
  const fs::path dir = binary_dir();
  // The test program is built into the same folder as alloclab (build/bin).
  EXPECT_EQ(dir, fs::path(ALLOCLAB_CLI).parent_path());
  EXPECT_TRUE(fs::exists(dir / fs::path(ALLOCLAB_CLI).filename()));
}

TEST(InstallPaths, library_dir_is_lib_beside_the_binary_folder) {
  EXPECT_EQ(library_dir(), binary_dir().parent_path() / "lib");
}

}  // namespace
}  // namespace alloclab::launch
