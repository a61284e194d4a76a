// The preload tracer's life cycle and its writer thread.
//
// Every 50 ms, or sooner when a thread filled a buffer, the writer takes S = the sequence
// counter, collects every record with a sequence number below S from all buffers (waiting for
// the few slots still being filled), sorts them, and appends them as chunks. Everything below S
// is then on disk, so a killed program loses at most the last ~100 ms, and at high event rates
// about one buffer's worth. The same flush runs at exit (library destructor and atexit) and, on
// request of a thread that received a fatal signal, before that signal kills the process.
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "alloclab/trace/alt_stream_writer.hpp"
#include "alloclab/trace/event.hpp"
#include "clock.hpp"
#include "kernel_call.hpp"
#include "lifecycle.hpp"
#include "mappings.hpp"
#include "preload.hpp"
#include "recorder.hpp"
#include "stacks.hpp"

namespace alloclab::preload {
namespace {

// A record copied out of its buffer (which is then free for reuse), packed as in Record.
struct Item {
  std::uint64_t seq;
  std::uint64_t ticks;
  std::uint64_t address_align;
  std::uint64_t size_op;
  std::uint32_t stack;  // id in g_trace's stack table, 0 for none
  std::uint16_t origin;
};

// A moved realloc: alloc(new) (sequence number `made`) belongs before free(old) (`freed`).
struct MovedRealloc {
  std::uint64_t made;
  std::uint64_t freed;
};

// zstd level 1 compresses in half the time of level 3: the same size on malloc_churn (4.41 vs
// 4.42 bytes/event), ~3-5% larger on the PyTorch traces. Events arriving at more than 3M/s since
// the last flush (ResNet-18 inference stays below) get it: there the writer's time is what the
// program waits for at exit and, on a small machine, competes with the program for a core.
constexpr int zstd_level_at_ease = 3;
constexpr int zstd_level_busy = 1;
constexpr double busy_events_per_second = 3e6;

// Writer state: used only under g_flush_lock.
pthread_mutex_t g_flush_lock = PTHREAD_MUTEX_INITIALIZER;
Buffer* g_owned = nullptr;
std::uint64_t g_emitted_below = 0;
std::uint64_t g_last_flush_ns = 0;  // when the last flush took its sequence number
// The flush period in 5 ms steps: 50 ms, or ALLOCLAB_FLUSH_PERIOD_MS (tests use a long one to see
// the flushes a full buffer starts).
std::uint64_t g_period_steps = 10;
AltStreamWriter* g_writer = nullptr;
TickConverter g_clock;
// The batch of events being written; it keeps the frame and stack tables from batch to batch so
// stack ids are file-wide. Made on first use by the writer (never while the program itself
// allocates) and never destroyed: the final flush runs after static destructors.
// A forked child drops these (they describe the parent's file) and starts new ones.
std::vector<Item>* g_items = nullptr;
std::vector<MovedRealloc>* g_moved = nullptr;
std::vector<Item>* g_scratch = nullptr;  // merge_runs' other half
// Held back by the last periodic flush for this one (hold_back_split_reallocs).
std::vector<Item>* g_held_items = nullptr;
std::vector<MovedRealloc>* g_held_moved = nullptr;
Trace* g_batch = nullptr;
StackInterner* g_interner = nullptr;
Trace& batch() {
  if (!g_batch) g_batch = new Trace();
  return *g_batch;
}
StackInterner& stack_interner() {
  if (!g_interner) g_interner = new StackInterner();
  return *g_interner;
}
bool g_write_failed = false;
// Plain arrays, not std::string: the library destructor reads them after static destructors.
char g_path[4096];        // this image's trace
char g_stop_reason[256];  // why writing stopped, when g_write_failed
Image g_image = Image::root;

pthread_t g_writer_thread;
// In g_shared: a writer process sees the program's requests there, and the program its flushes.
constexpr std::atomic<bool>& g_writer_running = g_shared.writer.running;
constexpr std::atomic<bool>& g_writer_stop = g_shared.writer.stop;
constexpr std::atomic<std::uint64_t>& g_flush_requests = g_shared.writer.flush_requests;
constexpr std::atomic<std::uint64_t>& g_flush_done = g_shared.writer.flush_done;
thread_local bool t_is_writer __attribute__((tls_model("initial-exec"))) = false;

// The writer runs as a process of its own where it can, not as a thread of the program: a
// second thread turns on glibc's arena locks in the program for good, and each lock then waits
// for the program's pending stores, which the writer's memory traffic on the other core slows.
// The same writer work costs malloc_churn's main thread 1.27x as a thread against 1.13x as a
// process (bench/tracer_overhead, the minimal tracer's collector rows). The process is a fork
// of the program at the tracer's start, with the recorder's state (g_shared) and the buffer pool
// shared; it is the program's grandchild, so that the program's wait() never sees it, and it
// watches the program through a pidfd. With --stacks (frames are named with dladdr, which
// must see the program's libraries as they are now), under ThreadSanitizer, with
// ALLOCLAB_WRITER=thread, or where the process cannot start, the writer is a thread.
enum : std::uint32_t { process_starting, process_ready, process_failed, process_finished };
bool g_process_writer = false;  // this image's writer is a process
int g_program_pidfd = -1;       // in the writer process: the program's, readable once it ended

// What descriptor 2 was when tracing started. A program may close its stderr and open a file
// of its own that takes number 2: the tracer's messages must not land in that file.
struct FileIdentity {
  dev_t device = 0;
  ino_t inode = 0;
  bool open = false;
};
FileIdentity g_stderr;

FileIdentity identity_of_stderr() {
  struct stat st {};
  if (::fstat(2, &st) != 0) return {};
  return {st.st_dev, st.st_ino, true};
}

void remember_stderr() {
  g_stderr = identity_of_stderr();
}

bool stderr_is_still_ours() {
  const FileIdentity now = identity_of_stderr();
  return now.open && g_stderr.open && now.device == g_stderr.device && now.inode == g_stderr.inode;
}

void say(const char* text) {
  if (!stderr_is_still_ours()) return;
  const ssize_t ignored = ::write(2, text, std::strlen(text));
  (void)ignored;
}

void sleep_ms(long ms) {
  const timespec pause{ms / 1000, (ms % 1000) * 1'000'000};
  nanosleep(&pause, nullptr);
}

// The writer naps on g_writer_wake between flushes, and a thread that waits for a flush naps on
// g_flushes: each is woken the moment there is something to do instead of at its next nap's end
// (which cost a short program ~10 ms at exit: a request, the flush, the writer's stop). A futex:
// a system call, safe in a signal handler and in a fork child, with no lock to inherit.
// Not private futexes: with a writer process the words are in memory shared between processes.
constexpr std::atomic<std::uint32_t>& g_writer_wake = g_shared.writer.wake;
constexpr std::atomic<std::uint32_t>& g_flushes = g_shared.writer.flushes;

// Returns at once when `word` no longer holds `seen`, else within `ms` or when woken.
void nap_on(std::atomic<std::uint32_t>& word, std::uint32_t seen, long ms) {
  const timespec timeout{ms / 1000, (ms % 1000) * 1'000'000};
  kernel_call(SYS_futex, &word, FUTEX_WAIT, seen, &timeout);
}

void wake_all(std::atomic<std::uint32_t>& word) {
  word.fetch_add(1);
  kernel_call(SYS_futex, &word, FUTEX_WAKE, INT_MAX);
}

// In the writer process: whether the program has ended (its pidfd is readable then).
bool program_ended() {
  if (g_program_pidfd < 0) return false;
  pollfd program{g_program_pidfd, POLLIN, 0};
  return poll(&program, 1, 0) > 0;
}

// Slots a flush gave up on, until they complete: no flush waits for them again, and whichever
// flush finds one complete writes it even when its number is below what was written already (a
// thread in a signal handler that waits for this very flush, for label room, completes its
// record afterwards: skipped as written, it was lost). Used only under g_flush_lock; a slot here
// keeps its buffer from being recycled (it is not consumed).
std::vector<const Record*>* g_overdue = nullptr;

bool overdue(const Record& r) {
  return !g_overdue->empty() &&
         std::find(g_overdue->begin(), g_overdue->end(), &r) != g_overdue->end();
}

// Waits until a reserved slot is complete. Slots complete within a few instructions of being
// reserved (a realloc's free(old) once the real realloc returns), so this gives up only on a
// thread that died or stopped mid-record: one that left a signal handler with siglongjmp, one
// blocked inside a realloc below the tracer. A flush someone waits for (exit, exec, a fatal
// signal) gives up after ~100 ms, any other after ~1 s: waiting on, the writer wrote nothing
// more, and the program's threads soon waited for buffer room and then dropped events. A slot
// given up on is written late if it completes; only a realloc's free(old) could then land after
// another thread's allocation of the old block, and only if its thread stalled for that second
// between the real realloc's free and the end of the hook.
bool wait_complete(const Record& r, std::uint64_t floor, bool bounded) {
  const long patience_ms = bounded ? 100 : 1000;
  for (long spin = 0; r.seq_plus1.load(std::memory_order_acquire) <= floor; ++spin) {
    if (spin == 0 && overdue(r)) return false;
    if (spin < 1000) continue;
    if (spin > 1000 + patience_ms) {
      g_overdue->push_back(&r);
      return false;
    }
    sleep_ms(1);
  }
  return true;
}

// Frames of an alloc record: up to g_stack_depth, ended early by a 0.
int stack_depth_of(const std::uint64_t* frames) {
  int depth = 0;
  while (depth < g_stack_depth && frames[depth] != 0) ++depth;
  return depth;
}

// Newly registered buffers join the end of the writer's list, oldest first, so that one
// thread's buffers are visited in the order it filled them and its items come out in sequence
// order without any merging.
void adopt_new_buffers() {
  Buffer* fresh = g.new_buffers.exchange(nullptr, std::memory_order_seq_cst);  // newest first
  Buffer* oldest_first = nullptr;
  while (fresh) {
    Buffer* next = fresh->next_new;
    fresh->next_owned = oldest_first;
    oldest_first = fresh;
    fresh = next;
  }
  Buffer** tail = &g_owned;
  while (*tail) tail = &(*tail)->next_owned;
  *tail = oldest_first;
}

// Sorts `items` by sequence number, given the boundaries of its runs (one per buffer, in list
// order). A run is almost always sorted already: its thread takes increasing numbers (a signal
// handler that allocated between another record's slot and its number is the exception). The
// runs of one thread follow each other, so without other threads the items are in order once
// each run is; runs of concurrent threads interleave and are merged through `scratch`, which is
// kept from flush to flush like `items` (std::inplace_merge takes a new buffer, and so fresh
// pages, every time).
void merge_runs(std::vector<Item>& items, const std::vector<std::size_t>& bounds,
                std::vector<Item>& scratch) {
  const auto by_seq = [](const Item& a, const Item& b) { return a.seq < b.seq; };
  const auto at = [&](std::size_t i) { return items.begin() + static_cast<std::ptrdiff_t>(i); };
  struct Run {
    std::size_t next, end;
  };
  std::vector<Run> runs;
  for (std::size_t r = 0; r + 1 < bounds.size(); ++r) {
    if (bounds[r] == bounds[r + 1]) continue;
    if (!std::is_sorted(at(bounds[r]), at(bounds[r + 1]), by_seq))
      std::sort(at(bounds[r]), at(bounds[r + 1]), by_seq);
    runs.push_back(Run{bounds[r], bounds[r + 1]});
  }
  bool in_order = true;
  for (std::size_t r = 0; r + 1 < runs.size() && in_order; ++r)
    in_order = items[runs[r].end - 1].seq < items[runs[r + 1].next].seq;
  if (in_order) return;
  // A k-way merge: a heap of each run's next item (few runs, one per buffer).
  scratch.clear();
  scratch.reserve(items.size());
  const auto later_head = [&](std::size_t a, std::size_t b) {
    return items[runs[a].next].seq > items[runs[b].next].seq;
  };
  std::vector<std::size_t> heap(runs.size());
  for (std::size_t r = 0; r < runs.size(); ++r) heap[r] = r;
  std::make_heap(heap.begin(), heap.end(), later_head);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later_head);
    Run& run = runs[heap.back()];
    scratch.push_back(items[run.next]);
    if (++run.next == run.end)
      heap.pop_back();
    else
      std::push_heap(heap.begin(), heap.end(), later_head);
  }
  items.swap(scratch);
}

