// liballoclab_live_cuda.so: `alloclab run --cuda`'s library inside the program, preloaded after
// liballoclab_live.so. The runtime's cudaMalloc/cudaFree and the driver's cuMemAlloc/cuMemFree
// go through the strategy, one LiveCache per device (DeviceCaches), with the real calls as its
// upstream; the runtime's blocks and the driver's in caches of their own. At exit each cache
// used writes its LiveReport: live.PID.cudaN.txt, device "cuda:N" (runtime), or
// live.PID.cuN.txt, device "cuda-driver:N" (driver).
//
// The runtime reaches the driver through a table of its own, not through the dynamic linker:
// cuMemAlloc here sees a program's own driver calls only, and the runtime's blocks are never
// counted twice. A program linked with the static runtime (nvcc's default, -cudart static)
// calls neither through the dynamic linker and keeps its own allocator.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>

#include "alloclab/live/device_caches.hpp"
#include "alloclab/protocol/environment.hpp"
#include "alloclab/protocol/ticks.hpp"
#include "cuda_symbols.hpp"
#include "inside.hpp"

#define ALLOCLAB_LIVE_EXPORT extern "C" __attribute__((visibility("default")))

namespace alloclab::live {
namespace {

using CudaMallocFn = cudaError_t (*)(void**, std::size_t);
using CudaFreeFn = cudaError_t (*)(void*);
using CudaGetDeviceFn = cudaError_t (*)(int*);
using CudaMemGetInfoFn = cudaError_t (*)(std::size_t*, std::size_t*);
using CudaGetLastErrorFn = cudaError_t (*)();
using CuMemAllocFn = CUresult (*)(CUdeviceptr*, std::size_t);
using CuMemFreeFn = CUresult (*)(CUdeviceptr);
using CuCtxGetDeviceFn = CUresult (*)(CUdevice*);
using CuMemGetInfoFn = CUresult (*)(std::size_t*, std::size_t*);

// Inside the caches on this thread: the calls the strategy makes, and any the CUDA libraries
// make back into these, go straight to the real functions.

// The driver (one per system, libcuda.so.1): the next definition, or the loaded library's.
// Looked up on each use until found: the program may open the CUDA library late (dlopen).
template <typename Fn>
Fn real(std::atomic<Fn>& cache, const char* library, const char* name) {
  Fn fn = cache.load(std::memory_order_acquire);
  if (fn == nullptr) {
    void* next = dlsym(RTLD_NEXT, name);
    fn = reinterpret_cast<Fn>(next != nullptr ? next : find_in_library(library, name));
    if (fn != nullptr) cache.store(fn, std::memory_order_release);
  }
  return fn;
}

constexpr char kDriver[] = "libcuda.so";
std::atomic<CuMemAllocFn> g_cu_mem_alloc{nullptr};
std::atomic<CuMemFreeFn> g_cu_mem_free{nullptr};
std::atomic<CuCtxGetDeviceFn> g_cu_ctx_get_device{nullptr};
std::atomic<CuMemGetInfoFn> g_cu_mem_get_info{nullptr};

// The CUDA runtime the program calls: found once, from the first call's caller. A runtime is
// loaded with alloclab's own libraries too (the strategies' CUDA upstreams need one), and a
// program may bring another version, opened in a local scope (PyTorch's): what the calling
// library finds among its own dependencies is the program's. A call from the main program
// takes the next definition after this library, the program's own runtime (its dependencies
// come before the preloaded libraries' in the global scope).
struct Runtime {
  CudaMallocFn malloc = nullptr;
  CudaFreeFn free = nullptr;
  CudaGetDeviceFn get_device = nullptr;
  CudaMemGetInfoFn mem_get_info = nullptr;
  CudaGetLastErrorFn get_last_error = nullptr;
};
std::atomic<const Runtime*> g_runtime{nullptr};

// nullptr while no runtime is loaded: looked up again on the next call.
const Runtime* runtime(const void* caller, const char* name, const void* self) {
  if (const Runtime* r = g_runtime.load(std::memory_order_acquire)) return r;
  static std::mutex mutex;
  const std::lock_guard<std::mutex> lock(mutex);
  if (const Runtime* r = g_runtime.load(std::memory_order_acquire)) return r;
  void* found = find_for_caller(caller, name, self);
  if (found == nullptr) found = dlsym(RTLD_NEXT, name);
  if (found == nullptr) return nullptr;
  auto* r = new Runtime;
  r->malloc = reinterpret_cast<CudaMallocFn>(find_beside(found, "cudaMalloc"));
  r->free = reinterpret_cast<CudaFreeFn>(find_beside(found, "cudaFree"));
  r->get_device = reinterpret_cast<CudaGetDeviceFn>(find_beside(found, "cudaGetDevice"));
  r->mem_get_info = reinterpret_cast<CudaMemGetInfoFn>(find_beside(found, "cudaMemGetInfo"));
  r->get_last_error = reinterpret_cast<CudaGetLastErrorFn>(find_beside(found, "cudaGetLastError"));
  if (r->malloc == nullptr || r->free == nullptr) {
    delete r;
    return nullptr;
  }
  g_runtime.store(r, std::memory_order_release);
  return r;
}

// The real calls in DeviceCalls' shape, made once the runtime is known (the program's call
// that reached the caches found it).
int runtime_allocate(void** out, std::size_t bytes) {
  return g_runtime.load(std::memory_order_acquire)->malloc(out, bytes);
}
int runtime_deallocate(void* p) {
  return g_runtime.load(std::memory_order_acquire)->free(p);
}
int runtime_used_bytes(std::uint64_t* used) {
  const CudaMemGetInfoFn info = g_runtime.load(std::memory_order_acquire)->mem_get_info;
  std::size_t free = 0, total = 0;
  if (info == nullptr) return cudaErrorUnknown;
  const cudaError_t status = info(&free, &total);
  if (status == cudaSuccess) *used = total - free;
  return status;
}
int runtime_clear_error() {
  const CudaGetLastErrorFn clear = g_runtime.load(std::memory_order_acquire)->get_last_error;
  return clear != nullptr ? clear() : cudaSuccess;
}
int driver_allocate(void** out, std::size_t bytes) {
  CUdeviceptr p = 0;
  const CUresult status = real(g_cu_mem_alloc, kDriver, "cuMemAlloc_v2")(&p, bytes);
  *out = reinterpret_cast<void*>(static_cast<std::uintptr_t>(p));
  return status;
}
int driver_deallocate(void* p) {
  return real(g_cu_mem_free, kDriver,
              "cuMemFree_v2")(static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(p)));
}
int driver_used_bytes(std::uint64_t* used) {
  const CuMemGetInfoFn info = real(g_cu_mem_get_info, kDriver, "cuMemGetInfo_v2");
  std::size_t free = 0, total = 0;
  if (info == nullptr) return CUDA_ERROR_UNKNOWN;
  const CUresult status = info(&free, &total);
  if (status == CUDA_SUCCESS) *used = total - free;
  return status;
}

struct Settings {
  bool on = false;
  std::string report_dir;
  DeviceCaches* runtime = nullptr;
  DeviceCaches* driver = nullptr;
};

// Read once, on the first call: the settings `alloclab run` left in the environment. Without
// them (the library preloaded by hand) every call goes to the real function. Never destroyed:
// the program may free device memory from its own exit handlers, after ours would run.
const Settings& settings() {
  static const Settings* const settings = [] {
    Inside inside;
    auto* s = new Settings();
    const char* spec = std::getenv(protocol::env_live_spec);
    const char* dir = std::getenv(protocol::env_live_report_dir);
    if (spec == nullptr || dir == nullptr) return s;
    const char* markers = std::getenv(protocol::env_live_markers);
    const bool implicit_run = markers == nullptr || std::strcmp(markers, "1") != 0;
    const Clock clock{protocol::monotonic_ns, protocol::monotonic_ns};
    s->report_dir = dir;
    s->runtime =
        new DeviceCaches(spec, "cuda:",
                         DeviceCalls{runtime_allocate, runtime_deallocate, runtime_used_bytes,
                                     runtime_clear_error, cudaSuccess, cudaErrorMemoryAllocation},
                         clock, implicit_run);
    s->driver = new DeviceCaches(spec, "cuda-driver:",
                                 DeviceCalls{driver_allocate, driver_deallocate, driver_used_bytes,
                                             nullptr, CUDA_SUCCESS, CUDA_ERROR_OUT_OF_MEMORY},
                                 clock, implicit_run);
    s->on = true;
    return s;
  }();
  return *settings;
}

int allocate_through(DeviceCaches& caches, int device, void** out, std::size_t bytes) {
  try {
    return caches.allocate(device, bytes, 0, out);
  } catch (const std::exception& e) {
    die("cannot start the strategy on a device: ", e.what());
  }
}

// A block of either cache, freed by either API: CUDA lets a program mix them.
bool free_through(void* p) {
  const Settings& s = settings();
  return s.on && (s.runtime->deallocate(p) || s.driver->deallocate(p));
}

void write_reports(DeviceCaches& caches, const char* api) {
  const auto pid = static_cast<std::uint64_t>(getpid());
  for (const LiveReport& report : caches.finish(pid)) {
    const std::string index = report.device.substr(report.device.find(':') + 1);
    write_text_file(
        settings().report_dir + "/live." + std::to_string(pid) + "." + api + index + ".txt",
        to_text(report));
  }
}

}  // namespace
}  // namespace alloclab::live

