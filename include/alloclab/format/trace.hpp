#pragma once
// A trace in memory: events as columns (struct of arrays) at 24 bytes per event, so that
// 100M events fit in 2.4 GB and a scan touches only the columns it needs.
//
// Column layout and why it fits:
//   time_ns  u64 | address u64 | size u32 (+ rare sizes >= 4 GiB in a side table)
//   origin   u16: index into a table of distinct (thread, device, stream)
//   attrs    u16: op | memory kind | alignment code | segment | realloc in place, packed as
//                 event_attrs.hpp says
// Labels live in a sparse side table: only markers carry them.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "alloclab/format/event.hpp"
#include "alloclab/format/event_attrs.hpp"

namespace alloclab {

// One frame of a recorded call stack: a return address and, when the recorder could tell, the
// function it lies in, the file of the object (executable or shared library) around it and the
// source file and line of the call (from debug information; empty and 0 when unknown).
struct StackFrame {
  std::uint64_t address = 0;
  std::string function;
  std::string module;
  std::string file{};  // {}: an initialiser list that stops at module needs no more
  std::uint32_t line = 0;
  bool operator==(const StackFrame&) const = default;
};

struct Origin {
  std::uint64_t thread = 0;
  DeviceId device = cpu_device;
  std::uint64_t stream = 0;
  std::uint64_t pool = 0;  // CUDA memory pool handle of stream-ordered allocations (0: none)
  bool operator==(const Origin&) const = default;
};

class Trace {
 public:
  static constexpr std::size_t max_origins = 65536;
  // Bounds on the frame and stack tables, so a corrupt file cannot ask for absurd tables.
  static constexpr std::uint32_t max_stack_entries = 1u << 28;

  void reserve(std::size_t events);
  // Throws InputError when the event cannot be represented (alignment not a power of two,
  // more than max_origins distinct thread/device/stream triples).
  void push_back(const Event& event);
  void clear();

  std::size_t size() const { return time_ns_.size(); }
  bool empty() const { return time_ns_.empty(); }

  // Row view of one event (allocates for the label; for tests, export and display).
  Event event(std::size_t i) const;

  std::uint64_t time_ns(std::size_t i) const { return time_ns_[i]; }
  std::uint64_t address(std::size_t i) const { return address_[i]; }
  std::uint64_t size_of(std::size_t i) const {
    return size32_[i] != big_size_marker ? size32_[i] : big_size(i);
  }
  Op op(std::size_t i) const { return event_attrs::op(attrs_[i]); }
  MemoryKind kind(std::size_t i) const { return event_attrs::kind(attrs_[i]); }
  std::uint64_t alignment(std::size_t i) const { return event_attrs::alignment(attrs_[i]); }
  bool segment(std::size_t i) const { return event_attrs::segment(attrs_[i]); }
  bool realloc_in_place(std::size_t i) const { return event_attrs::realloc_in_place(attrs_[i]); }
  std::uint16_t origin_index(std::size_t i) const { return origin_[i]; }
  const Origin& origin(std::size_t i) const { return origins_[origin_[i]]; }
  std::uint64_t thread(std::size_t i) const { return origin(i).thread; }
  DeviceId device(std::size_t i) const { return origin(i).device; }
  std::uint64_t stream(std::size_t i) const { return origin(i).stream; }
  std::uint64_t pool(std::size_t i) const { return origin(i).pool; }
  std::string_view label(std::size_t i) const;
  // The (event index, label) entries of events [begin, end), in event order.
  std::span<const std::pair<std::uint64_t, std::string>> labelled_events(std::size_t begin,
                                                                         std::size_t end) const;

  const std::vector<Origin>& origins() const { return origins_; }

  // Bulk interface for decoders: intern an origin once, then append events by index. `attrs`
  // is the packed form returned by raw_attrs() (event_attrs::pack).
  std::uint16_t add_origin(const Origin& origin) { return intern_origin(origin); }
  void append_raw(std::uint64_t time_ns, std::uint64_t address, std::uint64_t size,
                  std::uint16_t origin, std::uint16_t attrs);
  // Fastest bulk path: grows every column by `n` and returns where the new events go. Sizes of
  // 4 GiB and more must be stored with set_big_size() instead of in `size32`. The pointers stay
  // valid until the next call that adds events.
  struct NewColumns {
    std::uint64_t* time_ns;
    std::uint64_t* address;
    std::uint32_t* size32;
    std::uint16_t* origin;
    std::uint16_t* attrs;
  };
  NewColumns extend(std::size_t n);
  // Column pointers at event `first` (for filling slots made by extend()).
  NewColumns columns_at(std::size_t first);
  // Removes events [first, last) (a damaged chunk found after its slots were made). Labels and
  // big sizes must not have been set yet for events at or after `first`.
  void erase(std::size_t first, std::size_t last);
  // For event i added by extend(), in increasing i.
  void set_big_size(std::size_t i, std::uint64_t size);
  static constexpr std::uint32_t big_size_marker = 0xFFFFFFFFu;
  // Drops events from index `size` on (undoing a failed bulk decode).
  void truncate(std::size_t size);
  // Labels must be set in increasing event order.
  void set_label(std::size_t i, std::string label);
  std::uint16_t raw_attrs(std::size_t i) const { return attrs_[i]; }
  // event_attrs::pack, after checking that `alignment` is 0 or a power of two and that only an
  // alloc is marked realloc_in_place (InputError).
  static std::uint16_t pack_attrs(Op op, MemoryKind kind, std::uint64_t alignment, bool segment,
                                  bool realloc_in_place = false);

