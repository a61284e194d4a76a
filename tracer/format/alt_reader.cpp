#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <memory>

#include "alloclab/trace/alt.hpp"
#include "alloclab/trace/error.hpp"
#include "alt_codec.hpp"
#include "alt_layout.hpp"

namespace alloclab {
namespace {

using detail::get_u32;

std::vector<std::uint8_t> read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw InputError(path + ": cannot open for reading");
  const std::streamsize size = in.tellg();
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(std::max<std::streamsize>(0, size)));
  in.seekg(0);
  if (size > 0 && !in.read(reinterpret_cast<char*>(bytes.data()), size))
    throw InputError(path + ": read error");
  return bytes;
}

struct ChunkHeader {
  std::uint32_t events = 0;
  std::uint32_t stored = 0;
  std::uint32_t raw = 0;
  std::uint32_t payload_crc = 0;
};

// A chunk header is trusted only when its own checksum matches and its numbers are sane.
bool parse_chunk_header(const std::uint8_t* p, ChunkHeader& h) {
  if (get_u32(p) != detail::alt_chunk_magic) return false;
  if (get_u32(p + 20) != detail::crc32_of(p, 20)) return false;
  h.events = get_u32(p + 4);
  h.stored = get_u32(p + 8);
  h.raw = get_u32(p + 12);
  h.payload_crc = get_u32(p + 16);
  return h.events <= detail::alt_max_chunk_events && h.raw <= detail::alt_max_chunk_raw_bytes;
}

class AltLoader {
 public:
  AltLoader(std::string path, std::vector<std::uint8_t> bytes)
      : path_(std::move(path)), bytes_(std::move(bytes)) {}

  Trace load(AltLoadStats& stats) {
    stats.file_bytes = bytes_.size();
    const std::size_t first_chunk = parse_header();
    trace_.reserve(count_events_ahead(first_chunk));
    read_chunks(first_chunk, stats);
    return std::move(trace_);
  }

 private:
  [[noreturn]] void header_error(std::uint64_t offset, const std::string& what) const {
    throw_at_offset(path_, offset, -1, what);
  }

  void warn(std::uint64_t offset, std::uint64_t chunk, const std::string& what) {
    trace_.warnings.push_back(path_ + "@" + std::to_string(offset) + ", chunk " +
                              std::to_string(chunk) + ": " + what);
  }

  std::size_t parse_header() {
    const std::size_t size = bytes_.size();
    if (size == 0) header_error(0, "empty file, not an alloclab trace");
    const std::size_t magic_bytes = std::min(size, detail::alt_magic.size());
    if (std::memcmp(bytes_.data(), detail::alt_magic.data(), magic_bytes) != 0)
      header_error(0, "not an alloclab trace (bad magic)");
    if (size < detail::alt_fixed_header_bytes)
      header_error(size, "truncated header (" + std::to_string(size) + " bytes)");
    const std::uint32_t version = get_u32(bytes_.data() + 8);
    if (version == 0) header_error(8, "invalid format version 0");
    if (version > alt_format_version)
      header_error(8, "format version " + std::to_string(version) +
                          " is newer than this alloclab reads (" +
                          std::to_string(alt_format_version) + "); upgrade alloclab");
    const std::uint32_t metadata_bytes = get_u32(bytes_.data() + 12);
    if (metadata_bytes > detail::alt_max_metadata_bytes)
      header_error(12, "metadata length " + std::to_string(metadata_bytes) + " is implausible");
    const std::size_t header_end = detail::alt_fixed_header_bytes + metadata_bytes + 4;
    if (size < header_end)
      header_error(size, "truncated header (metadata needs " + std::to_string(header_end) +
                             " bytes, file has " + std::to_string(size) + ")");
    const std::uint8_t* crc_at = bytes_.data() + header_end - 4;
    if (get_u32(crc_at) != detail::crc32_of(bytes_.data() + 8, 8 + metadata_bytes))
      header_error(header_end - 4, "header checksum mismatch");
    try {
      trace_.metadata = nlohmann::json::parse(bytes_.begin() + detail::alt_fixed_header_bytes,
                                              bytes_.begin() + header_end - 4);
    } catch (const nlohmann::json::exception& e) {
      header_error(detail::alt_fixed_header_bytes, std::string("metadata is not JSON: ") + e.what());
    }
    return header_end;
  }

