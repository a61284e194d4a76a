// The hot path: slot reservation, buffers, labels. No locks, no malloc.
// (ThreadSanitizer builds define the per-event path here, out of line: recorder.hpp.)
#define ALLOCLAB_RECORDER_DEFINES_FAST_PATH
#include "recorder.hpp"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include "clock.hpp"
#include "kernel_call.hpp"
#include "stacks.hpp"
#include "writer_link.hpp"

namespace alloclab::preload {

constinit Shared g_shared;
char* g_pool_base = nullptr;
#ifdef ALLOCLAB_TSAN_BUILD
// ThreadSanitizer's runtime allocates in a new thread before that thread may run instrumented
// code: every thread starts guarded, and is let go once it reaches its start routine (hooks.cpp).
thread_local constinit int t_guard __attribute__((tls_model("initial-exec"))) = 1;
#else
thread_local constinit int t_guard __attribute__((tls_model("initial-exec"))) = 0;
#endif
thread_local constinit int t_heap_guard __attribute__((tls_model("initial-exec"))) = 0;
thread_local constinit std::atomic<Buffer*> t_buffer
    __attribute__((tls_model("initial-exec"))){nullptr};
thread_local constinit int t_depth __attribute__((tls_model("initial-exec"))) = 0;

namespace {

thread_local std::uint64_t t_tid __attribute__((tls_model("initial-exec"))) = 0;
thread_local bool t_key_set __attribute__((tls_model("initial-exec"))) = false;

pthread_key_t g_thread_key;
std::atomic<bool> g_thread_key_ready{false};

void thread_key_destructor(void*) {
  thread_exit_handover();
}

// Waits (outside signal handlers only) while the writer is behind, so memory stays bounded.
bool wait_for_room() {
  if (g.full_buffers.load(std::memory_order_relaxed) < g.max_buffers) return true;
  if (t_depth > 1) return true;      // nested: never block, go over the bound a little
  for (int i = 0; i < 10000; ++i) {  // at most ~10 s, then drop rather than hang
    if (g.final_flush_done.load(std::memory_order_relaxed)) return false;
    if (g.full_buffers.load(std::memory_order_relaxed) < g.max_buffers) return true;
    if (i % 100 == 99 && writer_was_lost()) return false;
    const timespec pause{0, 1'000'000};
    nanosleep(&pause, nullptr);
  }
  return false;
}

#ifdef ALLOCLAB_TSAN_BUILD
extern "C" void __tsan_acquire(void* address);
#endif

// A buffer the writer emptied and gave back. Its last thread's stores to it happened before
// the writer read `abandoned`; ThreadSanitizer cannot see the writer process, so it is told.
Buffer* reused(Buffer* b) {
#ifdef ALLOCLAB_TSAN_BUILD
  __tsan_acquire(&b->abandoned);
#endif
  return b;
}

Buffer* take_spare() {
  for (std::atomic<BufferRef>& slot : g_shared.spares)
    if (slot.load(std::memory_order_relaxed))
      if (const BufferRef ref = slot.exchange(0, std::memory_order_acquire))
        return reused(buffer_at(g_pool_base, g_shared.pool, ref));
  return nullptr;
}

// A second thread that did not come through our pthread_create (glibc starts some itself, for
// SIGEV_THREAD timers say) switches to locked numbers at its first record. Its first number
// can equal one the first thread takes in the same few nanoseconds: two events at the same
// moment, so neither depends on the other (a block passes between threads through the
// allocator's lock, after the free took its number and before the alloc takes its own), and the
// writer keeps both in either order.
void note_recording_thread(std::uint64_t tid) {
  if (g.many_threads.load(std::memory_order_relaxed)) return;
  std::uint64_t first = 0;
  if (g.first_thread.compare_exchange_strong(first, tid) || first == tid) return;
  expect_many_threads();
}

// A buffer from the pool: a lock-free stack of buffers the writer freed, then the slots never
// used yet; nullptr when there is no pool or it is exhausted.
Buffer* map_buffer() {
  if (!g_pool_base) return nullptr;
  PoolLayout& pool = g_shared.pool;
  std::uint64_t head = pool.free_list.load(std::memory_order_acquire);
  while (const BufferRef first = static_cast<BufferRef>(head)) {
    Buffer* b = buffer_at(g_pool_base, pool, first);
    // Read before the exchange: a stale value fails it, as the count in the top half changed.
    const std::uint64_t next = std::atomic_ref<BufferRef>(b->pool_next).load();
    if (pool.free_list.compare_exchange_weak(head, next | ((head >> 32) + 1) << 32,
                                             std::memory_order_acquire))
      return reused(b);
  }
  const std::uint32_t unused = pool.next_unused.fetch_add(1, std::memory_order_relaxed);
  return unused < pool.slots ? buffer_at(g_pool_base, pool, unused + 1) : nullptr;
}

// Replaces `full` (or nothing) by a fresh buffer; returns the thread's current buffer.
Buffer* acquire_buffer(Buffer* full) {
  if (full) {
    g.buffers_filled.fetch_add(1, std::memory_order_relaxed);
    wake_writer();
    // Only a thread that fills buffers makes the writer's backlog grow: only it waits.
    if (!wait_for_room()) return nullptr;
  }
  Buffer* fresh = take_spare();
  if (!fresh) {
    fresh = map_buffer();
    if (!fresh) return nullptr;
  }
  if (t_tid == 0) t_tid = static_cast<std::uint64_t>(kernel_call(SYS_gettid));
  note_recording_thread(t_tid);
  fresh->thread = t_tid;  // the rest is fresh mmap'ed zeros, or as recycle_buffer left it
  const BufferRef ref = ref_of(g_pool_base, g_shared.pool, fresh);
  BufferRef head = g.new_buffers.load(std::memory_order_relaxed);
  do {
    fresh->next_new = head;
  } while (!g.new_buffers.compare_exchange_weak(head, ref, std::memory_order_seq_cst,
                                                std::memory_order_relaxed));
  Buffer* expected = full;
  if (t_buffer.compare_exchange_strong(expected, fresh)) {
    if (full) {
      full->handed_over_full = true;
      g.full_buffers.fetch_add(1, std::memory_order_relaxed);
      full->abandoned.store(true, std::memory_order_release);
    }
    if (!t_key_set && g_thread_key_ready.load(std::memory_order_acquire)) {
      t_key_set = true;
      ++t_heap_guard;  // glibc may calloc the key's storage: that is not the program's
      pthread_setspecific(g_thread_key, fresh);
      --t_heap_guard;
    }
    return fresh;
  }
  // A signal handler on this thread replaced the buffer meanwhile: use its buffer, and let the
  // writer retire ours (empty).
  fresh->abandoned.store(true, std::memory_order_release);
  return expected;
}

}  // namespace

void forget_thread_buffer() {
  t_buffer.store(nullptr);
  t_tid = 0;  // a new process: a new thread id
  g.first_thread.store(0);
  g.many_threads.store(false);
}

void init_thread_key() {
  if (pthread_key_create(&g_thread_key, thread_key_destructor) == 0)
    g_thread_key_ready.store(true, std::memory_order_release);
}

void thread_exit_handover() {
  Buffer* b = t_buffer.exchange(nullptr);
  if (b) b->abandoned.store(true, std::memory_order_release);
  // Events after this (other destructors of the exiting thread) start a new buffer and set the
  // key again, which runs this destructor once more.
  t_key_set = false;
}

Pending begin_slots_slow(Buffer* b, std::uint32_t slot, std::uint32_t count) {
  for (;;) {
    if (b && slot < buffer_records) {
      // A pair that does not fit: the last slot was reserved all the same and the writer waits
      // for every reserved slot, so it is completed as nothing.
      Record& left = b->records[slot];
      left.size_op = pack_size_op(0, op_skip, 0);
      left.seq_plus1.store(take_sequence_number() + 1, std::memory_order_release);
    }
    b = acquire_buffer(b);
    if (!b) break;
    slot = add_unshared(b->reserved, count);
    if (slot + count <= buffer_records) {
      const std::uint64_t seq = take_sequence_number();
      --t_depth;
      return Pending{&b->records[slot], seq, g_stack_depth ? record_frames(b, slot) : nullptr};
    }
  }
  --t_depth;
  g.dropped.fetch_add(1, std::memory_order_relaxed);
  return Pending{nullptr, 0};
}

// Return addresses are never 0: a shorter stack ends with one.
void store_stack(const Pending& pending) {
  const int depth = capture_stack(pending.frames);
  if (depth < g_stack_depth) pending.frames[depth] = 0;
}

void complete_moved_realloc(const Pending& pending, std::uint64_t address, std::uint64_t size,
                            std::uint64_t free_seq) {
  Record* r = pending.record;
  if (!r) return;
  Record& pair = r[1];
  pair.address_align = free_seq;
  pair.size_op = pack_size_op(0, op_pair, 0);
  pair.seq_plus1.store(pending.seq + 1, std::memory_order_release);
  complete_record(pending, 0, 0, address, size, 0);
}

namespace {

// A program that marks faster than the writer takes labels out of the ring (4,096 between two
// flushes) would overwrite labels not yet written: it waits for a flush instead. At most ~100 ms,
// so a marker in a signal handler that interrupted a record (which the flush waits for) can
// never deadlock; past that a label may be lost, and the writer then says "(label lost)".
void wait_for_label_room() {
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::uint64_t taken = g.label_next.load(std::memory_order_relaxed);
    if (taken - g.labels_collected.load(std::memory_order_acquire) < label_slots) return;
    if (!request_flush_soon()) return;
    const timespec pause{0, 1'000'000};
    nanosleep(&pause, nullptr);
  }
}

}  // namespace

void record_marker(std::uint8_t op, const char* label) {
  wait_for_label_room();
  const Pending pending = begin_record();
  if (!pending.record) return;
  const std::uint64_t index = g.label_next.fetch_add(1, std::memory_order_relaxed) % label_slots;
  LabelSlot& slot = g.labels[index];
  slot.seq_plus1.store(0, std::memory_order_relaxed);
  char text[label_bytes] = {};
  const std::size_t n = kept_label_length(label);
  if (n > 0) std::memcpy(text, label, n);
  // Release: a reader that sees any new word also sees seq_plus1 == 0 (or later) afterwards.
  for (std::size_t w = 0; w < LabelSlot::words; ++w) {
    std::uint64_t word;
    std::memcpy(&word, text + w * sizeof word, sizeof word);
    slot.text[w].store(word, std::memory_order_release);
  }
  slot.seq_plus1.store(pending.seq + 1, std::memory_order_release);
  complete_record(pending, op, 0, index, 0, 0);
}

}  // namespace alloclab::preload
