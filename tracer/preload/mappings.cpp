// The table of recorded mappings (mappings.hpp): a sorted array of disjoint ranges under a spin
// lock. mmap and munmap are system calls of microseconds, and programs keep from a few to a few
// thousand mappings (the kernel allows 65,530 by default), so a binary search and a memmove
// cost little next to them; new mappings mostly come below the others (the kernel fills the
// address space top-down), which is the array's end: it is sorted by descending start.
//
// No event is recorded under the lock (recording may wait for buffer room): a change collects
// its events, releases the lock and then records them, still before the real munmap, so a free
// keeps its number below that of any later mapping at its address.
#include "mappings.hpp"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>

#include "recorder.hpp"

namespace alloclab::preload {
namespace {

struct Range {
  std::uint64_t start;
  std::uint64_t end;
  // false: a reservation (mapped PROT_NONE), address space and not memory. Runtimes reserve
  // gigabytes this way (JITs, GPU drivers) and commit parts with mprotect or MAP_FIXED: only
  // those parts are allocations in the trace.
  bool recorded;
};

constexpr std::size_t max_ranges = 65536;
Range g_ranges[max_ranges];  // by descending start; disjoint
std::size_t g_count = 0;
// How many ranges are reservations. Changed under the lock; read without it by mprotect, which
// has nothing to commit while there are none (a JIT flipping its code pages between RW and RX).
std::atomic<std::size_t> g_reservations{0};
std::uint64_t g_page = 4096;

// One lock for the table. Signals are blocked while a thread takes and holds it: a signal
// handler that maps memory never runs on a thread that holds it (it would wait for itself
// forever), so no change is lost. Holders never block; the others wait a little at most.
std::atomic<bool> g_locked{false};

void take(sigset_t* saved) {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, saved);
  for (int spin = 0; g_locked.exchange(true, std::memory_order_acquire); ++spin) {
    if (spin >= 100) sched_yield();
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  }
}

void give(const sigset_t* saved) {
  g_locked.store(false, std::memory_order_release);
  pthread_sigmask(SIG_SETMASK, saved, nullptr);
}

class TableLock {
 public:
  TableLock() { take(&saved_); }
  ~TableLock() { give(&saved_); }
  TableLock(const TableLock&) = delete;
  TableLock& operator=(const TableLock&) = delete;

