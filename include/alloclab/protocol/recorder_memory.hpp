#pragma once
// The memory a traced program's recorder (liballoclab_preload.so) shares with its writer process
// (alloclab-writer): two System V shared memory segments, one holding `Shared`, one the buffer
// pool, whose ids the writer gets on its command line (--memory SHARED:POOL). Each process maps
// them at addresses of its own, so nothing in them is a pointer: a buffer is named by its index
// in the pool. Header-only and allocation-free: the recorder includes it and links no C++
// runtime.
//
// Ordering invariant (why the trace is consistent per address across threads): the sequence
// number of an allocation is taken AFTER the real allocator returned the block, and that of a
// free BEFORE the real free gives the block back. So when thread B reuses an address thread A
// freed, A's free has the smaller number.
//
// Completion protocol (what the writer may read): a thread reserves a slot by adding to its
// buffer's `reserved` counter, takes a sequence number, fills the record and finally stores
// seq + 1 into `seq_plus1` with release. A slot whose seq_plus1 is not above its buffer's `floor`
// is in flight. Because the slot is reserved before the sequence number is taken, every sequence
// number below a value S read by the writer belongs to a slot already reserved when the writer
// then reads `reserved`. A signal handler that allocates on the same thread simply reserves the
// next slot; the interrupted record completes when the handler returns.
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace alloclab::protocol {

// What a record's 3-bit op field holds: alloclab::Op's values (the writer checks they agree),
// then two of the recorder's own. op_skip: a slot whose operation turned out not to happen (a
// failed realloc). op_pair: the companion of a moved realloc's alloc(new), reserved with it in
// the next slot, whose address field holds the sequence number of the realloc's free(old).
inline constexpr std::uint8_t op_alloc = 0;
inline constexpr std::uint8_t op_free = 1;
inline constexpr std::uint8_t op_run_begin = 2;
inline constexpr std::uint8_t op_run_end = 3;
inline constexpr std::uint8_t op_mark = 4;
inline constexpr std::uint8_t op_pair = 6;
inline constexpr std::uint8_t op_skip = 7;
// The memory kind field: alloclab::MemoryKind's values.
inline constexpr std::uint8_t kind_host = 0;
inline constexpr std::uint8_t kind_mapped = 4;

// Two records per cache line: the program writes every byte of them and the writer reads them
// from another core, so their size is most of the tracer's memory traffic. User space is below
// 2^56 bytes (even with 5-level page tables), so a size or an address leaves the top byte free
// for the rest of the event.
inline constexpr unsigned field_bits = 56;
inline constexpr std::uint64_t field_mask = (std::uint64_t{1} << field_bits) - 1;

struct Record {
  std::atomic<std::uint64_t> seq_plus1;
  std::uint64_t ticks;  // Clock says how the writer turns them into nanoseconds
  // address | alignment code << 56 (0: none, else log2 + 1). Markers: index into the label ring.
  std::uint64_t address_align;
  std::uint64_t size_op;  // size | op << 56 | kind << 59 | realloc_free_bit | realloc_in_place_bit
};
// On a realloc's free(old) when its alloc(new) follows: the writer keeps the two in one batch.
inline constexpr std::uint64_t realloc_free_bit = std::uint64_t{1} << 62;
// On a realloc's alloc(new) when the realloc returned the block it was given and its free(old)
// was recorded: the event's realloc_in_place (alloclab/format/event.hpp).
inline constexpr std::uint64_t realloc_in_place_bit = std::uint64_t{1} << 63;
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
inline constexpr int max_stack_depth = 64;

// A buffer index + 1; 0 is "none".
using BufferRef = std::uint32_t;

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
  std::uint64_t thread;  // kernel thread id of the owner
  BufferRef next_new;    // registration list (lock-free push)
  BufferRef pool_next;   // the pool's free list
  // Two records to a cache line, as Record says: the header has a line of its own. With stacks,
  // `stack_depth` frame slots per record follow the records.
  alignas(64) Record records[buffer_records];
};

// The bytes of one buffer with `stack_depth` frames per record, and where a record's frames are.
inline std::size_t buffer_bytes(int stack_depth) {
  return sizeof(Buffer) + std::size_t{buffer_records} * static_cast<std::size_t>(stack_depth) *
                              sizeof(std::uint64_t);
}
inline std::uint64_t* frame_slots(Buffer* b, std::uint32_t slot, int stack_depth) {
  return reinterpret_cast<std::uint64_t*>(b + 1) +
         static_cast<std::size_t>(slot) * static_cast<std::size_t>(stack_depth);
}