  // Call stacks (`alloclab record --stacks N`): a table of frames, a table of stacks (frame
  // indices, innermost first) and, for some events, the id of their stack. Id 0 means "none";
  // stack id k is stacks()[k - 1]. Traces without stacks pay nothing (side tables, empty).
  std::uint32_t add_frame(StackFrame frame);
  std::uint32_t add_stack(std::vector<std::uint32_t> frame_indices);  // the new id (>= 1)
  // Replaces frame `index` (naming a recorded frame after the program ended).
  void set_frame(std::uint32_t index, StackFrame frame);
  const std::vector<StackFrame>& frames() const { return frames_; }
  const std::vector<std::vector<std::uint32_t>>& stacks() const { return stacks_; }
  // Stack ids must be set in increasing event order; `id` must already exist.
  void set_stack_id(std::size_t i, std::uint32_t id);
  std::uint32_t stack_id(std::size_t i) const;
  // Every (event index, stack id) set, in event order: a scan of all events walks this beside
  // them instead of searching it once per event.
  const std::vector<std::pair<std::uint64_t, std::uint32_t>>& stack_id_entries() const {
    return stack_ids_;
  }
  bool has_stacks() const { return !stack_ids_.empty(); }
  // Drops every event but keeps the origin, frame and stack tables (a writer that appends
  // batches of events with file-wide stack ids).
  void clear_events();

  // Bytes held by the event columns and side tables (what "bytes/event in memory" measures).
  std::size_t memory_bytes() const { return memory_parts().bytes(); }
  // memory_bytes() by part, so that a streamed load, whose events pass through a small Trace a
  // batch at a time, can report what the whole trace would have held.
  struct MemoryParts {
    std::size_t column_bytes = 0;    // capacity of the event columns
    std::size_t big_size_slots = 0;  // capacity of the big-size table
    std::size_t stack_id_slots = 0;  // capacity of the stack-id table
    std::size_t label_bytes = 0;     // labels with their indices
    std::size_t table_bytes = 0;     // origins, frames and stacks
    std::size_t bytes() const;
    static constexpr std::size_t column_bytes_per_event = 24;
  };
  MemoryParts memory_parts() const;

  // Free-form metadata carried by the file header: tool version, command line, host, clock
  // source, devices, importer notes.
  nlohmann::json metadata = nlohmann::json::object();
  // Non-fatal problems found while loading (skipped damaged chunks, a cut ring buffer, ...).
  std::vector<std::string> warnings;

  bool operator==(const Trace& other) const;

 private:
  std::uint64_t big_size(std::size_t i) const;
  std::uint16_t intern_origin(const Origin& origin);

  // Columns grow without zero-filling: extend() hands out slots that decoders overwrite anyway,
  // so the pages are first touched by the (parallel) decoders, not by a serial memset.
  template <typename T>
  struct UninitializedAllocator : std::allocator<T> {
    template <typename U>
    struct rebind {
      using other = UninitializedAllocator<U>;
    };
    UninitializedAllocator() = default;
    template <typename U>
    UninitializedAllocator(const UninitializedAllocator<U>&) noexcept {}
    template <typename U>
    void construct(U* p) noexcept {
      ::new (static_cast<void*>(p)) U;
    }
    template <typename U, typename... Args>
    void construct(U* p, Args&&... args) {
      ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
  };
  template <typename T>
  using Column = std::vector<T, UninitializedAllocator<T>>;

  Column<std::uint64_t> time_ns_;
  Column<std::uint64_t> address_;
  Column<std::uint32_t> size32_;
  Column<std::uint16_t> origin_;
  Column<std::uint16_t> attrs_;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> big_sizes_;  // (event index, size), sorted
  std::vector<std::pair<std::uint64_t, std::string>> labels_;       // (event index, label), sorted
  std::vector<std::pair<std::uint64_t, std::uint32_t>> stack_ids_;  // (event index, id), sorted
  std::vector<StackFrame> frames_;
  std::vector<std::vector<std::uint32_t>> stacks_;
  std::vector<Origin> origins_;
  struct OriginHash {
    std::size_t operator()(const Origin& o) const noexcept;
  };
  std::unordered_map<Origin, std::uint16_t, OriginHash> origin_lookup_;
  std::uint16_t last_origin_ = 0;
};

}  // namespace alloclab
