#pragma once
// DeviceCaches: a strategy in front of a device allocator's real calls (cudaMalloc/cudaFree,
// cuMemAlloc/cuMemFree, or the PyTorch allocator's), one LiveCache per device, each made on the
// device's first allocation. The calls are parameters, so that the dispatch, the error mapping
// and the reports can be tested with fakes on a machine without a device. No CUDA header: the
// calls' statuses are plain ints, as both CUDA APIs' enums are.
//
// Thread-safe: one lock serialises every cache. The caller keeps its own thread's calls into
// the real functions (which the upstream makes) from coming back here.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "alloclab/live/live_cache.hpp"
#include "alloclab/live/live_report.hpp"
#include "alloclab/live/process_output.hpp"

namespace alloclab::live {

// A device allocator's real calls, on the calling thread's current device.
struct DeviceCalls {
  // `success` on success; any other status is passed on to the program as the call's own.
  int (*allocate)(void** out, std::size_t bytes) = nullptr;
  int (*deallocate)(void* p) = nullptr;
  // Bytes in use on the current device (total - free); nullptr, or a status other than
  // `success`: not sampled.
  int (*used_bytes)(std::uint64_t* used) = nullptr;
  // Clears the error a failed real call left for the program's next cudaGetLastError (nullptr:
  // none to clear). The strategy may recover from the failure (release its cache and retry):
  // the program then never failed, and a failure it is told of comes as the status it gets.
  int (*clear_error)() = nullptr;
  int success = 0;
  // What a request the strategy failed returns when the real call failed with nothing more
  // telling (cudaErrorMemoryAllocation, CUDA_ERROR_OUT_OF_MEMORY).
  int out_of_memory = 2;
};

class DeviceCaches {
 public:
  static constexpr int kMaxDevices = 64;
  // Requests are rounded up to this many bytes before the strategy sees them: with every
  // capacity a multiple of it, the strategy's blocks, at offsets inside the real call's
  // (256-byte aligned) blocks, keep the alignment a device allocator guarantees.
  static constexpr std::size_t kGranularity = 512;

  // `device_name` gets the device's index appended ("cuda:" -> "cuda:0"). Throws as LiveCache
  // does for a bad spec, but only on a device's first allocation.
  DeviceCaches(std::string spec, std::string device_name, DeviceCalls calls, Clock clock,
               bool implicit_run);
  ~DeviceCaches();
  DeviceCaches(const DeviceCaches&) = delete;
  DeviceCaches& operator=(const DeviceCaches&) = delete;

  // The program's allocation on `device`, which must be current: the status the program gets,
  // and `*out` (nullptr on failure). A size of 0 and a device outside [0, kMaxDevices) go to the
  // real call as they are.
  int allocate(int device, std::size_t bytes, std::uint64_t stream, void** out);
  // Frees `p` if one of the caches handed it out; false (nothing done) otherwise.
  bool deallocate(void* p);
  bool owns(const void* p) const;

  // A run marker; `label`: the marker's (nullptr for none), each device's run's label.
  void begin_run(const char* label = nullptr);
  void end_run();

  // One report per device used, in device order, each named; then every cache releases what it
  // holds (the end of the program).
  std::vector<LiveReport> finish(std::uint64_t pid);

 private:
  class RealUpstream;
  struct Device;

  std::string spec_;
  std::string device_name_;
  DeviceCalls calls_;
  Clock clock_;
  bool implicit_run_;
  bool in_marked_run_ = false;
  std::string run_label_;  // the marked run's, for a cache made inside it
  mutable std::mutex mutex_;
  std::array<std::unique_ptr<Device>, kMaxDevices> devices_;
};

}  // namespace alloclab::live
