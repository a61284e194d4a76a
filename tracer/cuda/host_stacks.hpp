#pragma once
// Host call stacks of CUDA allocations (`record --cuda --stacks N`). The CUPTI callback runs on
// the thread that called CUDA, inside CUDA: its stack is the tracer's callback, CUPTI, the
// driver and the runtime, then the program's call. Only return addresses are taken here;
// frames are named after the program ends (launch/record_cuda.cpp), never inside it.
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <string_view>
#include <vector>

namespace alloclab::cuda {

// Stacks are at most this deep (as the preload tracer's: protocol's max_stack_depth).
inline constexpr int max_host_stack_depth = 64;

// The code of one loaded object: its lowest to highest PT_LOAD address.
struct ModuleRange {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  bool contains(std::uint64_t address) const { return address >= begin && address < end; }
};

// How many of `frames` (innermost first) to drop: the leading ones inside any of `modules`.
// Only leading ones: past the program's call, a frame in those modules (a driver thread that
// calls back into the program) is part of the program's stack.
std::size_t frames_to_drop(std::span<const ModuleRange> modules,
                           std::span<const std::uint64_t> frames);

// Whether the object at `path` is CUDA's own, whose frames stand between the callback and the
// program: the driver (libcuda.so), the runtime (libcudart.so) and CUPTI (libcupti.so), by file
// name, whatever the directory (PyTorch carries copies of the runtime and CUPTI of its own).
bool is_cuda_library(std::string_view path);

// The ranges of the loaded objects to drop frames of: the one holding `self` (the tracer) and
// every loaded CUDA library (is_cuda_library).
std::vector<ModuleRange> loaded_cuda_modules(const void* self);

// Changes whenever the loader loads or unloads an object (dl_iterate_phdr's counters): maps
// saved at one generation cover every object loaded while it lasts.
std::uint64_t loader_generation();

// Unwinds the calling thread, for any number of threads at once.
class HostStacks {
 public:
  // `depth`: frames kept per stack (1 to max_host_stack_depth). With `libunwind`, its
  // unw_backtrace when the library loads (dlopened, RTLD_LOCAL, like the preload tracer's);
  // otherwise, or when it does not load, glibc's backtrace().
  HostStacks(int depth, bool libunwind);
  int depth() const { return depth_; }
  // "libunwind" or "backtrace" (for the trace's metadata).
  const char* unwinder() const;
  // Stores up to depth() return addresses of the calling thread's stack into `out`, the
  // tracer's and CUDA's frames left out, and returns how many.
  int capture(std::uint64_t* out);

 private:
  std::span<const ModuleRange> modules_now();

  int depth_;
  using Backtrace = int (*)(void**, int);
  Backtrace unw_backtrace_ = nullptr;
  // The ranges to drop, found again whenever objects were loaded or unloaded since (the
  // loader's counters): a program may load the runtime after CUDA was initialised.
  std::mutex modules_lock_;
  std::vector<ModuleRange> modules_;
  std::uint64_t loader_generation_ = ~std::uint64_t{0};
};

}  // namespace alloclab::cuda
