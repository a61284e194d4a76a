#pragma once
// What the CUDA tracer tests need around them: is there a device, a scratch directory, running
// the CLI.
#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "tests/cli/cli_test_util.hpp"
#include "tests/preload/sanitizer_skips.hpp"

namespace alloclab::test {

// Whether a CUDA driver is installed and sees a device (asked through libcuda directly, so the
// tests need no CUDA runtime). Empty when one does; otherwise why not.
inline std::string why_no_cuda_device() {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!driver) return "no CUDA driver (libcuda.so.1 not found)";
  using Init = int (*)(unsigned);
  using Count = int (*)(int*);
  auto init = reinterpret_cast<Init>(dlsym(driver, "cuInit"));
  auto count = reinterpret_cast<Count>(dlsym(driver, "cuDeviceGetCount"));
  int devices = 0;
  if (!init || !count || init(0) != 0 || count(&devices) != 0 || devices == 0)
    return "no CUDA device (cuInit/cuDeviceGetCount)";
  return {};
}

class CudaScratch {
 public:
  CudaScratch() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "alloclab-cuda-XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~CudaScratch() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& dir() const { return path_; }

 private:
  std::filesystem::path path_;
};

// NAME=VALUE lines of print_env's output (unset names are absent).
inline std::map<std::string, std::string> read_env_file(const std::string& path) {
  std::map<std::string, std::string> env;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const auto eq = line.find('=');
    if (eq != std::string::npos) env[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return env;
}

}  // namespace alloclab::test
