#pragma once
// Encoding of one chunk's events before compression. Columns are stored one after another
// (all attrs, then all origins, times, sizes, addresses) so zstd sees similar bytes together:
//
//   origins := n:varint (thread:varint device:zigzag stream:varint)*n   -- chunk-local table
//   labels  := n:varint (index_delta:varint len:varint bytes)*n
//   attrs   := varint*events                (Trace::raw_attrs)
//   origin  := varint*events                (index into the chunk-local table)
//   time    := zigzag(time - previous time)*events
//   size    := varint*events
//   address := per event:
//     alloc/free: tag:varint   odd tag  -> a free of the allocation made (tag >> 1) allocations
//                                          earlier in this chunk (most frees are this cheap)
//                              tag == 0 -> zigzag(address - previous address):varint follows
//                              even tag -> zigzag delta = (tag >> 1) - 1
//     markers:    address:varint (no effect on "previous address")
//
// Version 2 adds, between labels and attrs (docs/alt-format.md):
//   frames    := first:varint n:varint (address:varint len:varint function len:varint module)*n
//   stacks    := first:varint n:varint (depth:varint frame:varint*depth)*n
//   stack ids := n:varint (index_delta:varint id:varint)*n
//   time_shift:varint      -- times are stored as deltas of (time >> time_shift)
// Frame and stack definitions are file-wide and each is written once, in the first chunk
// written after it was added to the trace (StackCursor says how far a writer has got).
//
// Version 4 replaces size and address:
//   size      := (size & 0xFF):u8*events (size >> 8 & 0xFF):u8*events (size >> 16):varint*events
//   free_refs := varint per free: k > 0 -> the allocation made k allocations earlier in the
//                chunk; 0 -> its address is in `deltas`
//   reuse     := varint per alloc: r + 1 -> the address at rank r of FreedBlocks for its size;
//                0 -> its address is in `deltas`
//   deltas    := zigzag(address - previous alloc/free address) per address not referenced, and
//                a marker's value as a plain varint, in event order
//
// Version 5 stores the size planes for allocations only, then
// other_sizes := varint per other event; and between reuse and deltas
//   recent    := varint per alloc whose reuse code is 9: its block is the one freed that many
//                frees before the chunk's latest free so far (RecentFrees)
//   after     := varint per alloc whose reuse code is 10: k -> its address is FreedBlocks::end_of
//                the allocation made k allocations earlier in the chunk
//
// Version 6 (what encode_chunk writes) stores free_refs, recent and after in byte planes, as
// the sizes: the low bytes of all values, then their second bytes, then (value >> 16):varint
// each. References are spread over thousands of values: a varint's continuation bits cut
// through them, where a plane keeps the nearly random low byte apart from the skewed high one
// (on bench/malloc_churn 0.11 bytes per event less).
//
// Version 7 groups chunks: a chunk whose header gives it a position p > 0 in a group continues
// the address state of the chunk before it (the freed-block rings, the recent frees, the
// allocations that references count back over, the previous address), so a block allocated
// in one chunk and freed in a later one of the group is a reference rather than an address
// delta. Everything else (origins, labels, times, sizes) stays per chunk.
//
// Version 8 adds the realloc-in-place bit to attrs. Version 9 ends each frame with its source
// file and line: (address len function len module len file line:varint); line 0 and an empty
// file: unknown.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "alloclab/format/address_map.hpp"
#include "alloclab/format/trace.hpp"
#include "freed_blocks.hpp"
#include "layout.hpp"
#include "live_order.hpp"
#include "varint.hpp"

namespace alloclab::detail {

// How many of a trace's frames and stacks a file already defines.
struct StackCursor {
  std::size_t frames = 0;
  std::size_t stacks = 0;
};

// A buffer that, unlike std::vector, leaves what it reserves uninitialised: the encoder
// reserves each address stream's worst case (ten bytes per event) for every chunk.
template <typename Item>
class ScratchStream {
 public:
  // Empties the stream, with room for `max_items`.
  void start(std::size_t max_items) {
    if (max_items > capacity_) {
      data_ = std::make_unique_for_overwrite<Item[]>(max_items);
      capacity_ = max_items;
    }
    end_ = data_.get();
  }
  const Item* begin() const { return data_.get(); }
  const Item* end() const { return end_; }
  std::size_t size() const { return static_cast<std::size_t>(end_ - data_.get()); }
  Item operator[](std::size_t i) const { return data_[i]; }