  std::uint64_t count_events_ahead(std::size_t pos) const {
    std::uint64_t events = 0;
    ChunkHeader h;
    while (pos + detail::alt_chunk_header_bytes <= bytes_.size() &&
           parse_chunk_header(bytes_.data() + pos, h)) {
      events += h.events;
      pos += detail::alt_chunk_header_bytes + h.stored;
    }
    return events;
  }

  // Next offset after `pos` where a valid chunk header starts, or the file size.
  std::size_t resynchronise(std::size_t pos) const {
    ChunkHeader h;
    for (std::size_t at = pos + 1; at + detail::alt_chunk_header_bytes <= bytes_.size(); ++at)
      if (bytes_[at] == 0x41 && parse_chunk_header(bytes_.data() + at, h)) return at;
    return bytes_.size();
  }

  void read_chunks(std::size_t pos, AltLoadStats& stats) {
    std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)> dctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
    std::vector<std::uint8_t> raw;
    std::string error;
    std::uint64_t chunk = 0;
    while (pos < bytes_.size()) {
      const std::size_t remaining = bytes_.size() - pos;
      if (remaining < detail::alt_chunk_header_bytes) {
        warn(pos, chunk, "truncated chunk header (" + std::to_string(remaining) +
                             " bytes); the rest of the file is ignored");
        ++stats.damaged_chunks;
        return;
      }
      ChunkHeader h;
      if (!parse_chunk_header(bytes_.data() + pos, h)) {
        const std::size_t next = resynchronise(pos);
        warn(pos, chunk, "damaged chunk header; skipped " + std::to_string(next - pos) +
                             " bytes to the next intact chunk");
        ++stats.damaged_chunks;
        ++chunk;
        pos = next;
        continue;
      }
      ++stats.chunks;
      const std::size_t payload = pos + detail::alt_chunk_header_bytes;
      if (bytes_.size() - payload < h.stored) {
        warn(pos, chunk, "truncated chunk (needs " + std::to_string(h.stored) + " bytes, " +
                             std::to_string(bytes_.size() - payload) + " remain); " +
                             std::to_string(h.events) + " events lost");
        ++stats.damaged_chunks;
        stats.lost_events += h.events;
        return;
      }
      const std::string problem = decode_one(bytes_.data() + payload, h, dctx.get(), raw, error);
      if (!problem.empty()) {
        warn(pos, chunk, problem + "; chunk skipped, " + std::to_string(h.events) + " events lost");
        ++stats.damaged_chunks;
        stats.lost_events += h.events;
      }
      pos = payload + h.stored;
      ++chunk;
    }
  }

  std::string decode_one(const std::uint8_t* payload, const ChunkHeader& h, ZSTD_DCtx* dctx,
                         std::vector<std::uint8_t>& raw, std::string& error) {
    if (detail::crc32_of(payload, h.stored) != h.payload_crc) return "checksum mismatch";
    raw.resize(h.raw);
    const std::size_t got = ZSTD_decompressDCtx(dctx, raw.data(), raw.size(), payload, h.stored);
    if (ZSTD_isError(got)) return std::string("cannot decompress: ") + ZSTD_getErrorName(got);
    if (got != h.raw) return "decompressed size differs from the chunk header";
    if (!detail::decode_chunk(raw.data(), raw.size(), h.events, trace_, scratch_, error))
      return "bad encoding: " + error;
    return {};
  }

  std::string path_;
  std::vector<std::uint8_t> bytes_;
  Trace trace_;
  detail::DecodeScratch scratch_;
};

}  // namespace

Trace read_alt(const std::string& path, AltLoadStats* stats) {
  AltLoadStats local;
  AltLoader loader(path, read_whole_file(path));
  Trace trace = loader.load(stats ? *stats : local);
  return trace;
}

bool looks_like_alt(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::uint8_t magic[8] = {};
  if (!in.read(reinterpret_cast<char*>(magic), sizeof magic)) return false;
  return std::memcmp(magic, detail::alt_magic.data(), sizeof magic) == 0;
}

}  // namespace alloclab
