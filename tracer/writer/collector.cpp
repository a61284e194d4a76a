#include "collector.hpp"

#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <cstring>

#include "alloclab/format/event.hpp"
#include "alloclab/format/event_attrs.hpp"
#include "alloclab/protocol/ticks.hpp"

namespace alloclab::writer {

using namespace alloclab::protocol;

static_assert(op_alloc == static_cast<std::uint8_t>(Op::alloc));
static_assert(op_free == static_cast<std::uint8_t>(Op::free));
static_assert(op_run_begin == static_cast<std::uint8_t>(Op::run_begin));
static_assert(op_run_end == static_cast<std::uint8_t>(Op::run_end));
static_assert(op_mark == static_cast<std::uint8_t>(Op::mark));
static_assert(kind_host == static_cast<std::uint8_t>(MemoryKind::host));
static_assert(kind_mapped == static_cast<std::uint8_t>(MemoryKind::mapped));

namespace {

// Events arriving at more than 3M/s since the last flush (ResNet-18 inference stays below) are
// "busy" (Sink): there the writer's time is what the program waits for at exit.
constexpr double busy_events_per_second = 3e6;

// The most sequence numbers one pass of a flush takes. A writer that fell behind (a program that
// allocates faster than the writer encodes) works through its backlog in passes, so its batch
// stays a few MB instead of growing with the backlog, and emptied buffers go back to the program
// pass by pass.
constexpr std::uint64_t max_pass_events = 4 * std::uint64_t{buffer_records};

void sleep_ms(long ms) {
  const timespec pause{ms / 1000, (ms % 1000) * 1'000'000};
  nanosleep(&pause, nullptr);
}

// Frames of an alloc record: up to `depth`, ended early by a 0.
int stack_depth_of(const std::uint64_t* frames, int depth) {
  int n = 0;
  while (n < depth && frames[n] != 0) ++n;
  return n;
}

}  // namespace

Collector::Collector(Shared& shared, char* pool_base, StackTable* stacks)
    : shared_(shared),
      g_(shared.globals),
      pool_base_(pool_base),
      stacks_(stacks),
      stack_depth_(shared.settings.stack_depth),
      clock_(shared.settings),
      emitted_below_(shared.settings.first_seq),
      consumed_(shared.pool.slots, 0) {}

Buffer* Collector::buffer(BufferRef ref) const {
  return buffer_at(pool_base_, shared_.pool, ref);
}

// Newly registered buffers join the end of the list, oldest first.
void Collector::adopt_new_buffers() {
  BufferRef fresh = g_.new_buffers.exchange(0, std::memory_order_seq_cst);  // newest first
  const std::size_t old_end = owned_.size();
  for (; fresh != 0; fresh = buffer(fresh)->next_new) owned_.push_back(fresh);
  std::reverse(owned_.begin() + static_cast<std::ptrdiff_t>(old_end), owned_.end());
}

bool Collector::is_overdue(const Record& r) const {
  return !overdue_.empty() && std::find(overdue_.begin(), overdue_.end(), &r) != overdue_.end();
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
bool Collector::wait_complete(const Record& r, std::uint64_t floor, bool bounded) {
  const long patience_ms = bounded ? 100 : 1000;
  for (long spin = 0; r.seq_plus1.load(std::memory_order_acquire) <= floor; ++spin) {
    if (spin == 0 && is_overdue(r)) return false;
    if (spin < 1000) continue;
    if (spin > 1000 + patience_ms) {
      overdue_.push_back(&r);
      return false;
    }
    sleep_ms(1);
  }
  return true;
}

// Sorts the items by sequence number, given the boundaries of their runs (one per buffer, in
// list order). A run is almost always sorted already: its thread takes increasing numbers (a
// signal handler that allocated between another record's slot and its number is the
// exception). The runs of one thread follow each other, so without other threads the items are
// in order once each run is; runs of concurrent threads interleave and are merged through
// scratch_ (std::inplace_merge would take a new buffer, and so fresh pages, every time).
void Collector::merge_runs(const std::vector<std::size_t>& bounds) {
  std::vector<Item>& items = items_;
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
  scratch_.clear();
  scratch_.reserve(items.size());
  const auto later_head = [&](std::size_t a, std::size_t b) {
    return items[runs[a].next].seq > items[runs[b].next].seq;
  };
  std::vector<std::size_t> heap(runs.size());
  for (std::size_t r = 0; r < runs.size(); ++r) heap[r] = r;
  std::make_heap(heap.begin(), heap.end(), later_head);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later_head);
    Run& run = runs[heap.back()];
    scratch_.push_back(items[run.next]);
    if (++run.next == run.end)
      heap.pop_back();
    else
      std::push_heap(heap.begin(), heap.end(), later_head);
  }
  items.swap(scratch_);
}

