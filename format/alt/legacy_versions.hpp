#pragma once
// Reading .alt files of the format versions before groups of chunks (1 to 6). alloclab writes
// only the current version; these are read so that old recordings stay usable, and everything
// that differs between them and the current one lives in legacy_versions.cpp, so that the
// current version's decoder (codec.cpp) has no branch for an old one (version 7 differs from the
// current one only in the attribute bits it allows, which the shared attribute step checks).
// docs/alt-format.md describes every version.
#include <cstdint>
#include <string>

#include "codec.hpp"

namespace alloclab::detail::legacy {

// A chunk header's event count field: before version 7 there are no groups, so all of it is the
// count and every chunk is at position 0 of a group of its own.
void split_events_field(std::uint32_t field, std::uint32_t& events, std::uint32_t& group_position);

// decode_chunk_columns (codec.hpp) for a chunk of `version`, 1 <= version < alt_grouped_version.
// A chunk of these versions never continues a group.
bool decode_chunk_columns(const std::uint8_t* data, std::size_t size, std::uint32_t events,
                          std::uint32_t version, const Trace::NewColumns& col, ChunkExtras& extras,
                          DecodeScratch& scratch, std::string& error, ChunkAddresses addresses);

}  // namespace alloclab::detail::legacy
