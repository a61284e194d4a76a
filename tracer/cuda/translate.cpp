#include "translate.hpp"

#include <array>

namespace alloclab::cuda {
namespace {

constexpr std::array<std::string_view, api_count> api_names = {
    "cudaMalloc",      "cudaMallocPitch",
    "cudaMalloc3D",    "cudaMallocManaged",
    "cudaMallocHost",  "cudaHostAlloc",
    "cudaMallocAsync", "cudaMallocFromPoolAsync",
    "cudaFree",        "cudaFreeHost",
    "cudaFreeAsync",   "cuMemAlloc",
    "cuMemAllocPitch", "cuMemAllocManaged",
    "cuMemAllocHost",  "cuMemHostAlloc",
    "cuMemAllocAsync", "cuMemAllocFromPoolAsync",
    "cuMemFree",       "cuMemFreeHost",
    "cuMemFreeAsync",  "cuMemCreate",
    "cuMemRelease",    "cuMemMap",
    "cuMemUnmap",
};

// What an allocating call makes; nullopt for calls that free or only manage handles.
std::optional<MemoryKind> allocation_kind(Api api) {
  switch (api) {
    case Api::cuda_malloc:
    case Api::cuda_malloc_pitch:
    case Api::cuda_malloc_3d:
    case Api::cu_mem_alloc:
    case Api::cu_mem_alloc_pitch:
      return MemoryKind::device;
    case Api::cuda_malloc_managed:
    case Api::cu_mem_alloc_managed:
      return MemoryKind::managed;
    case Api::cuda_malloc_host:
    case Api::cuda_host_alloc:
    case Api::cu_mem_alloc_host:
    case Api::cu_mem_host_alloc:
      return MemoryKind::pinned;
    case Api::cuda_malloc_async:
    case Api::cuda_malloc_from_pool_async:
    case Api::cu_mem_alloc_async:
    case Api::cu_mem_alloc_from_pool_async:
      return MemoryKind::async_pool;
    default:
      return std::nullopt;
  }
}

}  // namespace

bool may_allocate(Api api) {
  return api == Api::cu_mem_map || allocation_kind(api).has_value();
}

namespace {

// The kind a free expects when the address was never seen allocated.
std::optional<MemoryKind> freed_kind(Api api) {
  switch (api) {
    case Api::cuda_free:
    case Api::cu_mem_free:
      return MemoryKind::device;
    case Api::cuda_free_host:
    case Api::cu_mem_free_host:
      return MemoryKind::pinned;
    case Api::cuda_free_async:
    case Api::cu_mem_free_async:
      return MemoryKind::async_pool;
    default:
      return std::nullopt;
  }
}

bool pitched(Api api) {
  return api == Api::cuda_malloc_pitch || api == Api::cuda_malloc_3d ||
         api == Api::cu_mem_alloc_pitch;
}

std::uint64_t requested_bytes(const ApiCall& call) {
  if (!pitched(call.api)) return call.size;
  // A failed pitched call returns no pitch: the row width it asked for stands in for it.
  const std::uint64_t row = call.pitch ? call.pitch : call.size;
  const std::uint64_t depth = call.api == Api::cuda_malloc_3d ? call.depth : 1;
  return row * call.height * depth;
}

}  // namespace

std::string_view api_name(Api api) {
  return api_names.at(static_cast<std::size_t>(api));
}

bool is_runtime_api(Api api) {
  return static_cast<int>(api) <= static_cast<int>(Api::cuda_free_async);
}

Event Translator::alloc_event(const ApiCall& call, MemoryKind kind, DeviceId device,
                              std::uint64_t size) {
  Event event;
  event.time_ns = call.time_ns;
  event.thread = call.thread;
  event.op = Op::alloc;
  event.device = device;
  event.kind = kind;
  event.stream = call.stream;
  event.pool = call.pool;
  event.address = call.succeeded ? call.address : 0;
  event.size = size;
  if (event.address != 0)
    live_[event.address] = Live{device, kind, !is_runtime_api(call.api), call.thread, call.pool};
  return event;
}

std::optional<Event> Translator::free_event(const ApiCall& call, std::uint64_t address,
                                            MemoryKind kind) {
  if (address == 0) return std::nullopt;
  Event event;
  event.time_ns = call.time_ns;
  event.thread = call.thread;
  event.op = Op::free;
  event.device = call.device;
  event.kind = kind;
  event.stream = call.stream;
  event.address = address;
  if (auto it = live_.find(address); it != live_.end()) {
    event.device = it->second.device;
    event.kind = it->second.kind;
    event.pool = it->second.pool;
    live_.erase(it);
  }
  return event;
}

void Translator::unmap_events(const ApiCall& call, std::vector<Event>& out) {
  // One cuMemUnmap may cover many mappings (a growing segment mapped chunk by chunk and
  // unmapped at once); an unmap of an address never mapped is still recorded, as a free the
  // reader will count as unknown.
  const std::uint64_t end = call.address + call.size;
  auto it = mappings_.lower_bound(call.address);
  if (it == mappings_.end() || it->first != call.address) {
    if (auto event = free_event(call, call.address, MemoryKind::vmm)) out.push_back(*event);
  }
  while (it != mappings_.end() && it->first < end) {
    if (auto event = free_event(call, it->first, MemoryKind::vmm)) out.push_back(*event);
    it = mappings_.erase(it);
  }
}

bool CallNesting::admit(bool runtime_api, Site site) {
  if (!runtime_api) return runtime_depth_ == 0;
  if (site == Site::enter)
    ++runtime_depth_;
  else if (runtime_depth_ > 0)  // the call that initialised CUDA has an exit but no entry
    --runtime_depth_;
  return true;
}

bool Translator::seen_twice(const ApiCall& call) const {
  if (!is_runtime_api(call.api) || !call.succeeded) return false;
  const auto it = live_.find(call.address);
  return it != live_.end() && it->second.by_driver_api && it->second.thread == call.thread;
}

void Translator::translate(const ApiCall& call, std::vector<Event>& out) {
  switch (call.api) {
    case Api::cu_mem_create:
      // Physical memory without an address yet: remembered until it is mapped.
      if (call.site == Site::exit && call.succeeded && call.handle != 0)
        handles_[call.handle] =
            Physical{call.handle_device >= 0 ? call.handle_device : call.device, call.size};
      return;
    case Api::cu_mem_release:
      // Mappings keep the memory alive after its release; they end at cuMemUnmap.
      if (call.site == Site::enter) handles_.erase(call.handle);
      return;
    case Api::cu_mem_map: {
      if (call.site != Site::exit || !call.succeeded || call.address == 0) return;
      const auto it = handles_.find(call.handle);
      const DeviceId device = it != handles_.end() ? it->second.device : call.device;
      mappings_[call.address] = call.size;
      out.push_back(alloc_event(call, MemoryKind::vmm, device, call.size));
      return;
    }
    case Api::cu_mem_unmap:
      if (call.site == Site::enter) unmap_events(call, out);
      return;
    default:
      break;
  }
  if (const auto kind = allocation_kind(call.api)) {
    // A zero-byte request succeeds with no address (PyTorch makes them for empty tensors):
    // nothing was allocated, as the program's cudaFree(NULL) of it is no event either.
    if (call.succeeded && call.address == 0) return;
    if (call.site == Site::exit && !seen_twice(call))
      out.push_back(alloc_event(call, *kind, call.device, requested_bytes(call)));
    return;
  }
  if (const auto kind = freed_kind(call.api)) {
    if (call.site != Site::enter) return;
    if (auto event = free_event(call, call.address, *kind)) out.push_back(*event);
  }
}

}  // namespace alloclab::cuda
