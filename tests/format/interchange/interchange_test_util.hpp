#pragma once
// Helpers shared by the interchange tests.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

#include "alloclab/format/error.hpp"

namespace alloclab::test {

inline std::string data_file(const std::string& name) {
  return std::string(ALLOCLAB_TEST_DATA) + "/interchange/" + name;
}

// A fresh path in the test temp directory (the file is not created).
inline std::string temp_file(const std::string& name) {
  static std::atomic<int> counter{0};
  const auto dir = std::filesystem::path(::testing::TempDir()) /
                   ("alloclab_interchange_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / (std::to_string(counter++) + "_" + name)).string();
}

inline std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// The InputError message `f` throws, or a note that it threw none.
template <class F>
std::string input_error(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

}  // namespace alloclab::test