 protected:
  std::unique_ptr<Item[]> data_;
  std::size_t capacity_ = 0;
  Item* end_ = nullptr;
};

// Varints, ready to be joined into the chunk.
class ByteStream : public ScratchStream<std::uint8_t> {
 public:
  [[gnu::always_inline]] void put(std::uint64_t v) { end_ = write_varint(end_, v); }
};

// A column of references gathered before it is written in byte planes (version 6).
class ValueStream : public ScratchStream<std::uint32_t> {
 public:
  [[gnu::always_inline]] void put(std::uint32_t v) { *end_++ = v; }
};

// Tables and buffers reused from chunk to chunk.
struct EncodeScratch {
  // What the chunk did last with an address: allocated it (`index`: the allocations before it
  // in the chunk, `ring`: FreedBlocks::ring_for its size) or freed it (`index`: the frees
  // before in the chunk, `ring`: that of its allocation, RecentFrees::no_ring if not known).
  // Eight bytes, sixteen with its key: the map spans a group's addresses, tens of thousands, and
  // the less of the cache it takes, the less it takes from the traced program beside it.
  struct Block {
    static constexpr std::uint16_t no_ring = 0xFFFF;  // RecentFrees::no_ring
    std::uint32_t index = 0;
    std::uint16_t ring = 0;  // below FreedBlocks::ring_count
    bool live = false;
  };
  static_assert(FreedBlocks::ring_count <= Block::no_ring);
  AddressMap<Block> blocks;
  AddressMap<std::uint32_t> ends;  // FreedBlocks::end_of an allocation -> its index
  FreedBlocks freed;
  LiveOrder live;  // by ordinal: which of the group's allocations no free referenced yet
  // How far the group got: its allocations, its frees of nonzero addresses, the last address.
  std::uint32_t allocs = 0;
  std::uint32_t frees = 0;
  std::uint64_t previous_address = 0;
  ByteStream alloc_times, other_times;   // version 7: the time column, split
  ValueStream free_refs, recent, after;  // the address streams before they are joined
  ByteStream reuse, deltas;
  std::vector<std::uint64_t> alloc_sizes, other_sizes;  // the chunk's sizes, split
  // Where the output's columns end, the last at its end: a compressor that starts a new block
  // at each gives every column its own entropy tables.
  std::vector<std::size_t> section_ends;
};

// How far a writer's current group got, and the one rule (alloclab's writers, alt_column_sizes)
// for whether the next chunk continues it.
struct GroupCursor {
  std::uint32_t chunks = 0;  // in the group the next chunk may continue; 0: none
  std::uint64_t events = 0;

