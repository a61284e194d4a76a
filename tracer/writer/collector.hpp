#pragma once
// The flush algorithm: takes S = the sequence counter, collects every record numbered below S
// from all buffers (waiting for the few slots still being filled), puts them in sequence order,
// and hands them on as batches of trace events. Everything below S is then written, so a killed
// program loses at most the last flush period, and at high event rates about one buffer's worth.
// Emptied buffers go back to the program. It knows the shared memory and nothing of files: the
// writer process drives it, and tests drive it over memory of their own.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "alloclab/format/trace.hpp"
#include "alloclab/protocol/recorder_memory.hpp"
#include "stack_table.hpp"
#include "tick_converter.hpp"

namespace alloclab::writer {

class Collector {
 public:
  // `pool_base`: where this process maps the buffer pool. `stacks`: names the frames of records
  // when the recorder takes stacks (may be null without).
  Collector(protocol::Shared& shared, char* pool_base, StackTable* stacks);

  // Receives each batch, in order; `busy`: events came fast since the last flush (a writer may
  // then compress faster). May throw: the flush stops there (the caller decides what next).
  using Sink = std::function<void(const Trace& batch, bool busy)>;

  // periodic: the writer's own. requested: someone waits for it (exit, exec, a fatal signal, a
  // marker short of label room), so it gives up sooner on a slot that stays in flight. last: the
  // writer's final one, once the program ended. All but the last hold a moved realloc's
  // free(old) back while its alloc(new) is not in the batch: a waiter does not keep the
  // program's other threads, nor itself once an earlier flush ended its wait, out of a realloc.
  enum class Kind { periodic, requested, last };

  // One flush.
  void flush(Kind kind, const Sink& sink);

  // From now on nothing more is handed to sinks, but buffers are still emptied and given back,
  // so the program's threads never wait for room.
  void stop_writing() { writing_ = false; }

  // Slots given up on and still in flight (their thread stopped inside an allocation call).
  std::size_t overdue() const { return overdue_.size(); }

 private:
  // A record copied out of its buffer (which is then free for reuse), packed as in Record.
  struct Item {
    std::uint64_t seq;
    std::uint64_t ticks;
    std::uint64_t address_align;
    std::uint64_t size_op;
    std::uint32_t stack;  // id in the batch's stack table, 0 for none
    std::uint16_t origin;
  };
  // A moved realloc: alloc(new) (sequence number `made`) belongs before free(old) (`freed`).
  struct MovedRealloc {
    std::uint64_t made;
    std::uint64_t freed;
  };

  protocol::Buffer* buffer(protocol::BufferRef ref) const;
  void adopt_new_buffers();
  bool wait_complete(const protocol::Record& r, std::uint64_t floor, bool bounded);
  bool is_overdue(const protocol::Record& r) const;
  void collect(std::uint64_t below, bool bounded);
  void merge_runs(const std::vector<std::size_t>& bounds);
  void order_moved_reallocs();
  bool hold_back_split_reallocs(std::uint64_t new_from);
  std::string label_of(const Item& item) const;
  void write_items(bool busy, const Sink& sink);
  void recycle(protocol::BufferRef ref);

  protocol::Shared& shared_;
  protocol::Globals& g_;
  char* pool_base_;
  StackTable* stacks_;
  int stack_depth_;
  TickConverter clock_;
  bool writing_ = true;
  std::uint64_t emitted_below_;
  std::uint64_t last_flush_ns_ = 0;
  // The buffers this writer knows, oldest first, so that one thread's buffers are visited in
  // the order it filled them and its items come out in sequence order without any merging.
  std::vector<protocol::BufferRef> owned_;
  std::vector<std::uint32_t> consumed_;  // by buffer index: slots below this were collected
  // Kept from flush to flush: their capacity settles at the size of a typical flush.
  std::vector<Item> items_, scratch_, held_items_;
  std::vector<MovedRealloc> moved_, held_moved_;
  // When the realloc free that holds items back now was first held (0: nothing is held). A free
  // whose alloc has not come is held again, flush after flush, for up to kMaxHoldNs: its thread
  // may be descheduled between the two for many short flushes on a loaded machine, but one that
  // never returns must not hold everything after it for long.
  std::uint64_t held_since_ns_ = 0;
  static constexpr std::uint64_t kMaxHoldNs = 1'000'000'000;
  // Slots a flush gave up on, until they complete: no flush waits for them again, and whichever
  // flush finds one complete writes it even when its number is below what was written already
  // (a thread in a signal handler that waits for this very flush, for label room, completes its
  // record afterwards: skipped as written, it was lost). A slot here keeps its buffer from
  // being recycled (it is not consumed).
  std::vector<const protocol::Record*> overdue_;
  // The batch of events being handed on; it keeps the frame and stack tables from batch to batch
  // so stack ids are file-wide.
  Trace batch_;
};

}  // namespace alloclab::writer
