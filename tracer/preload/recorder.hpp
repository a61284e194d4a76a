#pragma once
// The preload tracer's hot path: per-thread buffers of fixed-size raw records in the memory
// shared with the writer process (alloclab/protocol/recorder_memory.hpp says what is in it and
// in which order a record is filled), a global sequence number for the total order, and
// nothing that locks or calls malloc.
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "alloclab/protocol/recorder_memory.hpp"

namespace alloclab::preload {

using namespace alloclab::protocol;

// This process's view of the shared memory: g_shared's own pages are mapped from the shared
// file, so the hot path reaches the globals at a fixed address; the pool is mapped after it.
extern constinit Shared g_shared;
inline constexpr Globals& g = g_shared.globals;
extern char* g_pool_base;

// Recursion guard: while non-zero, allocations on this thread are passed through unrecorded
// (the tracer's own work).
// constinit here tells every file that includes this that no thread-local initialiser runs,
// so reading these costs one load, not a call through a TLS wrapper first.
extern thread_local constinit int t_guard __attribute__((tls_model("initial-exec")));

struct GuardScope {
  GuardScope() { ++t_guard; }
  ~GuardScope() { --t_guard; }
  GuardScope(const GuardScope&) = delete;
  GuardScope& operator=(const GuardScope&) = delete;
};

// Raised only around the tracer's own calls that may allocate from the heap in the middle of a
// record (pthread_setspecific). It hides heap events only, not the mmap/munmap of a signal
// handler that interrupts such a call: t_guard there lost those (the call's first run, lazily
// bound, took tens of microseconds; the library is now bound at load time as well).
extern thread_local constinit int t_heap_guard __attribute__((tls_model("initial-exec")));

inline bool tracing() {
  return g.state.load(std::memory_order_relaxed) == static_cast<int>(State::enabled) &&
         t_guard == 0;
}

inline bool tracing_heap() {
  return tracing() && t_heap_guard == 0;
}

// Reserves a slot and takes a sequence number; nullptr (and counted as dropped) only when no
// buffer could be mapped.
struct Pending {
  Record* record;
  std::uint64_t seq;
  std::uint64_t* frames = nullptr;  // the record's frame slots, with --stacks
};

// The per-event path is inline in the interposed functions: as calls, with their register
// saves, it cost a measurable part of an event on malloc-heavy loops (bench/tracer_overhead).
// ThreadSanitizer builds leave those functions uninstrumented (hooks.cpp), so there it stays out
// of line, in recorder.cpp, where the sanitizer checks it.
#ifdef ALLOCLAB_TSAN_BUILD
#define ALLOCLAB_FAST_PATH
#else
#define ALLOCLAB_FAST_PATH inline
#endif

ALLOCLAB_FAST_PATH Pending begin_record();
// Two adjacent slots under one sequence number: a moved realloc's alloc(new) and its op_pair
// companion (the writer finds the companion right after the record, in the same flush).
ALLOCLAB_FAST_PATH Pending begin_record_pair();
ALLOCLAB_FAST_PATH void complete_record(const Pending& pending, std::uint8_t op, std::uint8_t kind,
                                        std::uint64_t address, std::uint64_t size,
                                        std::uint64_t alignment, std::uint64_t flags = 0);
// Completes both slots of begin_record_pair: alloc(new) of a moved realloc.
void complete_moved_realloc(const Pending& pending, std::uint64_t address, std::uint64_t size,
                            std::uint64_t free_seq);
// One-step form for events whose order point is "now".
ALLOCLAB_FAST_PATH void record_event(std::uint8_t op, std::uint8_t kind, std::uint64_t address,
                                     std::uint64_t size, std::uint64_t alignment);
void record_marker(std::uint8_t op, const char* label);

// At thread exit: this thread's buffer is handed over to the writer.
void thread_exit_handover();
// In a forked child: this thread's buffer belongs to the parent's trace; start a new one. The
// child has this one thread.
void forget_thread_buffer();
// Before the program starts a thread: sequence numbers are taken with a lock from now on.
inline void expect_many_threads() {
  g.many_threads.store(true, std::memory_order_seq_cst);
}
void init_thread_key();

// The memory shared with the writer process (shared_memory.cpp). make_shared_memory: new shared
// memory that holds g_shared's contents so far, mapped over g_shared's own pages, and the pool;
// false when none could be made (then nothing is recorded). Before anything is
// recorded into a pool: in the first call of the tracer, and in a fork child that is traced.
bool make_shared_memory();
// In a fork child: the parent's shared memory is not the child's to write to. g_shared's pages
// become the child's own again (a copy), and the pool is let go.
void leave_shared_memory();
// The System V segments of the shared memory (-1: none).
struct SharedMemoryIds {
  int shared;
  int pool;
};
SharedMemoryIds shared_memory_ids();

}  // namespace alloclab::preload

#if !defined(ALLOCLAB_TSAN_BUILD) || defined(ALLOCLAB_RECORDER_DEFINES_FAST_PATH)
#include "recorder_fast_path.hpp"
#endif