// Collects the records with g_emitted_below <= seq < S, in sequence order, and the moved
// reallocs among them.
void collect(std::uint64_t S, bool bounded, std::vector<Item>& items,
             std::vector<MovedRealloc>& moved) {
  adopt_new_buffers();
  // Each buffer's records are (almost always) in sequence order already: its thread takes
  // increasing numbers. Merging those runs costs far less than sorting everything. The items
  // already there (held back by the pass before) are a run of their own: left out, a merge of
  // two threads' runs dropped them.
  std::vector<std::size_t> run_starts{0};
  Buffer** link = &g_owned;
  while (Buffer* b = *link) {
    run_starts.push_back(items.size());
    const bool abandoned = b->abandoned.load(std::memory_order_acquire);
    const std::uint32_t reserved =
        std::min(b->reserved.load(std::memory_order_seq_cst), buffer_records);
    const std::uint16_t origin = batch().add_origin(Origin{b->thread, cpu_device, 0});
    std::uint32_t first_left = reserved;
    std::uint64_t first_beyond = UINT64_MAX;  // the number of the first record at or above S
    for (std::uint32_t i = b->consumed; i < reserved; ++i) {
      const Record& r = b->records[i];
      if (!wait_complete(r, b->floor, bounded)) {
        // Overdue (g_overdue). The records after it may be complete and below S (a signal
        // handler's): they are taken now, or never.
        if (first_left == reserved) first_left = i;
        continue;
      }
      const std::uint64_t seq = r.seq_plus1.load(std::memory_order_acquire) - 1;
      const bool was_overdue = !g_overdue->empty() && std::erase(*g_overdue, &r) > 0;
      if (seq >= S) {
        if (first_left == reserved) first_left = i;
        // A record after the first one at or above S is numbered below it only if a signal
        // handler reserved it before that one took its number. The first numbered above it was
        // reserved later, and so was everything after it: nothing further on is below S. (A
        // flush that works through a backlog in passes would otherwise scan the whole backlog
        // each pass.)
        if (first_beyond == UINT64_MAX) first_beyond = seq;
        if (seq > first_beyond) break;
        continue;
      }
      // Left behind by an earlier pass, already written; unless it completed overdue.
      if (seq < g_emitted_below && !was_overdue) continue;
      const std::uint8_t op = record_op(r.size_op);
      if (op == op_pair) {  // reserved with the alloc just before it: same seq, same pass
        moved.push_back(MovedRealloc{seq, r.address_align});
        continue;
      }
      if (op == op_skip) continue;
      items.push_back(Item{seq, r.ticks, r.address_align, r.size_op, 0, origin});
      // Frames are read now: the buffer may be reused once collected.
      if (g_stack_depth && op == op_alloc) {
        const std::uint64_t* frames = frame_slots(b, i);
        if (const int depth = stack_depth_of(frames))
          items.back().stack = stack_interner().intern(frames, depth, batch());
      }
    }
    b->consumed = first_left;
    if (abandoned && b->consumed == reserved) {
      *link = b->next_owned;
      recycle_buffer(b);
      continue;
    }
    link = &b->next_owned;
  }
  run_starts.push_back(items.size());
  if (!g_scratch) g_scratch = new std::vector<Item>();
  merge_runs(items, run_starts, *g_scratch);
}