// Labels of markers live in a ring so records stay small; a slot carries the sequence number of
// its marker so the writer can tell a label that was overwritten before it was collected.
inline constexpr std::size_t label_bytes = 64;
inline constexpr std::size_t label_slots = 4096;
// The bytes of a marker's label that are kept (the label is its first ones): at most
// label_bytes - 1, cut before a UTF-8 character, not inside one (a dangling lead byte is not
// UTF-8). The recorder and `alloclab run`'s library keep the same, so that a run's label in a
// live report is the one its trace records.
inline std::size_t kept_label_length(const char* label) {
  if (label == nullptr) return 0;
  std::size_t n = 0;
  while (n + 1 < label_bytes && label[n] != '\0') ++n;
  if (label[n] != '\0')
    while (n > 0 && (static_cast<unsigned char>(label[n]) & 0xC0) == 0x80) --n;
  return n;
}
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
  std::atomic<BufferRef> new_buffers{0};
  // Buffers handed over full and not emptied yet: how far the writer is behind. A thread that
  // fills one waits while there are max_buffers of them. Threads' current buffers do not count:
  // a program with more threads than that is not behind.
  std::atomic<int> full_buffers{0};
  std::atomic<std::uint64_t> dropped{0};
  // Buffers filled so far: the writer flushes when one fills rather than waiting for its
  // period, so at high event rates what is not on disk yet stays near one buffer's worth.
  std::atomic<std::uint64_t> buffers_filled{0};
  std::atomic<bool> final_flush_done{false};  // no writer any more: never wait for one
  // Until the program may run a second thread of its own, its one thread takes sequence numbers
  // without a lock (the recorder says why that is sound and what it saves). Set before
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

// How the writer process started, and how it ended.
enum WriterState : std::uint32_t { writer_starting, writer_ready, writer_failed, writer_finished };

// The writer's side of the handshakes: flush requests, naps and wakes (futex words, shared
// between the processes), its stop.
struct WriterControl {
  std::atomic<bool> running{false};
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> flush_requests{0};
  std::atomic<std::uint64_t> flush_done{0};
  std::atomic<std::uint32_t> wake{0};     // the writer naps on it between flushes
  std::atomic<std::uint32_t> flushes{0};  // flushes done: a thread waiting for one naps on it
  std::atomic<std::uint32_t> state{writer_starting};
  std::atomic<int> pid{0};
  std::atomic<int> exec_errno{0};  // why the writer program could not be run (writer_failed)
};

// The buffers: a pool of equal slots in a segment of its own, reserved up front (address space
// only until used). Threads take buffers from it and the writer gives them back.
struct PoolLayout {
  std::uint64_t slot_bytes = 0;
  std::uint32_t slots = 0;
  std::atomic<std::uint32_t> next_unused{0};
  // Index + 1 of the first free buffer (0: none) | a count of changes << 32, so that a buffer
  // taken and given back between a reader's load and its exchange fails the exchange.
  std::atomic<std::uint64_t> free_list{0};
};

inline constexpr int spare_slots = 16;

// What the program tells its writer once, before the writer starts.
enum class Image : int { root, forked, execed };

struct RecorderSettings {
  Image image = Image::root;  // the first image, a forked child, or an image started by exec
  int parent_pid = 0;
  std::uint64_t first_seq = 0;     // the sequence number of this image's first event (at least)
  int stack_depth = 0;             // frames per allocation, 0: no stacks
  char unwinder[16] = {};          // "libunwind" or "backtrace", with stacks
  bool ticks_are_tsc = false;      // records carry TSC ticks, else CLOCK_MONOTONIC nanoseconds
  std::uint64_t anchor_ticks = 0;  // a (ticks, ns) pair read together at the start
  std::uint64_t anchor_ns = 0;
  std::uint64_t time_resolution_ns = 64;  // timestamps are rounded down to this (a power of 2)
  std::uint64_t flush_period_ms = 50;
};

struct alignas(4096) Shared {
  Globals globals;
  // Buffers the writer emptied, ready for reuse: a thread takes one with an exchange, so no two
  // threads can get the same buffer (no ABA as a lock-free list would have). Reusing them spares
  // the program the page faults of fresh buffers.
  std::atomic<BufferRef> spares[spare_slots] = {};
  WriterControl writer;
  PoolLayout pool;
  RecorderSettings settings;
};

// Where a buffer is in a process's mapping of the pool (`pool_base`: where it maps the pool).
inline Buffer* buffer_at(char* pool_base, const PoolLayout& pool, BufferRef ref) {
  return reinterpret_cast<Buffer*>(pool_base + std::size_t{ref - 1} * pool.slot_bytes);
}
inline BufferRef ref_of(const char* pool_base, const PoolLayout& pool, const Buffer* b) {
  return static_cast<BufferRef>((reinterpret_cast<const char*>(b) - pool_base) / pool.slot_bytes) +
         1;
}

}  // namespace alloclab::protocol
