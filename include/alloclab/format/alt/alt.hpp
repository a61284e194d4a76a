#pragma once
// The native binary trace format (.alt): a header with JSON metadata, then independent chunks
// (delta/varint-encoded, zstd-compressed, checksummed), so a writer can append while a program
// runs and a damaged chunk costs only that chunk. docs/alt-format.md has the byte layout.
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "alloclab/format/trace.hpp"

namespace alloclab {

// 2: call stacks and a per-chunk time shift; 3: pools; 4: sizes in byte planes, addresses
// through the freed-block model; 5: size planes of allocations only, addresses also as "freed
// this many frees ago" and "right after an earlier allocation"; 6: those references in byte
// planes; 7: groups of chunks that share their address state (docs/alt-format.md); 8: the
// realloc-in-place bit in the event attributes (laid out as version 7 otherwise); 9: the source
// file and line of each stack frame. Versions 1 to 8 stay readable.
inline constexpr std::uint32_t alt_format_version = 9;

struct AltWriteOptions {
  int zstd_level = 6;
  std::size_t events_per_chunk = 65536;
  // A chunk continues the group of the one before while the group holds fewer events than
  // this (0: every chunk stands alone). Larger groups are smaller on disk; damage to a chunk
  // also costs the rest of its group.
  std::size_t events_per_group = 524288;
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
// format version from the future (or an impossible one: damage), a truncated header; and
// ("file@offset, chunk N: ...; no event could be read from the file") when the file has chunks
// and none of them could be read. A directory is refused ("PATH: is a directory"). A pipe or
// other input without a size is read once, to its end (read_alt holds it in memory, as any
// file; stream_alt copies it to an unlinked temporary file in $TMPDIR first).
Trace read_alt(const std::string& path, AltLoadStats* stats = nullptr);
// Same, from the file's bytes already in memory; `name` is the file name used in messages.
Trace parse_alt(std::vector<std::uint8_t> bytes, const std::string& name,
                AltLoadStats* stats = nullptr);

// A quick look for a summary line (`alloclab record`): the chunk headers alone are read (each
// has its own checksum) and their events counted (stats->events); only the last chunk whose
// payload checksum holds is read, decompressed and returned, without its addresses (all 0: in
// version 7 they may depend on the chunks before it in its group). Damaged headers, truncation
// and a damaged last chunk become warnings as in read_alt; damage inside an earlier chunk's
// payload is only found by read_alt (its events are counted here).
Trace read_alt_tail(const std::string& path, AltLoadStats* stats = nullptr);

// The header's metadata alone (no chunk is read); an unusable header throws as in read_alt.
nlohmann::json read_alt_metadata(const std::string& path);

// What a streamed read gives besides the events it hands over: what read_alt's Trace would
// carry (its metadata, warnings, final origin table and memory_bytes()).
struct AltStreamResult {
  nlohmann::json metadata = nlohmann::json::object();
  std::vector<std::string> warnings;
  std::vector<Origin> origins;
  std::uint64_t memory_bytes = 0;
};

// read_alt for a trace too large to hold: the file is read and decoded a batch of chunks at a
// time, and each batch is handed to `consume` as a Trace of that batch's events only (origin,
// frame and stack tables are file-wide and grow from batch to batch, exactly as read_alt builds
// them). Before the first batch, `begin` is told how many events the chunks with an intact
// header hold (an upper bound: damaged payloads hold fewer). Same errors and warnings as
// read_alt; no more than a batch of events and one window of the file is held at a time.
// A batch is whole chunks of at most `batch_events` events together (one chunk if larger).
inline constexpr std::uint64_t alt_stream_batch_events = std::uint64_t{1} << 21;
AltStreamResult stream_alt(const std::string& path,
                           const std::function<void(std::uint64_t events)>& begin,
                           const std::function<void(const Trace& batch)>& consume,
                           AltLoadStats* stats = nullptr,
                           std::uint64_t batch_events = alt_stream_batch_events);

// True if the file starts with the .alt magic (used to pick a reader without trusting names).
// False, without reading, for anything but a regular file: a pipe's first bytes, once read,
// would be missing for the reader that comes next.
bool looks_like_alt(const std::string& path);

}  // namespace alloclab