// Collects the records with emitted_below_ <= seq < below into items_ (after what is there), in
// sequence order, and the moved reallocs among them into moved_.
void Collector::collect(std::uint64_t below, bool bounded) {
  adopt_new_buffers();
  // Each buffer's records are (almost always) in sequence order already: its thread takes
  // increasing numbers. Merging those runs costs far less than sorting everything. The items
  // already there (held back by the pass before) are a run of their own: left out, a merge of
  // two threads' runs dropped them.
  std::vector<std::size_t> run_starts{0};
  std::size_t kept = 0;
  for (const BufferRef ref : owned_) {
    Buffer* b = buffer(ref);
    std::uint32_t& consumed = consumed_[ref - 1];
    run_starts.push_back(items_.size());
    const bool abandoned = b->abandoned.load(std::memory_order_acquire);
    const std::uint32_t reserved =
        std::min(b->reserved.load(std::memory_order_seq_cst), buffer_records);
    const std::uint16_t origin = batch_.add_origin(Origin{b->thread, cpu_device, 0});
    std::uint32_t first_left = reserved;
    std::uint64_t first_beyond = UINT64_MAX;  // the number of the first record at or above below
    for (std::uint32_t i = consumed; i < reserved; ++i) {
      const Record& r = b->records[i];
      if (!wait_complete(r, b->floor, bounded)) {
        // Overdue. The records after it may be complete and below `below` (a signal
        // handler's): they are taken now, or never.
        if (first_left == reserved) first_left = i;
        continue;
      }
      const std::uint64_t seq = r.seq_plus1.load(std::memory_order_acquire) - 1;
      const bool was_overdue = !overdue_.empty() && std::erase(overdue_, &r) > 0;
      if (seq >= below) {
        if (first_left == reserved) first_left = i;
        // A record after the first one at or above `below` is numbered below it only if a
        // signal handler reserved it before that one took its number. The first numbered above
        // it was reserved later, and so was everything after it: nothing further on is below.
        // (A flush that works through a backlog in passes would otherwise scan the whole
        // backlog each pass.)
        if (first_beyond == UINT64_MAX) first_beyond = seq;
        if (seq > first_beyond) break;
        continue;
      }
      // Left behind by an earlier pass, already written; unless it completed overdue.
      if (seq < emitted_below_ && !was_overdue) continue;
      const std::uint8_t op = record_op(r.size_op);
      if (op == op_pair) {  // reserved with the alloc just before it: same seq, same pass
        moved_.push_back(MovedRealloc{seq, r.address_align});
        continue;
      }
      if (op == op_skip) continue;
      items_.push_back(Item{seq, r.ticks, r.address_align, r.size_op, 0, origin});
      // Frames are read now: the buffer may be reused once collected.
      if (stack_depth_ && stacks_ && op == op_alloc) {
        const std::uint64_t* frames = frame_slots(b, i, stack_depth_);
        if (const int depth = stack_depth_of(frames, stack_depth_))
          items_.back().stack = stacks_->intern(frames, depth, batch_);
      }
    }
    consumed = first_left;
    if (abandoned && consumed == reserved) {
      recycle(ref);
      continue;
    }
    owned_[kept++] = ref;
  }
  owned_.resize(kept);
  run_starts.push_back(items_.size());
  merge_runs(run_starts);
}

// A realloc that moved was recorded free(old) then alloc(new) (the only safe order to take the
// numbers in). The replay model wants alloc(new) first; move it up unless an event in between
// touched the new address (then the recorded order is the true one).
void Collector::order_moved_reallocs() {
  const auto by_seq = [](const Item& a, std::uint64_t seq) { return a.seq < seq; };
  for (const MovedRealloc& m : moved_) {
    const auto made = std::lower_bound(items_.begin(), items_.end(), m.made, by_seq);
    if (made == items_.end() || made->seq != m.made) continue;
    const auto freed = std::lower_bound(items_.begin(), made, m.freed, by_seq);
    if (freed == made || freed->seq != m.freed) continue;
    const std::uint64_t address = made->address_align & field_mask;
    bool touched = false;
    for (auto between = freed + 1; between != made; ++between)
      touched |= record_op(between->size_op) <= op_free &&
                 (between->address_align & field_mask) == address;
    if (!touched) std::rotate(freed, made, made + 1);
  }
}