// A realloc that moved was recorded free(old) then alloc(new) (the only safe order to take
// the numbers in). The replay model wants alloc(new) first; move it up unless an event in
// between touched the new address (then the recorded order is the true one).
void order_moved_reallocs(std::vector<Item>& items, const std::vector<MovedRealloc>& moved) {
  const auto by_seq = [](const Item& a, std::uint64_t seq) { return a.seq < seq; };
  for (const MovedRealloc& m : moved) {
    const auto made = std::lower_bound(items.begin(), items.end(), m.made, by_seq);
    if (made == items.end() || made->seq != m.made) continue;
    const auto freed = std::lower_bound(items.begin(), made, m.freed, by_seq);
    if (freed == made || freed->seq != m.freed) continue;
    const std::uint64_t address = made->address_align & field_mask;
    bool touched = false;
    for (auto between = freed + 1; between != made; ++between)
      touched |= record_op(between->size_op) <= op_free &&
                 (between->address_align & field_mask) == address;
    if (!touched) std::rotate(freed, made, made + 1);
  }
}

std::string label_of(const Item& item) {
  const LabelSlot& slot = g.labels[(item.address_align & field_mask) % label_slots];
  if (slot.seq_plus1.load(std::memory_order_acquire) != item.seq + 1) return "(label lost)";
  char text[label_bytes];
  for (std::size_t w = 0; w < LabelSlot::words; ++w) {
    const std::uint64_t word = slot.text[w].load(std::memory_order_acquire);
    std::memcpy(text + w * sizeof word, &word, sizeof word);
  }
  text[label_bytes - 1] = '\0';
  // A word from a newer label was released after seq_plus1 went to 0: this load sees that.
  if (slot.seq_plus1.load(std::memory_order_relaxed) != item.seq + 1) return "(label lost)";
  return text;
}

