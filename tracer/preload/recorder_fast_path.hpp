#pragma once
// The recorder's per-event path (recorder.hpp says where it is inline and why). The slow part,
// a thread's first buffer or a full one, is begin_slots_slow in recorder.cpp.
#include <bit>

#include "clock.hpp"
#include "recorder.hpp"
#include "stacks.hpp"

namespace alloclab::preload {

extern thread_local constinit std::atomic<Buffer*> t_buffer
    __attribute__((tls_model("initial-exec")));
// Nesting depth of begin_slots on this thread (> 1 inside a signal handler that interrupted
// one): only the outermost call may wait for the writer.
extern thread_local constinit int t_depth __attribute__((tls_model("initial-exec")));

// Adds to a counter that only this thread and its signal handlers add to (a buffer's slot
// counter; the sequence number while the program has one thread: the writer only reads them).
// One instruction, which a signal cannot split, is atomic enough, and without a lock prefix the
// program's pending stores (the previous record's) need not drain first: on malloc-heavy loops
// that wait, for the sequence number, was the largest single cost of an event
// (bench/tracer_overhead). x86-TSO keeps the stores in program order, so the slot's reservation
// is visible before the number, as the writer needs (recorder.hpp).
template <typename T>
inline T add_unshared(std::atomic<T>& counter, T amount) {
#if defined(__x86_64__)
  static_assert(sizeof(T) == 4 || sizeof(T) == 8);
  T previous = amount;
  asm volatile("xadd %0, %1" : "+r"(previous), "+m"(*reinterpret_cast<T*>(&counter)) : : "memory");
  return previous;
#else
  return counter.fetch_add(amount, std::memory_order_seq_cst);
#endif
}

inline std::uint64_t take_sequence_number() {
  if (!g.many_threads.load(std::memory_order_relaxed)) return add_unshared(g.seq, std::uint64_t{1});
  return g.seq.fetch_add(1, std::memory_order_seq_cst);
}

// `count` slots of this thread's buffer when they did not fit or there is no buffer yet: `b`
// (nullptr when none) and the `slot` already reserved in it. Called with t_depth raised; lowers
// it.
Pending begin_slots_slow(Buffer* b, std::uint32_t slot, std::uint32_t count);

// Reserves `count` adjacent slots of this thread's buffer under one new sequence number.
inline Pending begin_slots(std::uint32_t count) {
  ++t_depth;
  Buffer* b = t_buffer.load(std::memory_order_relaxed);
  if (!b) [[unlikely]]
    return begin_slots_slow(nullptr, 0, count);
  const std::uint32_t slot = add_unshared(b->reserved, count);
  if (slot + count > buffer_records) [[unlikely]]
    return begin_slots_slow(b, slot, count);
  // The next records' cache lines are fetched while the program runs on, not when the next
  // event stores into them.
  __builtin_prefetch(&b->records[slot + 64], 1, 3);
  const std::uint64_t seq = take_sequence_number();
  --t_depth;
  return Pending{&b->records[slot], seq, g_stack_depth ? record_frames(b, slot) : nullptr};
}

// log2 + 1 of the alignment, rounded up to a power of two (aligned_alloc accepts any); one
// above 2^63, which no allocator can give, is recorded as 2^63, the largest a code holds.
inline std::uint64_t alignment_code(std::uint64_t alignment) {
  if (alignment == 0) return 0;
  const auto code = static_cast<std::uint64_t>(std::bit_width(alignment - 1)) + 1;
  return code > 64 ? 64 : code;
}

void store_stack(const Pending& pending);

ALLOCLAB_FAST_PATH Pending begin_record() {
  return begin_slots(1);
}

ALLOCLAB_FAST_PATH Pending begin_record_pair() {
  return begin_slots(2);
}

ALLOCLAB_FAST_PATH void complete_record(const Pending& pending, std::uint8_t op, std::uint8_t kind,
                                        std::uint64_t address, std::uint64_t size,
                                        std::uint64_t alignment, std::uint64_t flags) {
  Record* r = pending.record;
  if (!r) return;
  r->ticks = now_ticks();
  r->address_align = address | alignment_code(alignment) << field_bits;
  r->size_op = pack_size_op(size, op, kind) | flags;
  if (pending.frames && op == 0) store_stack(pending);
  r->seq_plus1.store(pending.seq + 1, std::memory_order_release);
}

ALLOCLAB_FAST_PATH void record_event(std::uint8_t op, std::uint8_t kind, std::uint64_t address,
                                     std::uint64_t size, std::uint64_t alignment) {
  complete_record(begin_record(), op, kind, address, size, alignment);
}

}  // namespace alloclab::preload
