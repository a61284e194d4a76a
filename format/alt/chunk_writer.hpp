#pragma once
// Building the bytes of an .alt header and of one chunk, shared by write_alt (whole files) and
// AltStreamWriter (appending while a program runs), so the on-disk layout exists once.
#include <cstddef>
#include <cstdint>
#include <vector>

#include <zstd.h>
#include <nlohmann/json.hpp>

#include "alloclab/format/trace.hpp"
#include "codec.hpp"

namespace alloclab::detail {

// The file header (magic, version, metadata, checksum). Adds "format" and, when missing,
// "tool_version" to the metadata.
std::vector<std::uint8_t> build_alt_header(const nlohmann::json& metadata);

// Buffers and state reused from chunk to chunk of one file.
struct ChunkScratch {
  ChunkScratch();
  ~ChunkScratch();
  ChunkScratch(const ChunkScratch&) = delete;
  ChunkScratch& operator=(const ChunkScratch&) = delete;

  std::vector<std::uint8_t> raw;
  StackCursor written;  // frames and stacks already defined by earlier chunks of the file
  EncodeScratch encode;
  ZSTD_CCtx* zstd;  // a context per call would be allocated and set up for every chunk
  // Reset when the last chunk built never reached the file: nothing may continue it.
  GroupCursor group;
};

// Events [begin, end) of `trace` as one complete chunk (header + zstd payload) in `out`, ready
// to be written with a single write. It continues the group of the chunk built before it with
// `scratch` while that group holds fewer than `events_per_group` events. Throws
// std::runtime_error on a compression failure and std::invalid_argument when the range holds
// more events than a chunk may.
void build_alt_chunk(const Trace& trace, std::size_t begin, std::size_t end, int zstd_level,
                     std::size_t events_per_group, ChunkScratch& scratch,
                     std::vector<std::uint8_t>& out);

}  // namespace alloclab::detail