void write_items(const std::vector<Item>& items, bool busy) {
  Trace& trace = batch();
  trace.clear_events();
  const Trace::NewColumns col = trace.extend(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    const Item& item = items[i];
    const std::uint8_t op = record_op(item.size_op);
    const bool marker = op > op_free;
    col.time_ns[i] = g_clock.to_ns(item.ticks);
    col.address[i] = marker ? 0 : item.address_align & field_mask;
    const std::uint64_t size = record_size(item.size_op);
    if (size < Trace::big_size_marker) {
      col.size32[i] = static_cast<std::uint32_t>(size);
    } else {
      col.size32[i] = Trace::big_size_marker;
      trace.set_big_size(i, size);
    }
    col.origin[i] = item.origin;
    // The .alt attrs (Trace::pack_attrs): op | kind << 3 | alignment code << 6.
    col.attrs[i] = static_cast<std::uint16_t>(op | record_kind(item.size_op) << 3 |
                                              (item.address_align >> field_bits) << 6);
    if (marker && op != static_cast<std::uint8_t>(Op::run_end)) trace.set_label(i, label_of(item));
    if (item.stack) trace.set_stack_id(i, item.stack);
  }
  if (g_writer && !g_write_failed) {
    g_writer->set_zstd_level(busy ? zstd_level_busy : zstd_level_at_ease);
    g_writer->append(trace);
  }
}

// A write failed (disk full, file size limit, I/O error): recording stops, so the program runs
// on unhindered and its threads never wait for buffers; the file keeps every complete chunk
// (AltStreamWriter cuts a failed one off again). Caller holds g_flush_lock.
void stop_writing(const char* why) {
  if (g_write_failed) return;
  g_write_failed = true;
  g.state.store(static_cast<int>(State::disabled));
  std::snprintf(g_stop_reason, sizeof g_stop_reason, "%s", why);
  say("alloclab: tracing stopped, cannot write the trace: ");
  say(why);
  say("\n");
  list_incomplete(g_path, g_stop_reason);
}

// A realloc's free(old) is complete before its alloc(new) takes a number, so a flush between
// the two would write them in separate batches, free first, beyond order_moved_reallocs' reach.
// The alloc of a realloc free is its thread's next item: when that is not in the batch, or not
// before the point from which items wait anyway, everything from the free on waits for the next
// flush. Only items new in this flush are held back (each at most once), so a thread that never
// returns holds nothing for long. Returns whether a marker is among them (its label must stay).
bool hold_back_split_reallocs(std::vector<Item>& items, std::vector<MovedRealloc>& moved,
                              std::uint64_t new_from) {
  constexpr std::uint64_t none = UINT64_MAX;
  std::uint64_t cut = none;
  std::vector<std::uint64_t> next_of_thread;  // by origin: the seq of its next item seen
  for (auto it = items.rbegin(); it != items.rend() && it->seq >= new_from; ++it) {
    if (it->origin >= next_of_thread.size()) next_of_thread.resize(it->origin + 1u, none);
    std::uint64_t& next = next_of_thread[it->origin];
    if ((it->size_op & realloc_free_bit) && (next == none || next >= cut)) cut = it->seq;
    next = it->seq;
  }
  if (cut == none) return false;
  const auto from = std::lower_bound(items.begin(), items.end(), cut,
                                     [](const Item& a, std::uint64_t seq) { return a.seq < seq; });
  g_held_items->assign(from, items.end());
  items.erase(from, items.end());
  for (const MovedRealloc& m : moved)
    if (m.made >= cut) g_held_moved->push_back(m);
  std::erase_if(moved, [cut](const MovedRealloc& m) { return m.made >= cut; });
  return std::any_of(g_held_items->begin(), g_held_items->end(),
                     [](const Item& item) { return record_op(item.size_op) > op_free; });
}

// The most sequence numbers one pass of a flush takes. A writer that fell behind (a program
// that allocates faster than the writer encodes) works through its backlog in passes, so its
// batch stays a few MB instead of growing with the backlog (the traced program's peak RSS
// reached 0.4-0.5 GB on 10M events of `malloc_churn --small`, and page faults on the batch took
// much of the writer's time), and emptied buffers go back to the program pass by pass.
constexpr std::uint64_t max_pass_events = 4 * std::uint64_t{buffer_records};

