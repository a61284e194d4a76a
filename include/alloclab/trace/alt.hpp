#pragma once
// The native binary trace format (.alt): a header with JSON metadata, then independent chunks
// (delta/varint-encoded, zstd-compressed, checksummed), so a writer can append while a program
// runs and a damaged chunk costs only that chunk. docs/alt-format.md has the byte layout.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "alloclab/trace/trace.hpp"

namespace alloclab {

// 2: call stacks and a per-chunk time shift (docs/alt-format.md); version 1 files stay readable.
inline constexpr std::uint32_t alt_format_version = 2;

struct AltWriteOptions {
  int zstd_level = 6;
  std::size_t events_per_chunk = 65536;
};

// Writes the whole trace (metadata included). Throws std::runtime_error on I/O failure.
void write_alt(const Trace& trace, const std::string& path, const AltWriteOptions& options = {});

struct AltLoadStats {
  std::uint64_t file_bytes = 0;
  std::uint64_t chunks = 0;
  std::uint64_t damaged_chunks = 0;  // skipped: bad checksum, bad encoding, or truncated
  std::uint64_t lost_events = 0;     // events the damaged chunks said they held (when known)
  std::uint64_t events = 0;          // events in the intact chunks
};

// Reads every intact chunk; damage becomes warnings in Trace::warnings. Throws InputError
// ("file@offset, header: ...") when the header itself is unusable: empty file, wrong magic, a
// format version from the future, a truncated header.
Trace read_alt(const std::string& path, AltLoadStats* stats = nullptr);
// Same, from the file's bytes already in memory; `name` is the file name used in messages.
Trace parse_alt(std::vector<std::uint8_t> bytes, const std::string& name,
                AltLoadStats* stats = nullptr);

// A quick look for a summary line (`alloclab record`): every chunk's header and payload checksum
// are checked and its events counted (stats->events), but only the last intact chunk is
// decompressed and returned; damage found becomes warnings as in read_alt. A payload whose
// checksum holds but whose encoding is bad is only found by read_alt.
Trace read_alt_tail(const std::string& path, AltLoadStats* stats = nullptr);

// True if the file starts with the .alt magic (used to pick a reader without trusting names).
bool looks_like_alt(const std::string& path);

}  // namespace alloclab
