#pragma once
// The CUDA tracer's one piece of judgement: which CUDA call becomes which event. Pure (no CUDA
// headers, no device), so it is tested on constructed calls anywhere; injection.cpp only copies
// CUPTI's callback parameters into an ApiCall and hands the result to the sink.
//
// Ordering rule (why a trace stays consistent across threads): an allocation becomes an event on
// the call's exit, after the driver returned the address; a free on the call's entry, before the
// driver can hand the address out again. The caller takes both under one lock, so when thread B
// gets an address thread A freed, A's free is earlier in the trace. Stream-ordered frees
// (cudaFreeAsync) follow the same rule: the pool may reuse the address for work queued after the
// free on the same stream as soon as the call returns.
#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "alloclab/format/event.hpp"

namespace alloclab::cuda {

enum class Api : std::uint8_t {
  // runtime API
  cuda_malloc,
  cuda_malloc_pitch,
  cuda_malloc_3d,
  cuda_malloc_managed,
  cuda_malloc_host,
  cuda_host_alloc,
  cuda_malloc_async,
  cuda_malloc_from_pool_async,
  cuda_free,
  cuda_free_host,
  cuda_free_async,
  // driver API
  cu_mem_alloc,
  cu_mem_alloc_pitch,
  cu_mem_alloc_managed,
  cu_mem_alloc_host,
  cu_mem_host_alloc,
  cu_mem_alloc_async,
  cu_mem_alloc_from_pool_async,
  cu_mem_free,
  cu_mem_free_host,
  cu_mem_free_async,
  cu_mem_create,
  cu_mem_release,
  cu_mem_map,
  cu_mem_unmap,
};
inline constexpr int api_count = static_cast<int>(Api::cu_mem_unmap) + 1;

std::string_view api_name(Api api);
bool is_runtime_api(Api api);
// Whether a call to `api` can record an allocation (on its exit): those whose stack is taken.
bool may_allocate(Api api);

enum class Site : std::uint8_t { enter, exit };

// One CUDA call as CUPTI reports it, reduced to what the translation needs. Fields a call does
// not have stay 0.
struct ApiCall {
  Api api = Api::cuda_malloc;
  Site site = Site::enter;
  bool succeeded = true;  // exit only: the call returned success
  std::uint64_t thread = 0;
  std::uint64_t time_ns = 0;
  DeviceId device = 0;       // device of the calling thread's current context
  std::uint64_t stream = 0;  // stream handle (0: the legacy default stream)
  std::uint64_t pool = 0;    // memory pool handle of *FromPoolAsync (0: the device's default)
  // Allocations: the address returned (exit). Frees, cuMemMap, cuMemUnmap: the address argument.
  std::uint64_t address = 0;
  // Bytes asked for. Pitched calls: `pitch` (returned) times `height` times `depth` replaces it.
  std::uint64_t size = 0;
  std::uint64_t pitch = 0;
  std::uint64_t height = 0;
  std::uint64_t depth = 0;
  // cuMemCreate (returned), cuMemRelease, cuMemMap: the physical allocation's handle, and for
  // cuMemCreate the device its properties name (-1 when it is not a device location).
  std::uint64_t handle = 0;
  DeviceId handle_device = 0;
};

// One per thread: driver calls a traced runtime call makes internally (cudaMalloc calls
// cuMemAlloc) are that runtime call's own work and are not recorded a second time.
class CallNesting {
 public:
  // Whether this callback is to be translated; called for every runtime and driver callback.
  bool admit(bool runtime_api, Site site);
  int runtime_depth() const { return runtime_depth_; }

 private:
  int runtime_depth_ = 0;
};

// Translates calls to events, remembering what it must: the device and kind of every live
// allocation (a free is recorded on the device of its allocation, whatever device is current)
// and the physical allocations of the virtual memory API. Not thread-safe: the caller serialises
// calls, which it must anyway for the ordering rule above.
class Translator {
 public:
  // Appends the events to record for this call at this site, in order: usually one, none for
  // calls at the other site, for a free of address 0 (cudaFree(0) initialises a context) and for
  // handle bookkeeping (cuMemCreate, cuMemRelease), several for a cuMemUnmap whose range covers
  // several mappings. A failed allocation becomes an alloc at address 0 (the reader counts it
  // as failed_allocs); a successful one that returned no address (a zero-byte request) none.
  //
  // The caller drops driver calls made inside a traced runtime call (cudaMalloc calls
  // cuMemAlloc), but it cannot for the runtime call during which CUDA, and so the tracer, was
  // initialised: its entry came before the subscription. So a runtime allocation that returns
  // an address its own thread's driver call just recorded as live is the same allocation seen
  // twice and gives no second event.
  void translate(const ApiCall& call, std::vector<Event>& out);

  std::size_t live_allocations() const { return live_.size(); }
  std::size_t live_physical_handles() const { return handles_.size(); }
  std::size_t live_mappings() const { return mappings_.size(); }

 private:
  struct Live {
    DeviceId device;
    MemoryKind kind;
    bool by_driver_api;    // made by a driver call (see seen_twice)
    std::uint64_t thread;  // the thread that made it
    std::uint64_t pool;    // its explicit memory pool (0: none): its free names it too
  };
  bool seen_twice(const ApiCall& call) const;
  struct Physical {
    DeviceId device;
    std::uint64_t size;
  };
  Event alloc_event(const ApiCall& call, MemoryKind kind, DeviceId device, std::uint64_t size);
  std::optional<Event> free_event(const ApiCall& call, std::uint64_t address, MemoryKind kind);
  void unmap_events(const ApiCall& call, std::vector<Event>& out);

  std::unordered_map<std::uint64_t, Live> live_;
  std::unordered_map<std::uint64_t, Physical> handles_;
  std::map<std::uint64_t, std::uint64_t> mappings_;  // cuMemMap address -> bytes, for ranges
};

}  // namespace alloclab::cuda
