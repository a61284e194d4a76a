// liballoclab_torch.so: an alloclab strategy as PyTorch's CUDA allocator
// (torch.cuda.memory.CUDAPluggableAllocator; python/alloclab_torch.py loads it). One LiveCache
// per device (DeviceCaches) over the real cudaMalloc/cudaFree of the CUDA runtime PyTorch
// loaded, with PyTorch's stream passed to the strategy. The spec: alloclab_torch_configure's,
// or ALLOCLAB_LIVE_SPEC. With a report folder (configure's, or ALLOCLAB_LIVE_REPORT_DIR, as
// under `alloclab run`) each device used writes its LiveReport there at exit,
// live.PID.torchN.txt.
#include <cuda_runtime_api.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <string>

#include "alloclab/live/device_caches.hpp"
#include "alloclab/protocol/environment.hpp"
#include "alloclab/protocol/ticks.hpp"
#include "alloclab/strategies/registry.hpp"
#include "alloclab/strategies/upstream/sim.hpp"
#include "cuda_symbols.hpp"

#define ALLOCLAB_TORCH_EXPORT extern "C" __attribute__((visibility("default")))

namespace alloclab::live {
namespace {

using CudaMallocFn = cudaError_t (*)(void**, std::size_t);
using CudaFreeFn = cudaError_t (*)(void*);
using CudaMemGetInfoFn = cudaError_t (*)(std::size_t*, std::size_t*);
using CudaGetLastErrorFn = cudaError_t (*)();

// The runtime's own functions, never an interposer's (`alloclab run --cuda` may have one
// preloaded: its strategy would otherwise stand between this one and the device).
struct Runtime {
  CudaMallocFn malloc = nullptr;
  CudaFreeFn free = nullptr;
  CudaMemGetInfoFn mem_get_info = nullptr;
  CudaGetLastErrorFn get_last_error = nullptr;
};
Runtime g_runtime;

int runtime_allocate(void** out, std::size_t bytes) {
  return g_runtime.malloc(out, bytes);
}
int runtime_deallocate(void* p) {
  return g_runtime.free(p);
}
int runtime_used_bytes(std::uint64_t* used) {
  if (g_runtime.mem_get_info == nullptr) return cudaErrorUnknown;
  std::size_t free = 0, total = 0;
  const cudaError_t status = g_runtime.mem_get_info(&free, &total);
  if (status == cudaSuccess) *used = total - free;
  return status;
}
int runtime_clear_error() {
  return g_runtime.get_last_error != nullptr ? g_runtime.get_last_error() : cudaSuccess;
}

std::mutex g_mutex;  // guards the settings below until the caches exist
// Never destroyed: the destructor below reads them after the library's static objects are gone.
std::string& g_spec = *new std::string;
std::string& g_report_dir = *new std::string;
bool g_configured = false;
// Made on the first allocation, never destroyed: PyTorch frees its tensors' blocks late in
// the interpreter's exit, after this library's destructor has written the reports.
DeviceCaches* g_caches = nullptr;

std::string checked_spec(const std::string& spec) {
  SimUpstream upstream;
  const std::unique_ptr<Strategy> strategy = make_strategy(spec, upstream);
  if (!strategy->hands_out_upstream_memory())
    return spec +
           " cannot allocate device memory: its blocks lie in a virtual address range it "
           "models, not in memory";
  return {};
}

DeviceCaches* caches(const void* caller) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  if (g_caches != nullptr) return g_caches;
  if (!g_configured) {
    const char* spec = std::getenv(protocol::env_live_spec);
    const char* dir = std::getenv(protocol::env_live_report_dir);
    g_spec = spec != nullptr ? spec : "";
    g_report_dir = dir != nullptr ? dir : "";
    g_configured = true;
  }
  if (g_spec.empty()) {
    std::fprintf(stderr, "alloclab_torch: no strategy (call alloclab_torch.use(SPEC), or set %s)\n",
                 protocol::env_live_spec);
    return nullptr;
  }
  // The runtime PyTorch calls: the one its library (the caller) finds among its dependencies,
  // even where another was loaded before it (alloclab's own, or the program's under `run`).
  void* found = find_for_caller(caller, "cudaMalloc", nullptr);
  if (found == nullptr) found = find_in_library("libcudart.so", "cudaMalloc");
  if (found != nullptr) {
    g_runtime.malloc = reinterpret_cast<CudaMallocFn>(find_beside(found, "cudaMalloc"));
    g_runtime.free = reinterpret_cast<CudaFreeFn>(find_beside(found, "cudaFree"));
    g_runtime.mem_get_info =
        reinterpret_cast<CudaMemGetInfoFn>(find_beside(found, "cudaMemGetInfo"));
    g_runtime.get_last_error =
        reinterpret_cast<CudaGetLastErrorFn>(find_beside(found, "cudaGetLastError"));
  }
  if (g_runtime.malloc == nullptr || g_runtime.free == nullptr) {
    std::fprintf(stderr, "alloclab_torch: no CUDA runtime (libcudart.so) is loaded\n");
    g_runtime = Runtime{};
    return nullptr;
  }
  try {
    g_caches =
        new DeviceCaches(g_spec, "cuda:",
                         DeviceCalls{runtime_allocate, runtime_deallocate, runtime_used_bytes,
                                     runtime_clear_error, cudaSuccess, cudaErrorMemoryAllocation},
                         Clock{protocol::monotonic_ns, protocol::monotonic_ns}, true);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "alloclab_torch: %s\n", e.what());
    return nullptr;
  }
  return g_caches;
}

}  // namespace
}  // namespace alloclab::live

