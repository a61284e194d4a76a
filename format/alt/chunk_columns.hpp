#pragma once
// The parts of a chunk's payload that the current format version stores as older versions did
// (docs/alt-format.md). codec.cpp decodes them for the current version and legacy_versions.cpp
// for the versions before it, each in its own version's order. Each step reads its part from
// `in` into the columns or `extras`; on malformed input it returns false with `error` set.
#include <cstdint>
#include <string>
#include <vector>

#include "codec.hpp"
#include "freed_blocks.hpp"
#include "varint.hpp"

namespace alloclab::detail {

// Reuse codes of allocations whose address is in the `recent` or the `after` stream (version 5
// on; 1..FreedBlocks::depth: a rank in the freed-block table, 0: an address delta).
inline constexpr std::uint64_t reuse_recent = FreedBlocks::depth + 1;
inline constexpr std::uint64_t reuse_after = FreedBlocks::depth + 2;

// The chunk-local origin table, each origin with its pool (version 3 on).
bool decode_origins(VarintReader& in, std::uint32_t events, ChunkExtras& extras,
                    std::string& error);
// The labels of markers (every version).
bool decode_labels(VarintReader& in, std::uint32_t events, ChunkExtras& extras, std::string& error);
// Frame, stack and stack id tables, then the time shift (version 2 on; each frame's source file
// and line from version 9 on).
bool decode_stack_tables_and_time_shift(VarintReader& in, std::uint32_t events,
                                        std::uint32_t version, ChunkExtras& extras,
                                        unsigned& time_shift, std::string& error);
// The attrs column, then the chunk-local origin of each event (every version; the realloc bit
// from version 8 on: an older file with it is refused).
bool decode_attrs_and_origins(VarintReader& in, std::uint32_t events, std::uint32_t version,
                              std::size_t origin_count, const Trace::NewColumns& col,
                              std::string& error);
// Sizes: the allocations' in byte planes, then the other events' as varints (version 5 on).
bool decode_split_sizes(VarintReader& in, std::uint32_t events, const Trace::NewColumns& col,
                        std::vector<std::uint64_t>& sizes, std::string& error);
// `sizes` into the size column, those that do not fit in 32 bits into extras.big_sizes.
void store_sizes(const std::vector<std::uint64_t>& sizes, std::uint32_t events,
                 const Trace::NewColumns& col, ChunkExtras& extras);
// `count` values of a reference column in byte planes (version 6 on). Returns what is wrong
// with them, or nullptr.
const char* read_reference_planes(VarintReader& in, std::size_t count,
                                  std::vector<std::uint64_t>& into);
// ChunkAddresses::skip: every address 0, the rest of the payload unread.
bool skip_addresses(VarintReader& in, std::uint32_t events, const Trace::NewColumns& col,
                    std::string& error);
// After the addresses: the payload must end there. Marks the scratch's group intact.
bool finish_chunk(VarintReader& in, DecodeScratch& scratch, std::string& error);

}  // namespace alloclab::detail