  // Whether the next chunk, of `chunk_events`, continues the group `scratch` encoded last; when
  // it does not, the cursor starts a new group. Besides the writer's `events_per_group` and the
  // format's limits, the encoder's maps decide: they grow with the distinct addresses a group
  // has seen (PyTorch: 150,000 in 524,288 events, 16 MB of maps, all of it in the traced
  // process), so a group ends once they hold 131,072 (about 4 MB), a few chunks' worth.
  bool next_continues(std::size_t chunk_events, std::size_t events_per_group,
                      const EncodeScratch& scratch) {
    const bool continues = chunks > 0 && events < events_per_group &&
                           chunks <= alt_max_group_position &&
                           events + chunk_events <= alt_max_group_events &&
                           scratch.blocks.size() + scratch.ends.size() <= (std::size_t{1} << 17);
    if (!continues) *this = {};
    return continues;
  }
  // The chunk is built: the next one may continue after it.
  void built(std::size_t chunk_events) {
    ++chunks;
    events += chunk_events;
  }
};

// Encodes in the current format version (alt_format_version); also writes the frame and stack
// definitions past `cursor` and advances it. With `continues_group` the chunk carries on from
// the state of the chunk `scratch` encoded last (its header must then say so); without it, it
// starts a group.
void encode_chunk(const Trace& trace, std::size_t begin, std::size_t end, StackCursor& cursor,
                  std::vector<std::uint8_t>& out, EncodeScratch& scratch,
                  bool continues_group = false);

// Buffers reused from chunk to chunk.
struct DecodeScratch {
  std::vector<std::uint64_t> alloc_addresses;
  std::vector<std::uint16_t> alloc_rings;  // by ordinal (version 4): FreedBlocks::ring_for
  std::vector<std::uint64_t> sizes;        // the chunk's sizes before they are split
  std::vector<std::uint64_t> alloc_gaps;   // version 7: the allocations' time column
  std::vector<std::uint64_t> free_refs;
  std::vector<std::uint8_t> reuse;
  std::vector<std::uint64_t> recent;
  std::vector<std::uint64_t> after;
  std::vector<std::uint64_t> alloc_ends;  // by ordinal (version 5): FreedBlocks::end_of
  FreedBlocks freed;
  RecentFrees recent_frees;
  LiveOrder live;  // version 7
  std::uint64_t previous_address = 0;
  // The last chunk decoded with this scratch was decoded in full: one that continues its group
  // may follow.
  bool group_intact = false;
  std::vector<std::uint16_t> global_origin;
};

// What a chunk carries besides its columns; merged into the trace in file order.
struct ChunkExtras {
  std::vector<Origin> origins;                                     // the chunk-local origin table
  std::vector<std::pair<std::uint64_t, std::string>> labels;       // (index in chunk, label)
  std::vector<std::pair<std::uint32_t, std::uint64_t>> big_sizes;  // (index in chunk, size)
  std::uint64_t frames_first = 0;                                  // file-wide index of frames[0]
  std::vector<StackFrame> frames;
  std::uint64_t stacks_first = 0;  // file-wide position of stacks[0] (its id is this + 1)
  std::vector<std::vector<std::uint32_t>> stacks;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> stack_ids;  // (index in chunk, id)
};

// How a chunk's addresses are decoded.
enum class ChunkAddresses {
  start_group,     // on their own: a chunk at position 0 of its group, or of version 6 or older
  continue_group,  // with the state the chunk before it in its group left in the scratch
  skip,            // not at all, every address 0: a chunk looked at alone (read_alt_tail)
};

// Decodes one chunk into columns that already exist (`col` points at `events` free slots) and
// `extras`, touching nothing else: groups of chunks can be decoded in parallel. A chunk of an
// older format version is handed to legacy_versions.hpp. Origins in
// `col.origin` stay chunk-local until commit_chunk. A chunk that continues its group (version
// 7) is decoded with the scratch that decoded the chunk before it, and fails if that one failed.
bool decode_chunk_columns(const std::uint8_t* data, std::size_t size, std::uint32_t events,
                          std::uint32_t version, const Trace::NewColumns& col, ChunkExtras& extras,
                          DecodeScratch& scratch, std::string& error,
                          ChunkAddresses addresses = ChunkAddresses::start_group);
// Merges a decoded chunk that starts at event `base` into the trace (origins, big sizes,
// labels, frames, stacks). Chunks must be committed in file order. Definitions that a lost
// chunk carried become empty placeholders, so later ids still mean what they meant.
bool commit_chunk(Trace& out, std::size_t base, std::uint32_t events, ChunkExtras& extras,
                  std::string& error);

// Both steps for one chunk appended at the end of `out`. On a malformed payload returns false with
// `error` set, and leaves `out` as it was.
bool decode_chunk(const std::uint8_t* data, std::size_t size, std::uint32_t events,
                  std::uint32_t version, Trace& out, DecodeScratch& scratch, std::string& error,
                  ChunkAddresses addresses = ChunkAddresses::start_group);

}  // namespace alloclab::detail
