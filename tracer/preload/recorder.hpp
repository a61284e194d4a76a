#pragma once
// The preload tracer's hot path: per-thread buffers of fixed-size raw records, a global
// sequence number for the total order, and nothing that locks or calls malloc.
//
// Ordering invariant (why the trace is consistent per address across threads): the sequence
// number of an allocation is taken AFTER the real allocator returned the block, and that of a
// free BEFORE the real free gives the block back. So when thread B reuses an address thread A
// freed, A's free has the smaller number.
//
// Completion protocol (what the writer may read): a thread reserves a slot with an atomic
// fetch_add on its buffer's `reserved` counter, takes a sequence number, fills the record and
// finally stores seq + 1 into `seq_plus1` with release. A slot whose seq_plus1 is 0 is in
// flight. Because the slot is reserved before the sequence number is taken, every sequence
// number below a value S read by the writer belongs to a slot already reserved when the writer
// then reads `reserved`. A signal handler that allocates on the same thread simply reserves the
// next slot; the interrupted record completes when the handler returns.
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace alloclab::preload {

// Ops beyond alloclab::Op: a slot whose operation turned out not to happen (a failed realloc).
inline constexpr std::uint8_t op_skip = 0xFF;
inline constexpr std::uint8_t flag_realloc_new =
    1;  // alloc(new) of a realloc; pair_seq is its free

struct Record {
  std::atomic<std::uint64_t> seq_plus1;
  std::uint64_t ticks;    // clock.hpp: converted to nanoseconds by the writer
  std::uint64_t address;  // markers: index into the label ring
  std::uint64_t size;
  std::uint64_t pair_seq;  // flag_realloc_new: the sequence number of free(old)
  std::uint32_t alignment;
  std::uint8_t op;
  std::uint8_t kind;
  std::uint8_t flags;
  std::uint8_t depth;  // --stacks: return addresses stored in this record's frame slots
};

inline constexpr std::uint32_t buffer_records = 65536;

struct Buffer {
  std::atomic<std::uint32_t> reserved;
  std::atomic<bool> abandoned;  // its thread moved on (buffer full) or exited
  std::uint32_t consumed;       // writer only: slots below this were collected
  std::uint64_t thread;         // kernel thread id of the owner
  Buffer* next_new;             // registration list (lock-free push)
  Buffer* next_owned;           // writer's own list
  Record records[buffer_records];
};

// Labels of markers live in a ring so records stay small; a slot carries the sequence number
// of its marker so the writer can tell a label that was overwritten before it was collected.
inline constexpr std::size_t label_bytes = 64;
inline constexpr std::size_t label_slots = 4096;
struct LabelSlot {
  std::atomic<std::uint64_t> seq_plus1;
  char text[label_bytes] = {};
};

enum class State : int { uninitialized, initializing, enabled, disabled };

struct Globals {
  std::atomic<int> state{static_cast<int>(State::uninitialized)};
  std::atomic<std::uint64_t> seq{0};
  std::atomic<Buffer*> new_buffers{nullptr};
  std::atomic<int> live_buffers{0};
  std::atomic<std::uint64_t> dropped{0};
  std::atomic<bool> final_flush_done{false};  // no writer any more: never wait for one
  std::atomic<std::uint64_t> label_next{0};
  std::uint64_t min_size = 0;
  int max_buffers = 128;
  int pid = 0;
  LabelSlot labels[label_slots];
};
extern Globals g;

// Recursion guard: while non-zero, allocations on this thread are passed through unrecorded
// (the tracer's own work, and the writer thread always).
extern thread_local int t_guard __attribute__((tls_model("initial-exec")));

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
extern thread_local int t_heap_guard __attribute__((tls_model("initial-exec")));

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
Pending begin_record();
void complete_record(const Pending& pending, std::uint8_t op, std::uint8_t kind,
                     std::uint64_t address, std::uint64_t size, std::uint64_t alignment,
                     std::uint8_t flags = 0, std::uint64_t pair_seq = 0);
// One-step form for events whose order point is "now".
void record_event(std::uint8_t op, std::uint8_t kind, std::uint64_t address, std::uint64_t size,
                  std::uint64_t alignment);
void record_marker(std::uint8_t op, const char* label);

// Anonymous mappings that were recorded, so munmap records only those (and --min-size stays
// consistent). Lock-free open addressing; a full table just stops recording new mappings.
bool mapping_insert(std::uint64_t address);
bool mapping_erase(std::uint64_t address);

// Called by the writer: this thread's buffer is handed over at thread exit.
void thread_exit_handover();
// In a forked child: this thread's buffer belongs to the parent's trace; start a new one.
void forget_thread_buffer();
void init_thread_key();
// Called by the writer for a buffer it has emptied and that no thread uses any more: keeps it
// for reuse (or unmaps it when enough are kept).
void recycle_buffer(Buffer* b);

void* raw_map(std::size_t bytes);
void raw_unmap(void* p, std::size_t bytes);

}  // namespace alloclab::preload