// One flush. Caller holds g_flush_lock. `bounded`: someone waits for it (exit, exec, a fatal
// signal, a marker short of label room): then nothing is held back.
void flush_locked(bool bounded) {
  try {
    // Kept from flush to flush: its capacity settles at the size of a typical flush. Never
    // destroyed: the final flush runs after static destructors. Not a function-local static: a
    // fork during its first initialisation would leave the child's writer waiting on the guard.
    if (!g_items) g_items = new std::vector<Item>();
    if (!g_moved) g_moved = new std::vector<MovedRealloc>();
    if (!g_held_items) g_held_items = new std::vector<Item>();
    if (!g_held_moved) g_held_moved = new std::vector<MovedRealloc>();
    if (!g_overdue) g_overdue = new std::vector<const Record*>();
    std::vector<Item>& items = *g_items;
    std::vector<MovedRealloc>& moved = *g_moved;
    // A marker takes its label after its sequence number: every label below `labels` belongs to
    // a marker numbered below S, and so is written by this flush.
    const std::uint64_t labels = g.label_next.load(std::memory_order_seq_cst);
    const std::uint64_t S = g.seq.load(std::memory_order_seq_cst);
    const std::uint64_t now = monotonic_ns();
    const double rate = now > g_last_flush_ns && g_last_flush_ns != 0
                            ? static_cast<double>(S - g_emitted_below) * 1e9 /
                                  static_cast<double>(now - g_last_flush_ns)
                            : 0.0;
    g_last_flush_ns = now;
    bool label_held = false;
    do {
      const std::uint64_t below = std::min(S, g_emitted_below + max_pass_events);
      // Held-back items all come before this pass's: collect appends in order after them.
      // Copied, not swapped: a swap would leave the big vector with the held-back list every
      // other pass and make the batch grow again from nothing, page faults and all.
      items.assign(g_held_items->begin(), g_held_items->end());
      moved.assign(g_held_moved->begin(), g_held_moved->end());
      g_held_items->clear();
      g_held_moved->clear();
      const std::uint64_t new_from = g_emitted_below;
      // Also after a failure: the buffers must still be emptied and given back.
      collect(below, bounded, items, moved);
      g_emitted_below = below;
      // A pass before the last holds back for the next, which follows at once.
      label_held = (below < S || !bounded) && hold_back_split_reallocs(items, moved, new_from);
      if (!g_write_failed) {
        g_clock.calibrate();
        order_moved_reallocs(items, moved);
        write_items(items, rate > busy_events_per_second);
      }
    } while (g_emitted_below < S);
    // A held-back marker's label is read by the next flush: its slot is not free yet.
    if (!label_held) g.labels_collected.store(labels, std::memory_order_release);
  } catch (const std::exception& e) {
    stop_writing(e.what());
  }
}

void flush(bool bounded) {
  pthread_mutex_lock(&g_flush_lock);
  flush_locked(bounded);
  pthread_mutex_unlock(&g_flush_lock);
}

// A process's state letter and thread count, from /proc/PID/stat (pid 0: this process); false
// when there is no such process. Allocates nothing: it also runs while a thread waits for room.
bool process_state_and_threads(int pid, char& state, long& threads) {
  char path[32] = "/proc/self/stat";
  if (pid != 0) {
    char digits[16];
    std::size_t count = 0;
    for (unsigned value = static_cast<unsigned>(pid); count == 0 || value != 0; value /= 10)
      digits[count++] = static_cast<char>('0' + value % 10);
    std::size_t n = 6;  // after "/proc/"
    while (count > 0) path[n++] = digits[--count];
    std::memcpy(path + n, "/stat", 6);
  }
  char text[1024];
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const ssize_t n = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  if (n <= 0) return false;
  text[n] = '\0';
  // "pid (comm) state ..." where comm may hold spaces and parentheses; num_threads is the 20th
  // field, the 17th after the state.
  const char* p = std::strrchr(text, ')');
  if (!p || p[1] != ' ') return false;
  p += 2;
  state = *p;
  for (int field = 0; field < 17; ++field) {
    p = std::strchr(p, ' ');
    if (!p) return false;
    ++p;
  }
  threads = std::strtol(p, nullptr, 10);
  return true;
}

// Whether the writer is the last thread: the program's main thread left with pthread_exit (the
// thread group's leader then stays a zombie, counted in num_threads) and every other thread of
// the program has ended. glibc ends the process with exit(0) when its last thread ends; the
// writer is one of its threads, so a program that ends that way ran on forever.
bool only_the_writer_is_left() {
  char state = 0;
  long threads = 0;
  return process_state_and_threads(0, state, threads) && state == 'Z' && threads == 2;
}

// Whether process `pid` has ended: gone, or a zombie (`record` reaps a writer process only
// after the program).
bool process_has_ended(int pid) {
  char state = 0;
  long threads = 0;
  return !process_state_and_threads(pid, state, threads) || state == 'Z' || state == 'X';
}

// Until the writer is asked to stop, or (a writer process) the program has ended.
bool writer_goes_on() {
  return !g_writer_stop.load() && !program_ended();
}

void* writer_main(void*) {
  t_is_writer = true;
  ++t_guard;  // the writer's own allocations are never recorded
  std::uint64_t filled_seen = 0;
  std::uint64_t last_look_ns = 0;
  while (writer_goes_on()) {
    for (std::uint64_t i = 0; i < g_period_steps; ++i) {
      // Read before the checks: a wake after them changes it, and the nap returns at once.
      const std::uint32_t seen = g_writer_wake.load();
      if (!writer_goes_on()) break;
      if (g_flush_requests.load() > g_flush_done.load()) break;
      if (g.buffers_filled.load(std::memory_order_relaxed) != filled_seen) break;
      nap_on(g_writer_wake, seen, 5);
    }
    filled_seen = g.buffers_filled.load(std::memory_order_relaxed);
    const std::uint64_t requested = g_flush_requests.load();
    flush(requested > g_flush_done.load());
    g_flush_done.store(requested);
    wake_all(g_flushes);
    const std::uint64_t now = monotonic_ns();
    if (!g_process_writer && now - last_look_ns >= 50'000'000) {
      last_look_ns = now;
      // As glibc would have: exit handlers, then the final flush (the destructor, on this
      // thread: it cannot join itself and goes on to flush).
      if (only_the_writer_is_left()) std::exit(0);
    }
  }
  return nullptr;
}

