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
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "alloclab/trace/trace.hpp"

namespace alloclab::detail {

void encode_chunk(const Trace& trace, std::size_t begin, std::size_t end,
                  std::vector<std::uint8_t>& out);

// Buffers reused from chunk to chunk.
struct DecodeScratch {
  std::vector<std::uint64_t> alloc_addresses;
  std::vector<std::uint16_t> global_origin;
};

// What a chunk carries besides its columns; merged into the trace in file order.
struct ChunkExtras {
  std::vector<Origin> origins;                                     // the chunk-local origin table
  std::vector<std::pair<std::uint64_t, std::string>> labels;       // (index in chunk, label)
  std::vector<std::pair<std::uint32_t, std::uint64_t>> big_sizes;  // (index in chunk, size)
};

// Decodes one chunk into columns that already exist (`col` points at `events` free slots) and
// `extras`, touching nothing else: chunks can be decoded in parallel. Origins in `col.origin`
// stay chunk-local until commit_chunk.
bool decode_chunk_columns(const std::uint8_t* data, std::size_t size, std::uint32_t events,
                          const Trace::NewColumns& col, ChunkExtras& extras, DecodeScratch& scratch,
                          std::string& error);
// Merges a decoded chunk that starts at event `base` into the trace (origins, big sizes,
// labels). Chunks must be committed in file order.
bool commit_chunk(Trace& out, std::size_t base, std::uint32_t events, ChunkExtras& extras,
                  std::string& error);

// Both steps for one chunk appended at the end of `out`. On a malformed payload returns false with
// `error` set, and leaves `out` as it was.
bool decode_chunk(const std::uint8_t* data, std::size_t size, std::uint32_t events, Trace& out,
                  DecodeScratch& scratch, std::string& error);

}  // namespace alloclab::detail
