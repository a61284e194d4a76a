#pragma once
// Call stacks for `alloclab record --stacks N`. The hot path only copies return addresses into
// the record's own frame slots (next to the records in its buffer); the writer thread
// deduplicates them into a stack table and names each new frame once, with dladdr. With stacks
// off (the default) nothing here runs: buffers carry no frame slots and the hot path tests one
// integer.
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "alloclab/trace/trace.hpp"

namespace alloclab::preload {

struct Buffer;

inline constexpr int max_stack_depth = 64;

// Code of one loaded object: its lowest to highest PT_LOAD address.
struct CodeRange {
  std::uintptr_t begin = 0;
  std::uintptr_t end = 0;
  bool contains(std::uintptr_t address) const { return address >= begin && address < end; }
};
// The code range of the loaded object that holds `address`; empty when none does.
CodeRange code_range_of(const void* address);

// Frames per allocation, 0 when off. Set once by stacks_configure before tracing starts.
extern int g_stack_depth;

// From ALLOCLAB_STACKS; before the tracer is enabled. Makes no library calls that allocate.
void stacks_configure(const char* depth_text);
// In the library constructor, with the recursion guard held: picks the unwinder (libunwind,
// opened now, in a build with ALLOCLAB_LIBUNWIND when it loads; else glibc's backtrace()), whose
// first use does its lazy setup (loading libgcc_s, libunwind's caches; both allocate), and finds
// the tracer's own code range. Until then allocations are recorded without stacks.
void stacks_warm_up();
// "libunwind" or "backtrace": the unwinder stacks_warm_up picked (for the trace's metadata).
const char* stacks_unwinder();

// Bytes of one buffer: its records plus, with stacks on, depth frame slots per record.
std::size_t buffer_bytes();
std::uint64_t* frame_slots(Buffer* b, std::uint32_t slot);

// Hot path: stores up to g_stack_depth return addresses of the caller of the interposed
// function (the tracer's own frames skipped) and returns how many.
int capture_stack(std::uint64_t* frames);

// Writer thread: turns raw frames into a stack id of `trace` (adding the stack, and any frame
// not seen before, to its tables).
class StackInterner {
 public:
  std::uint32_t intern(const std::uint64_t* frames, int depth, Trace& trace);

 private:
  std::uint32_t frame_index(std::uint64_t address, Trace& trace);

  struct KeyHash {
    std::size_t operator()(const std::vector<std::uint64_t>& key) const noexcept;
  };
  std::unordered_map<std::vector<std::uint64_t>, std::uint32_t, KeyHash> stacks_;
  std::unordered_map<std::uint64_t, std::uint32_t> frames_;
  std::vector<std::uint64_t> key_;
};

}  // namespace alloclab::preload
