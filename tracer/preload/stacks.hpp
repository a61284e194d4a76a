#pragma once
// Call stacks for `alloclab record --stacks N`. The hot path only copies return addresses into
// the record's own frame slots (next to the records in its buffer); the writer process
// deduplicates them and names each frame. With stacks off (the default) nothing here runs:
// buffers carry no frame slots and the hot path tests one integer.
#include <cstddef>
#include <cstdint>

#include "alloclab/protocol/recorder_memory.hpp"

namespace alloclab::preload {

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

inline std::uint64_t* record_frames(protocol::Buffer* b, std::uint32_t slot) {
  return protocol::frame_slots(b, slot, g_stack_depth);
}

// Hot path: stores up to g_stack_depth return addresses of the caller of the interposed
// function (the tracer's own frames skipped) and returns how many.
int capture_stack(std::uint64_t* frames);

// Set while a thread's first unwind runs (capture_stack): the allocation hooks hand the blocks
// allocated meanwhile to note_unwinder_block instead of recording them.
extern thread_local constinit bool t_collect_unwinder_blocks
    __attribute__((tls_model("initial-exec")));
void note_unwinder_block(void* p, std::size_t size);
// Whether `p` is a block the unwinder allocated for itself (libunwind's thread-local storage on
// a thread's first unwind, which the C library frees, through free(), when the thread ends):
// neither its allocation nor its free is the program's. Forgets it once asked about.
bool forget_unwinder_block(const void* p);
// Whether any unwinder block is outstanding (the free hook asks nothing more otherwise).
bool unwinder_blocks_outstanding();

}  // namespace alloclab::preload