using namespace alloclab::live;

// Before the program runs, and so before any Inside: the guards of the libraries loaded with
// this one.
__attribute__((constructor)) static void alloclab_live_cuda_constructor() {
  find_guards();
}

// After the program's own exit handlers; a runtime already torn down by then fails the frees of
// the final release, which only the process's exit needed.
__attribute__((destructor(101))) static void alloclab_live_cuda_destructor() {
  Inside inside;
  const Settings& s = settings();
  if (!s.on) return;
  write_reports(*s.runtime, "cuda");
  write_reports(*s.driver, "cu");
}

ALLOCLAB_LIVE_EXPORT cudaError_t cudaMalloc(void** out, std::size_t size) {
  const Runtime* r;
  {
    Inside inside;  // looking it up may allocate
    r = runtime(__builtin_return_address(0), "cudaMalloc", reinterpret_cast<void*>(&cudaMalloc));
  }
  if (r == nullptr) return cudaErrorInitializationError;
  if (t_inside != 0 || out == nullptr || size == 0 || !settings().on) return r->malloc(out, size);
  Inside inside;
  int device = 0;
  if (r->get_device == nullptr || r->get_device(&device) != cudaSuccess)
    return r->malloc(out, size);
  return static_cast<cudaError_t>(allocate_through(*settings().runtime, device, out, size));
}