using namespace alloclab::live;

// Sets the strategy and the report folder (nullptr or "": none) before the first allocation.
// 0 on success; otherwise 1 and why, in `error` (`error_size` bytes, NUL-terminated).
ALLOCLAB_TORCH_EXPORT int alloclab_torch_configure(const char* spec, const char* report_dir,
                                                   char* error, std::size_t error_size) {
  const auto fail = [&](const std::string& why) {
    if (error != nullptr && error_size > 0) std::snprintf(error, error_size, "%s", why.c_str());
    return 1;
  };
  if (spec == nullptr || *spec == '\0') return fail("no strategy spec given");
  std::string why;
  try {
    why = checked_spec(spec);
  } catch (const std::exception& e) {
    why = e.what();
  }
  if (!why.empty()) return fail(why);
  const std::lock_guard<std::mutex> lock(g_mutex);
  if (g_caches != nullptr)
    return fail("the allocator has already allocated: configure it before the first tensor");
  g_spec = spec;
  g_report_dir = report_dir != nullptr ? report_dir : "";
  g_configured = true;
  return 0;
}

// PyTorch's alloc_fn: nullptr for a request that failed (PyTorch raises its out-of-memory
// error); the device is the current one.
ALLOCLAB_TORCH_EXPORT void* alloclab_torch_malloc(ssize_t size, int device, cudaStream_t stream) {
  DeviceCaches* c = caches(__builtin_return_address(0));
  if (c == nullptr || size < 0) return nullptr;
  void* p = nullptr;
  if (c->allocate(device, static_cast<std::size_t>(size),
                  static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(stream)),
                  &p) != cudaSuccess)
    return nullptr;
  return p;
}

ALLOCLAB_TORCH_EXPORT void alloclab_torch_free(void* p, ssize_t, int, cudaStream_t) {
  if (p == nullptr) return;
  DeviceCaches* c = caches(__builtin_return_address(0));
  if (c == nullptr || c->deallocate(p)) return;  // without caches, nothing came from here
  g_runtime.free(p);
}

__attribute__((destructor(101))) static void alloclab_torch_destructor() {
  DeviceCaches* c;
  std::string dir;
  {
    const std::lock_guard<std::mutex> lock(g_mutex);
    c = g_caches;
    dir = g_report_dir;
  }
  if (c == nullptr) return;
  const auto pid = static_cast<std::uint64_t>(getpid());
  for (const LiveReport& report : c->finish(pid)) {
    if (dir.empty()) continue;
    const std::string index = report.device.substr(report.device.find(':') + 1);
    write_text_file(dir + "/live." + std::to_string(pid) + ".torch" + index + ".txt",
                    to_text(report));
  }
}