// Asks the writer for a flush and waits for it (at most ~3 s): used where this thread cannot
// flush itself (a signal handler may have interrupted malloc holding its lock).
void request_flush_and_wait() {
  if (!g_writer_running.load() || t_is_writer) return;
  const std::uint64_t ticket = g_flush_requests.fetch_add(1) + 1;
  wake_writer();
  for (int i = 0; i < 3000 && g_writer_running.load(); ++i) {
    const std::uint32_t seen = g_flushes.load();
    if (g_flush_done.load() >= ticket) break;
    nap_on(g_flushes, seen, 1);
  }
  if (g_flush_done.load() < ticket) say("alloclab: the writer did not flush in time\n");
}

constexpr int fatal_signals[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};

void on_fatal_signal(int sig, siginfo_t*, void*) {
  const int saved_errno = errno;
  ++t_guard;
  if (g.pid == getpid()) request_flush_and_wait();
  --t_guard;
  errno = saved_errno;
  // SA_RESETHAND restored the default action: re-raise so the process dies as it would have.
  raise(sig);
}

void install_fatal_handlers() {
  for (int sig : fatal_signals) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;  // keep theirs
    struct sigaction action {};
    action.sa_sigaction = on_fatal_signal;
    action.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    sigaction(sig, &action, nullptr);
  }
}

void at_exit_flush() {
  if (g.pid != getpid() || !g_writer_running.load()) return;
  request_flush_and_wait();
}

std::string read_command_line() {
  std::string text;
  const int fd = ::open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char chunk[4096];
  ssize_t n;
  while ((n = ::read(fd, chunk, sizeof chunk)) > 0) text.append(chunk, static_cast<std::size_t>(n));
  ::close(fd);
  while (!text.empty() && text.back() == '\0') text.pop_back();
  std::replace(text.begin(), text.end(), '\0', ' ');
  return text;
}

// The last flush, and the file closed: by the program's destructor with a writer thread, by the
// writer process once the program asked it to stop or has ended.
void finish_trace() {
  FileSizeSignalBlock block;
  pthread_mutex_lock(&g_flush_lock);
  flush_locked(true);
  if (g_writer && !g_write_failed) {
    try {
      g_writer->close();
    } catch (const std::exception&) {
    }
  }
  if (g_write_failed) {
    say("alloclab: the trace ");
    say(g_path);
    say(" is incomplete: ");
    say(g_stop_reason);
    say("\n");
  }
  if (g_overdue && !g_overdue->empty()) {
    const std::size_t missing = g_overdue->size();
    const std::string text =
        "alloclab: " + std::to_string(missing) +
        (missing == 1 ? " event still in progress at exit was"
                      : " events still in progress at exit were") +
        " left out of the trace (a thread stopped inside an allocation call)\n";
    say(text.c_str());
  }
  g.final_flush_done.store(true);
  pthread_mutex_unlock(&g_flush_lock);
}

#ifndef ALLOCLAB_TSAN_BUILD
bool g_state_shared = false;  // g_shared's pages are shared with a writer process (to be)

void set_process_state(std::uint32_t state) {
  g_shared.writer.process_state.store(state);
  kernel_call(SYS_futex, &g_shared.writer.process_state, FUTEX_WAKE, INT_MAX);
}

// Waits until the writer process leaves `from`, at most `ms` milliseconds; returns the state.
std::uint32_t wait_for_process_state(std::uint32_t from, long ms) {
  std::atomic<std::uint32_t>& state = g_shared.writer.process_state;
  for (long waited = 0; state.load() == from && waited < ms; waited += 10) nap_on(state, from, 10);
  return state.load();
}

bool wants_writer_process() {
  const char* choice = env_value("ALLOCLAB_WRITER");
  return g_stack_depth == 0 && !(choice && std::strcmp(choice, "thread") == 0);
}

// Before anything is recorded: the state and the buffers must be where a fork can share them.
void prepare_writer_process() {
  g_state_shared = wants_writer_process() && share_state();
  if (g_state_shared) reserve_buffer_pool();
}

[[noreturn]] void writer_process_main() {
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, nullptr);  // the program's signals (^C too) are not for it
  leave_thread_buffer();                    // the forking thread's, which the program goes on with
  prctl(PR_SET_NAME, "alloclab-writer");
  g_process_writer = true;
  g_program_pidfd = static_cast<int>(kernel_call(SYS_pidfd_open, g.pid, 0));
  if (g_program_pidfd < 0) {
    set_process_state(process_failed);
    _exit(0);
  }
  g_shared.writer.process_pid.store(getpid());
  list_writer_process(getpid());
  set_process_state(process_ready);
  writer_main(nullptr);
  finish_trace();
  set_process_state(process_finished);
  _exit(0);
}