std::string Collector::label_of(const Item& item) const {
  const LabelSlot& slot = g_.labels[(item.address_align & field_mask) % label_slots];
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

void Collector::write_items(bool busy, const Sink& sink) {
  batch_.clear_events();
  const Trace::NewColumns col = batch_.extend(items_.size());
  for (std::size_t i = 0; i < items_.size(); ++i) {
    const Item& item = items_[i];
    const std::uint8_t op = record_op(item.size_op);
    const bool marker = op > op_free;
    col.time_ns[i] = clock_.to_ns(item.ticks);
    col.address[i] = marker ? 0 : item.address_align & field_mask;
    const std::uint64_t size = record_size(item.size_op);
    if (size < Trace::big_size_marker) {
      col.size32[i] = static_cast<std::uint32_t>(size);
    } else {
      col.size32[i] = Trace::big_size_marker;
      batch_.set_big_size(i, size);
    }
    col.origin[i] = item.origin;
    // The record's alignment code means what event_attrs' does (0: none, else log2 + 1). A code
    // past the largest comes from an alignment above 2^63, rounded up: 2^63 is what it asked.
    const auto align_code = std::min(static_cast<unsigned>(item.address_align >> field_bits),
                                     event_attrs::max_align_code);
    // The recorder sets the realloc bit on allocs only.
    col.attrs[i] =
        Trace::pack_attrs(static_cast<Op>(op), static_cast<MemoryKind>(record_kind(item.size_op)),
                          event_attrs::alignment_of(align_code), false,
                          op == op_alloc && (item.size_op & realloc_in_place_bit) != 0);
    if (marker && op != op_run_end) batch_.set_label(i, label_of(item));
    if (item.stack) batch_.set_stack_id(i, item.stack);
  }
  sink(batch_, busy);
}

// A realloc's free(old) is complete before its alloc(new) takes a number, so a flush between the
// two would write them in separate batches, free first, beyond order_moved_reallocs' reach. The
// alloc that completes a realloc free is its op_pair's (moved) or its thread's next alloc at the
// same address flagged realloc_in_place (kept), not simply its thread's next item: an allocator
// below the recorder may allocate inside the realloc (`alloclab run --record`'s strategies do),
// and those allocations are recorded in between. When that alloc is not in the batch, or not
// before the point from which items wait anyway, everything from the free on waits for the next
// flush. Items held before are held again while the free that cut them has waited less than
// kMaxHoldNs, then only items new in this flush are looked at, so a thread that never returns
// holds nothing for long. Returns whether a marker is among them (its label must stay).
bool Collector::hold_back_split_reallocs(std::uint64_t new_from) {
  constexpr std::uint64_t none = UINT64_MAX;
  std::uint64_t cut = none;
  // The moved reallocs by the number of their free.
  std::vector<MovedRealloc> by_free(moved_);
  std::sort(by_free.begin(), by_free.end(),
            [](const MovedRealloc& a, const MovedRealloc& b) { return a.freed < b.freed; });
  // By origin: its next alloc seen that a realloc kept in place, and that alloc's address.
  struct Kept {
    std::uint64_t seq = none;
    std::uint64_t address = 0;
  };
  std::vector<Kept> next_kept;
  const std::uint64_t now = monotonic_ns();
  const bool hold_again = held_since_ns_ != 0 && now - held_since_ns_ < kMaxHoldNs;
  const std::uint64_t look_from = hold_again ? 0 : new_from;
  for (auto it = items_.rbegin(); it != items_.rend() && it->seq >= look_from; ++it) {
    if (it->origin >= next_kept.size()) next_kept.resize(it->origin + 1u);
    Kept& kept = next_kept[it->origin];
    const std::uint64_t address = it->address_align & field_mask;
    const std::uint8_t op = record_op(it->size_op);
    if (op == op_alloc && (it->size_op & realloc_in_place_bit)) kept = Kept{it->seq, address};
    if (op != op_free || !(it->size_op & realloc_free_bit)) continue;
    std::uint64_t completed_by = kept.address == address ? kept.seq : none;
    const auto moved =
        std::lower_bound(by_free.begin(), by_free.end(), it->seq,
                         [](const MovedRealloc& m, std::uint64_t seq) { return m.freed < seq; });
    if (moved != by_free.end() && moved->freed == it->seq) completed_by = moved->made;
    if (completed_by == none || completed_by >= cut) cut = it->seq;
  }
  if (cut == none) {
    held_since_ns_ = 0;
    return false;
  }
  // A cut among this flush's new items starts a new wait; one among those held keeps its own.
  if (cut >= new_from || held_since_ns_ == 0) held_since_ns_ = now;
  const auto from = std::lower_bound(items_.begin(), items_.end(), cut,
                                     [](const Item& a, std::uint64_t seq) { return a.seq < seq; });
  held_items_.assign(from, items_.end());
  items_.erase(from, items_.end());
  for (const MovedRealloc& m : moved_)
    if (m.made >= cut) held_moved_.push_back(m);
  std::erase_if(moved_, [cut](const MovedRealloc& m) { return m.made >= cut; });
  return std::any_of(held_items_.begin(), held_items_.end(),
                     [](const Item& item) { return record_op(item.size_op) > op_free; });
}

// A buffer emptied that no thread uses any more: kept for reuse among the spares, else given
// back to the pool with its pages freed (MADV_REMOVE frees a shared mapping's pages for every
// process that maps it).
void Collector::recycle(BufferRef ref) {
  Buffer* b = buffer(ref);
  if (b->handed_over_full) {
    b->handed_over_full = false;
    g_.full_buffers.fetch_sub(1, std::memory_order_relaxed);
  }
  b->floor = g_.seq.load(std::memory_order_seq_cst);
  b->reserved.store(0, std::memory_order_relaxed);
  b->abandoned.store(false, std::memory_order_relaxed);
  b->thread = 0;
  b->next_new = 0;
  consumed_[ref - 1] = 0;
  for (std::atomic<BufferRef>& slot : shared_.spares) {
    BufferRef empty = 0;
    if (slot.compare_exchange_strong(empty, ref, std::memory_order_release,
                                     std::memory_order_relaxed))
      return;
  }
  madvise(b, shared_.pool.slot_bytes, MADV_REMOVE);
  PoolLayout& pool = shared_.pool;
  std::uint64_t head = pool.free_list.load(std::memory_order_relaxed);
  do {
    std::atomic_ref<BufferRef>(b->pool_next).store(static_cast<BufferRef>(head));
  } while (!pool.free_list.compare_exchange_weak(head, ref | ((head >> 32) + 1) << 32,
                                                 std::memory_order_release));
}

void Collector::flush(Kind kind, const Sink& sink) {
  const bool bounded = kind != Kind::periodic;
  // A marker takes its label after its sequence number: every label below `labels` belongs to a
  // marker numbered below S, and so is written by this flush.
  const std::uint64_t labels = g_.label_next.load(std::memory_order_seq_cst);
  const std::uint64_t S = g_.seq.load(std::memory_order_seq_cst);
  const std::uint64_t now = monotonic_ns();
  const double rate = now > last_flush_ns_ && last_flush_ns_ != 0 && S > emitted_below_
                          ? static_cast<double>(S - emitted_below_) * 1e9 /
                                static_cast<double>(now - last_flush_ns_)
                          : 0.0;
  last_flush_ns_ = now;
  bool label_held = false;
  do {
    const std::uint64_t below = std::min(S, emitted_below_ + max_pass_events);
    // Held-back items all come before this pass's: collect appends in order after them. Copied,
    // not swapped: a swap would leave the big vector with the held-back list every other pass
    // and make the batch grow again from nothing, page faults and all.
    items_.assign(held_items_.begin(), held_items_.end());
    moved_.assign(held_moved_.begin(), held_moved_.end());
    held_items_.clear();
    held_moved_.clear();
    const std::uint64_t new_from = emitted_below_;
    // Also when not writing: the buffers must still be emptied and given back.
    collect(below, bounded);
    emitted_below_ = std::max(emitted_below_, below);
    // A pass before the last holds back for the next, which follows at once; the last pass of
    // the last flush has nothing after it to hold back for.
    label_held = (below < S || kind != Kind::last) && hold_back_split_reallocs(new_from);
    if (writing_) {
      clock_.calibrate();
      order_moved_reallocs();
      write_items(rate > busy_events_per_second, sink);
    }
  } while (emitted_below_ < S);
  // A held-back marker's label is read by the next flush: its slot is not free yet.
  if (!label_held) g_.labels_collected.store(labels, std::memory_order_release);
}

}  // namespace alloclab::writer
