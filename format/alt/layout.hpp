#pragma once
// Byte layout of .alt files (all integers little-endian). docs/alt-format.md explains it.
//
//   file   := header chunk*
//   header := magic[8] version:u32 metadata_len:u32 metadata[metadata_len] (JSON)
//             header_crc:u32              -- crc32 of version..metadata
//   chunk  := chunk_magic:u32 events:u32 stored_len:u32 raw_len:u32 payload_crc:u32
//             (version 7 on: events | group position << 25)
//             chunk_header_crc:u32        -- crc32 of the 20 bytes before it
//             payload[stored_len]         -- zstd frame of the encoded events (alt_codec.hpp)
//
// A chunk header carries its own checksum so a reader can tell a damaged length from a damaged
// payload and resynchronise on the next chunk magic instead of giving up on the file.
#include <array>
#include <cstdint>

namespace alloclab::detail {

inline constexpr std::array<std::uint8_t, 8> alt_magic = {0x89, 'A',  'L',  'T',
                                                          '\r', '\n', 0x1A, '\n'};
inline constexpr std::uint32_t alt_chunk_magic = 0x43544C41;  // "ALTC"
inline constexpr std::size_t alt_fixed_header_bytes = 16;
inline constexpr std::size_t alt_chunk_header_bytes = 24;
// Bounds that keep a corrupt length field from asking for absurd buffers.
inline constexpr std::uint32_t alt_max_metadata_bytes = 64u << 20;
inline constexpr std::uint32_t alt_max_chunk_events = 1u << 24;
inline constexpr std::uint32_t alt_max_chunk_raw_bytes = 1u << 30;
// The first version with groups of chunks (7): the chunk layout of every version since.
inline constexpr std::uint32_t alt_grouped_version = 7;
// The first version whose event attributes may carry the realloc-in-place bit (8).
inline constexpr std::uint32_t alt_realloc_bit_version = 8;
// The first version whose stack frames carry a source file and line (9).
inline constexpr std::uint32_t alt_frame_lines_version = 9;
// Version 7 on: the top bits of a chunk header's event count say how many chunks of its group
// come before it (alt_codec.hpp), so a reader plans its work from the headers alone.
inline constexpr unsigned alt_group_position_shift = 25;
inline constexpr std::uint32_t alt_max_group_position = 127;
// A group's address state grows with its events: no more than a chunk's.
inline constexpr std::uint32_t alt_max_group_events = alt_max_chunk_events;
static_assert(alt_max_chunk_events < (1u << alt_group_position_shift));

inline void put_u32(std::uint8_t* p, std::uint32_t v) {
  p[0] = static_cast<std::uint8_t>(v);
  p[1] = static_cast<std::uint8_t>(v >> 8);
  p[2] = static_cast<std::uint8_t>(v >> 16);
  p[3] = static_cast<std::uint8_t>(v >> 24);
}
inline std::uint32_t get_u32(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
         (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}

std::uint32_t crc32_of(const std::uint8_t* data, std::size_t size);

}  // namespace alloclab::detail