// Forks the writer process (through a child that exits at once: the writer is then nobody's
// child in the program, reparented to `record`, which waits for it, or to init). The child's
// SIGCHLD is taken off again unless one was pending already. glibc's _Fork: no atfork handlers,
// the program's or ours, run for these forks. Runs where the program has one thread (the
// library constructor, a fork child), so no lock of the C library is held by another.
bool start_writer_process() {
  // A fork copies only the forking thread: another one could hold a lock of the C library that
  // the writer would then wait for forever.
  char state = 0;
  long threads = 0;
  if (!g_shared.pool.base || !process_state_and_threads(0, state, threads) || threads != 1)
    return false;
  g_shared.writer.process_state.store(process_starting);
  sigset_t child_signal, old, pending;
  sigemptyset(&child_signal);
  sigaddset(&child_signal, SIGCHLD);
  pthread_sigmask(SIG_BLOCK, &child_signal, &old);
  sigpending(&pending);
  const bool was_pending = sigismember(&pending, SIGCHLD) == 1;
  const pid_t middle = _Fork();
  if (middle == 0) {
    const pid_t writer = _Fork();
    if (writer == 0) writer_process_main();
    _exit(writer > 0 ? 0 : 1);
  }
  int status = 0;
  if (middle > 0) {
    pid_t waited;
    do waited = waitpid(middle, &status, __WALL);
    while (waited < 0 && errno == EINTR);
    if (waited < 0) status = 0;  // SIGCHLD ignored: reaped by the kernel; the handshake tells
  }
  if (middle > 0 && !was_pending) {
    const timespec now{};
    sigtimedwait(&child_signal, nullptr, &now);
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (middle < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return false;
  if (wait_for_process_state(process_starting, 5000) != process_ready) return false;
  g_process_writer = true;
  g_writer_running.store(true);
  // The writer process has the file: the program's copy of the descriptor goes.
  if (g_writer) g_writer->close();
  return true;
}

std::atomic<bool> g_writer_lost{false};

// The program's side once its writer process is gone: nothing would empty the buffers any more.
void stop_tracing_without_writer() {
  if (g_writer_lost.exchange(true)) return;
  g.state.store(static_cast<int>(State::disabled));
  g.final_flush_done.store(true);  // threads waiting for room stop waiting
  g_writer_running.store(false);
  say("alloclab: the writer process ended before the program: tracing stopped; the trace holds "
      "what it had written\n");
}

// In a fork child: the parent's shared state and pool are not the child's to write to.
void leave_parent_writer_process() {
  g_process_writer = false;
  if (!g_state_shared) return;
  unshare_state();
  g_state_shared = false;
  leave_thread_buffer();  // in the parent's pool, which goes: not even its exit may touch it
  forget_buffer_pool();
  g_shared.writer.process_state.store(process_starting);
  g_shared.writer.process_pid.store(0);
}

// The program's end with a writer process: it writes the rest and closes the file; the program
// waits for that, so the file is complete when the program has exited.
void stop_writer_process() {
  g_writer_stop.store(true);
  wake_writer();
  // At most a minute (a writer far behind encodes ~30M events a second); sooner when it died.
  for (int waited = 0; waited < 60000; waited += 10) {
    if (wait_for_process_state(process_ready, 10) == process_finished) break;
    if (process_has_ended(g_shared.writer.process_pid.load())) {
      if (g_shared.writer.process_state.load() != process_finished) stop_tracing_without_writer();
      break;
    }
  }
  g_writer_running.store(false);
}
#else
void stop_tracing_without_writer() {}
void prepare_writer_process() {}
bool start_writer_process() {
  return false;
}
void leave_parent_writer_process() {}
void stop_writer_process() {}
#endif

void start_writer_thread() {
  sigset_t all, old;
  sigfillset(&all);
  // The writer must never run the program's signal handlers: it starts with all blocked.
  pthread_sigmask(SIG_SETMASK, &all, &old);
  if (pthread_create(&g_writer_thread, nullptr, writer_main, nullptr) == 0)
    g_writer_running.store(true);
  else
    say("alloclab: cannot start the writer thread: not tracing\n");
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void start_writer() {
  if (!start_writer_process()) start_writer_thread();
}

// At the end, when some events could not be recorded (no buffer could be mapped): the trace
// says how many.
void record_dropped_marker() {
  if (const std::uint64_t dropped = g.dropped.load()) {
    const std::string label = "alloclab:dropped=" + std::to_string(dropped);
    record_marker(static_cast<std::uint8_t>(alloclab::Op::mark), label.c_str());
  }
}

std::uint64_t parse_u64(const char* text) {
  if (!text || !*text) return 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text, &end, 10);
  return *end == '\0' ? v : 0;
}

// Creates this image's trace (never an existing file: O_EXCL, O_NOFOLLOW) and lists it.
bool open_trace() {
  FileSizeSignalBlock block;
  nlohmann::json metadata = nlohmann::json::object();
  metadata["tool_version"] = ALLOCLAB_VERSION;
  metadata["command_line"] = read_command_line();
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  metadata["host"] = host;
  metadata["pid"] = getpid();
  metadata["clock"] = "CLOCK_MONOTONIC";
  metadata["min_size"] = g.min_size;
  metadata["stack_depth"] = g_stack_depth;
  if (g_stack_depth) metadata["unwinder"] = stacks_unwinder();
  metadata["time_resolution_ns"] = time_resolution_ns();
  metadata["recorder"] = "alloclab record (liballoclab_preload.so)";
  metadata["image"] = image_name(g_image);
  metadata["parent_pid"] = getppid();
  AltWriteOptions options;
  options.zstd_level = zstd_level_at_ease;
  options.events_per_chunk = buffer_records;
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::string path = trace_path(g_image, g.pid, attempt);
    std::snprintf(g_path, sizeof g_path, "%s", path.c_str());
    try {
      g_writer = new AltStreamWriter(path, metadata, options);
      list_trace(path);
      return true;
    } catch (const std::exception& e) {  // any: nothing the tracer meets may end the program
      // A later image of the same pid (exec in place, exec after fork) takes the next name.
      const auto* system = dynamic_cast<const std::system_error*>(&e);
      if (system && system->code().value() == EEXIST && g_image != Image::root) continue;
      say(("alloclab: not tracing pid " + std::to_string(g.pid) + ": " + e.what() + "\n").c_str());
      break;
    }
  }
  g.state.store(static_cast<int>(State::disabled));
  return false;
}

// fork: the child has only the forking thread. The writer thread is gone, perhaps halfway
// through a flush (its lock held, its list or file object torn), and every buffer holds the
// parent's events, which the parent writes. So the child never touches any of that: it forgets
// it (the memory is the parent's copy-on-write pages). Without --follow-fork the child is not
// traced; with it, it starts afresh with buffers, a file and a writer thread of its own. The
// parent is not held up at all: no lock is taken across fork.
void fork_child() {
  // Also when the parent could not write any more: the child has a file of its own.
  const bool was_tracing = g_writer_running.load() && g.pid == getppid();
  leave_parent_writer_process();
  pthread_mutex_init(&g_flush_lock, nullptr);
  g_writer_running.store(false);
  g_writer_stop.store(false);
  g_flush_requests.store(0);
  g_flush_done.store(0);
  if (!was_tracing || !follow_fork()) {
    g.state.store(static_cast<int>(State::disabled));
    if (was_tracing) list_untraced_fork(getpid());
    return;
  }
  GuardScope guard;
  forget_thread_buffer();
  g.new_buffers.store(nullptr);
  g.full_buffers.store(0);
  g_owned = nullptr;
  g_emitted_below = g.seq.load();
  g.dropped.store(0);
  g_writer = nullptr;  // the parent's: left alone (its descriptor closes at exec: O_CLOEXEC)
  g_items = nullptr;
  g_moved = nullptr;
  g_scratch = nullptr;
  g_held_items = nullptr;
  g_held_moved = nullptr;
  g_overdue = nullptr;
  g_batch = nullptr;
  g_interner = nullptr;
  g_write_failed = false;
  g.pid = getpid();
  prepare_writer_process();
  g.state.store(static_cast<int>(State::enabled));
  g_image = Image::forked;
  remember_stderr();
  if (open_trace()) start_writer();
}

// Runs once the C runtime is fully up (library constructor): the file, the thread, the hooks.
void start_tracing() {
  GuardScope guard;
  remember_stderr();
  stacks_warm_up();  // first: the metadata names the unwinder it picks
  if (!open_trace()) return;
  init_thread_key();
  init_mappings();
  pthread_atfork(nullptr, nullptr, fork_child);
  install_fatal_handlers();
  std::atexit(at_exit_flush);
  // quick_exit runs neither atexit handlers nor destructors, and ends with glibc's own _exit,
  // which is not interposed: registered first, this runs after the program's handlers.
  at_quick_exit(flush_before_image_ends);
  start_writer();
}

}  // namespace