// cudaFree(nullptr) creates the context, as the program expects: the real call.
ALLOCLAB_LIVE_EXPORT cudaError_t cudaFree(void* p) {
  const Runtime* r;
  {
    Inside inside;
    r = runtime(__builtin_return_address(0), "cudaFree", reinterpret_cast<void*>(&cudaFree));
  }
  if (r == nullptr) return cudaErrorInitializationError;
  if (t_inside != 0 || p == nullptr) return r->free(p);
  Inside inside;
  if (free_through(p)) return cudaSuccess;
  return r->free(p);
}

ALLOCLAB_LIVE_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* out, std::size_t size) {
  const CuMemAllocFn next = real(g_cu_mem_alloc, kDriver, "cuMemAlloc_v2");
  if (next == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  if (t_inside != 0 || out == nullptr || size == 0 || !settings().on) return next(out, size);
  Inside inside;
  CUdevice device = 0;
  const CuCtxGetDeviceFn get_device = real(g_cu_ctx_get_device, kDriver, "cuCtxGetDevice");
  if (get_device == nullptr || get_device(&device) != CUDA_SUCCESS) return next(out, size);
  void* p = nullptr;
  const int status = allocate_through(*settings().driver, device, &p, size);
  if (status == CUDA_SUCCESS) *out = static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(p));
  return static_cast<CUresult>(status);
}

ALLOCLAB_LIVE_EXPORT CUresult cuMemFree_v2(CUdeviceptr p) {
  const CuMemFreeFn next = real(g_cu_mem_free, kDriver, "cuMemFree_v2");
  if (next == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  if (t_inside != 0 || p == 0) return next(p);
  Inside inside;
  if (free_through(reinterpret_cast<void*>(static_cast<std::uintptr_t>(p)))) return CUDA_SUCCESS;
  return next(p);
}

// The run markers, passed on by liballoclab_live.so (preloaded before this library).
ALLOCLAB_LIVE_EXPORT void alloclab_preload_run_begin(const char* label) {
  Inside inside;
  const Settings& s = settings();
  if (!s.on) return;
  s.runtime->begin_run(label);
  s.driver->begin_run(label);
}

ALLOCLAB_LIVE_EXPORT void alloclab_preload_run_end(void) {
  Inside inside;
  const Settings& s = settings();
  if (!s.on) return;
  s.runtime->end_run();
  s.driver->end_run();
}
