#pragma once
// One thing the tracer saw. This row form is for building and inspecting traces; a Trace stores
// events as columns (see trace.hpp).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace alloclab {

enum class Op : std::uint8_t { alloc = 0, free = 1, run_begin = 2, run_end = 3, mark = 4 };
inline constexpr int op_count = 5;

// host: malloc and friends. device: cudaMalloc/cuMemAlloc. managed: cudaMallocManaged. pinned:
// page-locked host memory (cudaMallocHost/cudaHostAlloc). mapped: anonymous mmap. async_pool:
// stream-ordered allocations from a CUDA memory pool (cudaMallocAsync, cuMemAllocFromPoolAsync).
// vmm: a cuMemMap of physical memory made by cuMemCreate (CUDA virtual memory management).
// Three bits in the packed attributes (event_attrs.hpp): at most 8 kinds.
enum class MemoryKind : std::uint8_t {
  host = 0,
  device = 1,
  managed = 2,
  pinned = 3,
  mapped = 4,
  async_pool = 5,
  vmm = 6
};
inline constexpr int memory_kind_count = 7;

// -1 is the CPU; N >= 0 is cuda:N.
using DeviceId = std::int32_t;
inline constexpr DeviceId cpu_device = -1;

struct Event {
  std::uint64_t time_ns = 0;
  std::uint64_t thread = 0;
  Op op = Op::alloc;
  DeviceId device = cpu_device;
  MemoryKind kind = MemoryKind::host;
  std::uint64_t stream = 0;
  // The CUDA memory pool of a cudaMallocFromPoolAsync / cuMemAllocFromPoolAsync block, and of
  // its free (0: not from an explicit pool; cudaMallocAsync serves the device's current pool).
  std::uint64_t pool = 0;
  std::uint64_t address = 0;
  std::uint64_t size = 0;
  std::uint64_t alignment = 0;  // 0: the allocator's default; otherwise a power of two
  std::string label;            // runs and marks only
  // The allocator's own call to its upstream (a PyTorch segment_alloc, say), not a program
  // request. Kept beside the requests so the recorded allocator's hit rate can be read off;
  // never replayed.
  bool segment = false;
  // On an alloc only: this alloc is a realloc that returned the very block it was given. The
  // realloc's free of that block, at the same address, comes before it (other threads' events
  // may come between). The replay keeps the block for it (docs/strategy-contract.md).
  bool realloc_in_place = false;

  bool operator==(const Event&) const = default;
};

std::string_view to_string(Op op);
std::string_view to_string(MemoryKind kind);
std::optional<Op> parse_op(std::string_view text);
std::optional<MemoryKind> parse_memory_kind(std::string_view text);
// "cpu" or "cuda:N".
std::string device_name(DeviceId device);
std::optional<DeviceId> parse_device(std::string_view text);

}  // namespace alloclab