 private:
  sigset_t saved_;
};

// A fork copies the table whole: it is taken before, and given back after on both sides.
sigset_t g_fork_saved;

void fork_prepare() {
  take(&g_fork_saved);
}

void fork_done() {
  give(&g_fork_saved);
}

std::uint64_t page_end(std::uint64_t start, std::uint64_t length) {
  return start + ((length + g_page - 1) & ~(g_page - 1));
}

// The first range (in array order, so the highest) that starts below `end`: ranges from there
// on that end above some `start` overlap [start, end).
std::size_t first_starting_below(std::uint64_t end) {
  std::size_t low = 0, high = g_count;
  while (low < high) {
    const std::size_t mid = (low + high) / 2;
    if (g_ranges[mid].start >= end)
      low = mid + 1;
    else
      high = mid;
  }
  return low;
}

struct Change {
  std::uint8_t op;
  std::uint64_t address;
  std::uint64_t size;
};

void record_changes(const Change* changes, int n) {
  for (int i = 0; i < n; ++i)
    record_event(changes[i].op, kind_mapped, changes[i].address, changes[i].size, 0);
}

void count_dropped() {
  g.dropped.fetch_add(1, std::memory_order_relaxed);
}

// Takes [start, end) out of the table, a few ranges at a time (their events are recorded
// between the rounds, outside the lock).
void forget(std::uint64_t start, std::uint64_t end) {
  constexpr std::size_t ranges_per_round = 16;
  if (end <= start) return;
  for (;;) {
    // The frees of the ranges taken out, then the allocations of the parts of them that stay:
    // at most two (from `end` on: of the highest range; below `start`: of the lowest).
    Change changes[ranges_per_round + 2];
    int n = 0;
    bool more = false;
    {
      TableLock lock;
      const std::size_t first = first_starting_below(end);
      std::size_t last = first;  // one past the ranges taken out
      Range stays[2];
      std::size_t staying = 0;
      std::size_t reservations_removed = 0;
      while (last < g_count && g_ranges[last].end > start && last - first < ranges_per_round) {
        const Range r = g_ranges[last++];
        reservations_removed += !r.recorded;
        if (r.recorded) changes[n++] = {op_free, r.start, 0};
        // Descending, as the table: the higher part first. A recorded part below --min-size
        // goes with its block, as a mapping that small would not have been recorded.
        const std::uint64_t least = r.recorded ? g.min_size : 1;
        if (r.end > end && r.end - end >= least) stays[staying++] = {end, r.end, r.recorded};
        if (r.start < start && start - r.start >= least)
          stays[staying++] = {r.start, start, r.recorded};
      }
      more = last < g_count && g_ranges[last].end > start;
      const std::size_t removed = last - first;
      // A hole punched into the middle of a range takes one more slot than it had.
      if (g_count - removed + staying > max_ranges) {
        staying = 0;
        count_dropped();
      }
      if (removed != staying) {
        std::memmove(&g_ranges[first + staying], &g_ranges[last], (g_count - last) * sizeof(Range));
        g_count = g_count - removed + staying;
      }
      std::size_t reservations_staying = 0;
      for (std::size_t k = 0; k < staying; ++k) reservations_staying += !stays[k].recorded;
      g_reservations.fetch_add(reservations_staying - reservations_removed,
                               std::memory_order_relaxed);  // mod 2^64: may go down
      for (std::size_t k = 0; k < staying; ++k) {
        g_ranges[first + k] = stays[k];
        if (stays[k].recorded)
          changes[n++] = {op_alloc, stays[k].start, stays[k].end - stays[k].start};
      }
    }
    record_changes(changes, n);
    if (!more) return;
  }
}

enum class Added { yes, overlaps, table_full };

// Adds [start, end) unless something in the table overlaps it.
Added add_if_clear(std::uint64_t start, std::uint64_t end, bool recorded) {
  TableLock lock;
  const std::size_t at = first_starting_below(end);
  if (at < g_count && g_ranges[at].end > start) return Added::overlaps;
  if (g_count == max_ranges) return Added::table_full;
  std::memmove(&g_ranges[at + 1], &g_ranges[at], (g_count - at) * sizeof(Range));
  g_ranges[at] = {start, end, recorded};
  ++g_count;
  if (!recorded) g_reservations.fetch_add(1, std::memory_order_relaxed);
  return Added::yes;
}

// Puts [start, end) in the table (recorded or reserved), after forgetting what it replaces.
Added replace(std::uint64_t start, std::uint64_t end, bool recorded) {
  // Almost always nothing was mapped there: one pass under the lock.
  Added added = add_if_clear(start, end, recorded);
  if (added == Added::overlaps) {
    forget(start, end);
    added = add_if_clear(start, end, recorded);
  }
  return added;
}

// The first range overlapping [start, end) whose `recorded` is `which`, as it is now.
bool find_overlapping(std::uint64_t start, std::uint64_t end, bool which, Range& found) {
  TableLock lock;
  for (std::size_t k = first_starting_below(end); k < g_count && g_ranges[k].end > start; ++k)
    if (g_ranges[k].recorded == which) {
      found = g_ranges[k];
      return true;
    }
  return false;
}

}  // namespace

void mappings_forget(std::uint64_t start, std::uint64_t length) {
  forget(start, page_end(start, length));
}

void mappings_mapped(std::uint64_t start, std::uint64_t length, Mapping what, std::uint64_t size) {
  const std::uint64_t end = page_end(start, length);
  switch (what) {
    case Mapping::untracked:
      forget(start, end);
      return;
    case Mapping::reservation:
      if (replace(start, end, false) == Added::table_full) count_dropped();
      return;
    case Mapping::recorded:
      // A mapping the table has no room for is not recorded, nor then its munmap.
      if (replace(start, end, true) == Added::yes)
        record_event(op_alloc, kind_mapped, start, size, 0);
      else
        count_dropped();
      return;
  }
}

void mappings_protected(std::uint64_t start, std::uint64_t length, bool accessible) {
  if (accessible && g_reservations.load(std::memory_order_relaxed) == 0) return;
  const std::uint64_t end = page_end(start, length);
  // One range at a time: each pass turns one into the other kind, so none is found twice.
  for (Range r{}; find_overlapping(start, end, !accessible, r);) {
    const std::uint64_t from = std::max(start, r.start);
    const std::uint64_t to = std::min(end, r.end);
    forget(from, to);  // a recorded range's free, and its parts that stay
    if (accessible && to - from < g.min_size) continue;  // committed, too small to record
    const Added added = add_if_clear(from, to, accessible);
    if (added != Added::yes)
      count_dropped();
    else if (accessible)
      record_event(op_alloc, kind_mapped, from, to - from, 0);
  }
}

Mapping mappings_kind(std::uint64_t start, std::uint64_t length) {
  TableLock lock;
  const std::size_t at = first_starting_below(start + 1);
  if (at == g_count || g_ranges[at].end <= start) return Mapping::untracked;
  if (g_ranges[at].recorded) return Mapping::recorded;
  return length != 0 && g_ranges[at].end >= page_end(start, length) ? Mapping::reservation
                                                                    : Mapping::untracked;
}

void init_mappings() {
  const long page = sysconf(_SC_PAGESIZE);
  if (page > 0) g_page = static_cast<std::uint64_t>(page);
  pthread_atfork(fork_prepare, fork_done, fork_done);
}

}  // namespace alloclab::preload