void initialize() {
  int expected = static_cast<int>(State::uninitialized);
  if (!g.state.compare_exchange_strong(expected, static_cast<int>(State::initializing))) return;
  GuardScope guard;
  resolve_real_functions();
  resolve_exec_functions();
  g.pid = getpid();
  g.min_size = parse_u64(env_value("ALLOCLAB_MIN_SIZE"));
  if (const std::uint64_t period_ms = parse_u64(env_value("ALLOCLAB_FLUSH_PERIOD_MS")))
    g_period_steps = std::max<std::uint64_t>(1, period_ms / 5);
  clock_init(env_value("ALLOCLAB_TIME_RESOLUTION"));
  stacks_configure(env_value("ALLOCLAB_STACKS"));
  const ImageDecision decision = decide_image(g.pid);
  g_image = decision.image;
  // Secure execution (setuid, setgid, capabilities): a tracer has no business there.
  const bool traced = decision.traced && getauxval(AT_SECURE) == 0;
  if (decision.image == Image::execed && !decision.traced) list_untraced_exec(g.pid);
  if (traced) prepare_writer_process();
  g.state.store(static_cast<int>(traced ? State::enabled : State::disabled),
                std::memory_order_release);
}

bool request_flush_soon() {
  if (!g_writer_running.load() || t_is_writer) return false;
  g_flush_requests.fetch_add(1);
  wake_writer();
  return true;
}

void wake_writer() {
  wake_all(g_writer_wake);
}

bool writer_was_lost() {
  if (!g_process_writer || t_is_writer) return false;
  if (!process_has_ended(g_shared.writer.process_pid.load())) return false;
  stop_tracing_without_writer();
  return true;
}

void flush_before_image_ends() {
  if (g.pid != getpid()) return;  // a vfork child: the parent's tracer is not ours to drive
  const int saved_errno = errno;
  request_flush_and_wait();
  errno = saved_errno;
}

}  // namespace alloclab::preload

using namespace alloclab::preload;

__attribute__((constructor)) static void alloclab_preload_constructor() {
  initialize();
  if (g_image == Image::root && env_value("ALLOCLAB_OUTPUT")) {
    GuardScope guard;
    mark_first_image_started(getpid());
  }
  if (g.state.load() == static_cast<int>(State::enabled)) start_tracing();
}

__attribute__((destructor(101))) static void alloclab_preload_destructor() {
  if (g.pid != getpid() || !g_writer_running.load()) return;
  ++t_guard;
  if (g_process_writer) {
    record_dropped_marker();  // before the writer's last flush, which then takes it
    stop_writer_process();
  } else {
    g_writer_stop.store(true);
    wake_writer();
    // Here on the writer thread itself when it ended the process (only_the_writer_is_left).
    if (!t_is_writer) pthread_join(g_writer_thread, nullptr);
    g_writer_running.store(false);
    record_dropped_marker();
    finish_trace();
  }
  --t_guard;
}

#define ALLOCLAB_EXPORT extern "C" __attribute__((visibility("default")))

ALLOCLAB_EXPORT void alloclab_preload_run_begin(const char* label) {
  if (tracing()) record_marker(static_cast<std::uint8_t>(alloclab::Op::run_begin), label);
}
ALLOCLAB_EXPORT void alloclab_preload_run_end(void) {
  if (tracing()) record_marker(static_cast<std::uint8_t>(alloclab::Op::run_end), nullptr);
}
ALLOCLAB_EXPORT void alloclab_preload_mark(const char* label) {
  if (tracing()) record_marker(static_cast<std::uint8_t>(alloclab::Op::mark), label);
}
// The CUDA tracer (liballoclab_cuda.so, `record --cuda --cpu`) hides its own allocations from
// this one: +1 before its work on a thread, -1 after.
ALLOCLAB_EXPORT void alloclab_preload_guard(int delta) {
  t_guard += delta;
}
