#pragma once
// The preload tracer's hot path: per-thread buffers of fixed-size raw records, a global
// sequence number for the total order, and nothing that locks or calls malloc.
//
// Ordering invariant (why the trace is consistent per address across threads): the sequence
// number of an allocation is taken AFTER the real allocator returned the block, and that of a
// free BEFORE the real free gives the block back. So when thread B reuses an address thread A
// freed, A's free has the smaller number.
//
// Completion protocol (what the writer may read): a thread reserves a slot by adding to its
// buffer's `reserved` counter, takes a sequence number (each one instruction, without a lock
// prefix where only the thread itself and its signal handlers add: recorder.cpp), fills the
// record and finally stores seq + 1 into `seq_plus1` with release. A slot whose seq_plus1 is not
// above its buffer's `floor` is in flight. Because the slot is reserved before the sequence number
// is taken, every sequence number below a value S read by the writer belongs to a slot already
// reserved when the writer then reads `reserved`. A signal handler that allocates on the same
// thread simply reserves the next slot; the interrupted record completes when the handler returns.
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "alloclab/trace/event.hpp"

namespace alloclab::preload {

// The ops and kinds the hooks record, as a record's 3-bit fields hold them.
inline constexpr std::uint8_t op_alloc = static_cast<std::uint8_t>(Op::alloc);
inline constexpr std::uint8_t op_free = static_cast<std::uint8_t>(Op::free);
inline constexpr std::uint8_t kind_host = static_cast<std::uint8_t>(MemoryKind::host);
inline constexpr std::uint8_t kind_mapped = static_cast<std::uint8_t>(MemoryKind::mapped);

// Ops beyond alloclab::Op: a slot whose operation turned out not to happen (a failed realloc),
// and the companion of a moved realloc's alloc(new), reserved with it in the next slot, whose
// address field holds the sequence number of the realloc's free(old).
inline constexpr std::uint8_t op_skip = 7;
inline constexpr std::uint8_t op_pair = 6;

// Two records per cache line: the program writes every byte of them and the writer thread reads
// them from another core, so their size is most of the tracer's memory traffic. User space is
// below 2^56 bytes (even with 5-level page tables), so a size or an address leaves the top byte
// free for the rest of the event.
inline constexpr unsigned field_bits = 56;
inline constexpr std::uint64_t field_mask = (std::uint64_t{1} << field_bits) - 1;

struct Record {
  std::atomic<std::uint64_t> seq_plus1;
  std::uint64_t ticks;  // clock.hpp: converted to nanoseconds by the writer
  // address | alignment code << 56 (0: none, else log2 + 1). Markers: index into the label ring.
  std::uint64_t address_align;
  std::uint64_t size_op;  // size | op << 56 | kind << 59 | realloc_free_bit
};
// On a realloc's free(old) when its alloc(new) follows: the writer keeps the two in one batch.
inline constexpr std::uint64_t realloc_free_bit = std::uint64_t{1} << 62;
static_assert(sizeof(Record) == 32);

inline std::uint64_t pack_size_op(std::uint64_t size, std::uint8_t op, std::uint8_t kind) {
  return (size & field_mask) | std::uint64_t{op} << 56 | std::uint64_t{kind} << 59;
}
inline std::uint64_t record_size(std::uint64_t size_op) {
  return size_op & field_mask;
}
inline std::uint8_t record_op(std::uint64_t size_op) {
  return static_cast<std::uint8_t>(size_op >> 56 & 7);
}
inline std::uint8_t record_kind(std::uint64_t size_op) {
  return static_cast<std::uint8_t>(size_op >> 59 & 7);
}

inline constexpr std::uint32_t buffer_records = 65536;

struct Buffer {
  std::atomic<std::uint32_t> reserved;
  // Slots keep their old contents when a buffer is reused (clearing them would pull every line
  // into the writer's cache, and the program would then fetch them back one by one): a slot is
  // complete once its seq_plus1 is above `floor`, the sequence counter when the buffer was
  // recycled, which every number taken since exceeds.
  std::uint64_t floor;
  std::atomic<bool> abandoned;  // its thread moved on (buffer full) or exited
  // Set before `abandoned` when its thread moved on because it was full: it counts in
  // Globals::full_buffers until the writer has emptied it.
  bool handed_over_full;
  std::uint32_t consumed;   // writer only: slots below this were collected
  std::uint64_t thread;     // kernel thread id of the owner
  Buffer* next_new;         // registration list (lock-free push)
  Buffer* next_owned;       // writer's own list
  std::uint32_t pool_next;  // BufferPool's free list: the next free buffer's index + 1
  // Two records to a cache line, as Record says: the header has a line of its own.
  alignas(64) Record records[buffer_records];
};

// Labels of markers live in a ring so records stay small; a slot carries the sequence number
// of its marker so the writer can tell a label that was overwritten before it was collected.
inline constexpr std::size_t label_bytes = 64;
inline constexpr std::size_t label_slots = 4096;
// A seqlock: the text is written and read word by word through atomics (release stores,
// acquire loads: plain moves on x86), so a label overwritten while the writer copies it is
// detected by seq_plus1 without any data race, and ThreadSanitizer can check it.
struct LabelSlot {
  static constexpr std::size_t words = label_bytes / sizeof(std::uint64_t);
  std::atomic<std::uint64_t> seq_plus1;
  std::atomic<std::uint64_t> text[words] = {};
};

enum class State : int { uninitialized, initializing, enabled, disabled };

struct Globals {
  std::atomic<int> state{static_cast<int>(State::uninitialized)};
  std::atomic<std::uint64_t> seq{0};
  std::atomic<Buffer*> new_buffers{nullptr};
  // Buffers handed over full and not emptied yet: how far the writer is behind. A thread that
  // fills one waits while there are max_buffers of them. Threads' current buffers do not count:
  // a program with more threads than that is not behind (its 129th thread used to wait ~10 s
  // for room, then lose its events).
  std::atomic<int> full_buffers{0};
  std::atomic<std::uint64_t> dropped{0};
  // Buffers filled so far: the writer flushes when one fills rather than waiting for its
  // period, so at high event rates what is not on disk yet stays near one buffer's worth.
  std::atomic<std::uint64_t> buffers_filled{0};
  std::atomic<bool> final_flush_done{false};  // no writer any more: never wait for one
  // Until the program may run a second thread of its own, its one thread takes sequence numbers
  // without a lock (recorder.cpp says why that is sound and what it saves). Set before
  // pthread_create starts a thread, or by the first record of a thread that came another way.
  std::atomic<bool> many_threads{false};
  std::atomic<std::uint64_t> first_thread{0};  // kernel id of the thread that recorded first
  std::atomic<std::uint64_t> label_next{0};
  // Labels taken below this number are written (the writer sets it after each flush), so the
  // ring's slots below it may be reused.
  std::atomic<std::uint64_t> labels_collected{0};
  std::uint64_t min_size = 0;
  int max_buffers = 128;
  int pid = 0;
  LabelSlot labels[label_slots];
};

// The writer's side of the handshakes: flush requests, naps and wakes (futex words), its stop.
struct WriterControl {
  std::atomic<bool> running{false};
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> flush_requests{0};
  std::atomic<std::uint64_t> flush_done{0};
  std::atomic<std::uint32_t> wake{0};     // the writer naps on it between flushes
  std::atomic<std::uint32_t> flushes{0};  // flushes done: a thread waiting for one naps on it
  // A writer process (writer.cpp): how its start went, and its pid.
  std::atomic<std::uint32_t> process_state{0};
  std::atomic<int> process_pid{0};
};

// Buffers for a writer process: one shared mapping reserved up front, for buffers mapped later
// would be the program's alone. Threads take buffers from it and the writer gives them back.
struct BufferPool {
  char* base = nullptr;  // nullptr: no pool, each buffer is a mapping of its own
  std::size_t slot_bytes = 0;
  std::uint32_t slots = 0;
  std::atomic<std::uint32_t> next_unused{0};
  // Index + 1 of the first free buffer (0: none) | a count of changes << 32, so that a buffer
  // taken and given back between a reader's load and its exchange fails the exchange.
  std::atomic<std::uint64_t> free_list{0};
};

inline constexpr int spare_slots = 16;

// What the program's threads and the writer both use. A writer process shares these pages with
// the program: they are remapped shared before it is forked (writer.cpp), so the object has
// pages of its own.
struct alignas(4096) Shared {
  Globals globals;
  // Buffers the writer emptied, ready for reuse: a thread takes one with an exchange, so no two
  // threads can get the same buffer (no ABA as a lock-free list would have). Reusing them spares
  // the program the page faults of fresh mappings.
  std::atomic<Buffer*> spares[spare_slots] = {};
  WriterControl writer;
  BufferPool pool;
};
extern constinit Shared g_shared;
inline constexpr Globals& g = g_shared.globals;

// Recursion guard: while non-zero, allocations on this thread are passed through unrecorded
// (the tracer's own work, and the writer thread always).
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

// Called by the writer: this thread's buffer is handed over at thread exit.
void thread_exit_handover();
// In a forked child: this thread's buffer belongs to the parent's trace; start a new one. The
// child has this one thread.
void forget_thread_buffer();
// In a writer process: the buffer of the thread that forked it is the program's, which goes on
// using it.
void leave_thread_buffer();
// Before the program starts a thread: sequence numbers are taken with a lock from now on.
inline void expect_many_threads() {
  g.many_threads.store(true, std::memory_order_seq_cst);
}
void init_thread_key();
// Called by the writer for a buffer it has emptied and that no thread uses any more: keeps it
// for reuse (or unmaps it when enough are kept).
void recycle_buffer(Buffer* b);

void* raw_map(std::size_t bytes);
void raw_unmap(void* p, std::size_t bytes);

// g_shared's pages become a shared mapping (before a writer process is forked), or again the
// process's own (in a fork child, whose copy must not write into its parent's).
bool share_state();
void unshare_state();
// Reserves the shared pool that a writer process needs (false: none could be mapped); a fork
// child lets go of its parent's, spares included.
bool reserve_buffer_pool();
void forget_buffer_pool();

}  // namespace alloclab::preload

#if !defined(ALLOCLAB_TSAN_BUILD) || defined(ALLOCLAB_RECORDER_DEFINES_FAST_PATH)
#include "recorder_fast_path.hpp"
#endif
