// liballoclab_torch.so: an alloclab strategy as PyTorch's CUDA allocator
// (torch.cuda.memory.CUDAPluggableAllocator; python/alloclab_torch.py loads it). One LiveCache
// per device (DeviceCaches) over the real cudaMalloc/cudaFree of the CUDA runtime PyTorch
// loaded, with PyTorch's stream passed to the strategy. The spec: alloclab_torch_configure's,
// or ALLOCLAB_LIVE_SPEC. With a report folder (configure's, or ALLOCLAB_LIVE_REPORT_DIR, as
// under `alloclab run`) each device used writes its LiveReport there at exit,
// live.PID.torchN.txt. The run markers come through alloclab_torch_run_begin/_end (the Python
// markers call them once alloclab_torch.use() registered them): PyTorch opens this library in
// a local scope, where the markers' own lookup (alloclab_preload_run_begin) cannot find it.
#include <cuda_runtime_api.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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
#include "inside.hpp"

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

// Guards the settings below until the caches exist, and which of the caches or the kept run a
// marker goes to.
std::mutex g_mutex;
// Never destroyed: the destructor below reads them after the library's static objects are gone.
std::string& g_spec = *new std::string;
std::string& g_report_dir = *new std::string;
bool g_configured = false;
bool g_marked_runs = false;  // runs from markers only (`run --markers`): no implicit run
// A run marked before the caches exist (before the first allocation): begun on them when they
// are made, so that its label and its allocations are the run's.
bool g_in_run = false;
std::string& g_run_label = *new std::string;
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
    const char* markers = std::getenv(protocol::env_live_markers);
    g_spec = spec != nullptr ? spec : "";
    g_report_dir = dir != nullptr ? dir : "";
    g_marked_runs = markers != nullptr && std::strcmp(markers, "1") == 0;
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
                         Clock{protocol::monotonic_ns, protocol::monotonic_ns}, !g_marked_runs);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "alloclab_torch: %s\n", e.what());
    return nullptr;
  }
  // Still under the lock, so that no marker comes between: later ones go to the caches.
  if (g_in_run) g_caches->begin_run(g_run_label.c_str());
  return g_caches;
}

}  // namespace
}  // namespace alloclab::live

using namespace alloclab::live;

// Sets the strategy, the report folder (nullptr or "": none) and whether runs come from
// markers only (`marked_runs` nonzero, as `run --markers` says; otherwise the program before its
// first marker is a run) before the first allocation. An internal interface:
// python/alloclab_torch.py, shipped with this library, is its only caller.
// 0 on success; otherwise 1 and why, in `error` (`error_size` bytes, NUL-terminated).
ALLOCLAB_TORCH_EXPORT int alloclab_torch_configure(const char* spec, const char* report_dir,
                                                   int marked_runs, char* error,
                                                   std::size_t error_size) {
  Inside inside;
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
  g_marked_runs = marked_runs != 0;
  g_configured = true;
  return 0;
}

// A run marker (alloclab_markers.run_begin): `label` names the run (nullptr: none). Before the
// first allocation it is kept, for the caches to begin when they are made.
ALLOCLAB_TORCH_EXPORT void alloclab_torch_run_begin(const char* label) {
  Inside inside;
  DeviceCaches* c;
  {
    const std::lock_guard<std::mutex> lock(g_mutex);
    c = g_caches;
    if (c == nullptr) {
      g_in_run = true;
      g_run_label = label != nullptr ? label : "";
      return;
    }
  }
  c->begin_run(label);
}

ALLOCLAB_TORCH_EXPORT void alloclab_torch_run_end(void) {
  Inside inside;
  DeviceCaches* c;
  {
    const std::lock_guard<std::mutex> lock(g_mutex);
    c = g_caches;
    if (c == nullptr) {
      g_in_run = false;
      return;
    }
  }
  c->end_run();
}

// PyTorch's alloc_fn: nullptr for a request that failed (PyTorch raises its out-of-memory
// error); the device is the current one.
ALLOCLAB_TORCH_EXPORT void* alloclab_torch_malloc(ssize_t size, int device, cudaStream_t stream) {
  Inside inside;
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
  Inside inside;
  DeviceCaches* c = caches(__builtin_return_address(0));
  if (c == nullptr || c->deallocate(p)) return;  // without caches, nothing came from here
  g_runtime.free(p);
}

// On load (PyTorch's dlopen), before any Inside: the guards of the libraries loaded before it.
__attribute__((constructor)) static void alloclab_torch_constructor() {
  find_guards();
}

__attribute__((destructor(101))) static void alloclab_torch_destructor() {
  Inside inside;
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
