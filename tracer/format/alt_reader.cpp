#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <fstream>
#include <memory>
#include <thread>

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
  AltLoader(std::string path, std::vector<std::uint8_t> bytes, bool tail_only = false)
      : path_(std::move(path)), tail_only_(tail_only), bytes_(std::move(bytes)) {}

  Trace load(AltLoadStats& stats) {
    stats.file_bytes = bytes_.size();
    const std::size_t first_chunk = parse_header();
    read_chunks(first_chunk, stats);
    return std::move(trace_);
  }

 private:
  [[noreturn]] void header_error(std::uint64_t offset, const std::string& what) const {
    throw_at_offset(path_, offset, -1, what);
  }

  void warn(std::uint64_t offset, std::uint64_t chunk, const std::string& what) {
    warnings_.emplace_back(offset, path_ + "@" + std::to_string(offset) + ", chunk " +
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
    version_ = version;
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
      header_error(detail::alt_fixed_header_bytes,
                   std::string("metadata is not JSON: ") + e.what());
    }
    return header_end;
  }

  // Next offset after `pos` where a valid chunk header starts, or the file size.
  std::size_t resynchronise(std::size_t pos) const {
    ChunkHeader h;
    for (std::size_t at = pos + 1; at + detail::alt_chunk_header_bytes <= bytes_.size(); ++at)
      if (bytes_[at] == 0x41 && parse_chunk_header(bytes_.data() + at, h)) return at;
    return bytes_.size();
  }

  // One chunk whose header is intact and whose payload is all there.
  struct ChunkJob {
    std::size_t offset = 0;
    std::uint64_t index = 0;
    ChunkHeader header;
    std::size_t base = 0;  // first event slot
    std::string problem;   // set when decoding fails
    detail::ChunkExtras extras;
  };

  void read_chunks(std::size_t pos, AltLoadStats& stats) {
    std::vector<ChunkJob> jobs = scan_chunks(pos, stats);
    if (tail_only_) jobs = checksum_all_but_last(std::move(jobs), stats);
    std::size_t total = trace_.size();
    for (ChunkJob& job : jobs) {
      job.base = total;
      total += job.header.events;
    }
    trace_.extend(total - trace_.size());
    decode_all(jobs);
    commit_all(jobs, stats);
    stats.events += trace_.size();
    std::stable_sort(warnings_.begin(), warnings_.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& [offset, text] : warnings_) trace_.warnings.push_back(std::move(text));
  }

  // read_alt_tail: counts the events of every chunk whose payload checksum holds and keeps only
  // the last such chunk to decode.
  std::vector<ChunkJob> checksum_all_but_last(std::vector<ChunkJob> jobs, AltLoadStats& stats) {
    std::vector<ChunkJob> last;
    for (std::size_t k = jobs.size(); k-- > 0;) {
      ChunkJob& job = jobs[k];
      const std::uint8_t* payload = bytes_.data() + job.offset + detail::alt_chunk_header_bytes;
      if (detail::crc32_of(payload, job.header.stored) != job.header.payload_crc) {
        warn(job.offset, job.index,
             "checksum mismatch; chunk skipped, " + std::to_string(job.header.events) +
                 " events lost");
        ++stats.damaged_chunks;
        stats.lost_events += job.header.events;
      } else if (last.empty()) {
        last.push_back(std::move(job));
      } else {
        stats.events += job.header.events;
      }
    }
    return last;
  }

  // Walks the chunk headers: what can be decoded becomes a job, damage becomes a warning.
  std::vector<ChunkJob> scan_chunks(std::size_t pos, AltLoadStats& stats) {
    std::vector<ChunkJob> jobs;
    std::uint64_t chunk = 0;
    while (pos < bytes_.size()) {
      const std::size_t remaining = bytes_.size() - pos;
      if (remaining < detail::alt_chunk_header_bytes) {
        warn(pos, chunk,
             "truncated chunk header (" + std::to_string(remaining) +
                 " bytes); the rest of the file is ignored");
        ++stats.damaged_chunks;
        break;
      }
      ChunkHeader h;
      if (!parse_chunk_header(bytes_.data() + pos, h)) {
        const std::size_t next = resynchronise(pos);
        warn(pos, chunk,
             "damaged chunk header; skipped " + std::to_string(next - pos) +
                 " bytes to the next intact chunk");
        ++stats.damaged_chunks;
        ++chunk;
        pos = next;
        continue;
      }
      ++stats.chunks;
      const std::size_t payload = pos + detail::alt_chunk_header_bytes;
      if (bytes_.size() - payload < h.stored) {
        warn(pos, chunk,
             "truncated chunk (needs " + std::to_string(h.stored) + " bytes, " +
                 std::to_string(bytes_.size() - payload) + " remain); " + std::to_string(h.events) +
                 " events lost");
        ++stats.damaged_chunks;
        stats.lost_events += h.events;
        break;
      }
      ChunkJob job;
      job.offset = pos;
      job.index = chunk;
      job.header = h;
      jobs.push_back(std::move(job));
      pos = payload + h.stored;
      ++chunk;
    }
    return jobs;
  }

  // Chunks are independent, so they decode in parallel into their own slots.
  void decode_all(std::vector<ChunkJob>& jobs) {
    std::atomic<std::size_t> next{0};
    auto worker = [&] {
      std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)> dctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
      std::vector<std::uint8_t> raw;
      detail::DecodeScratch scratch;
      for (std::size_t i; (i = next.fetch_add(1)) < jobs.size();)
        decode_one(jobs[i], dctx.get(), raw, scratch);
    };
    const std::size_t threads = std::min<std::size_t>(
        std::max(1u, std::thread::hardware_concurrency()), jobs.size() / 4 + 1);
    std::vector<std::thread> pool;
    for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
    worker();
    for (std::thread& t : pool) t.join();
  }

  void decode_one(ChunkJob& job, ZSTD_DCtx* dctx, std::vector<std::uint8_t>& raw,
                  detail::DecodeScratch& scratch) {
    const ChunkHeader& h = job.header;
    const std::uint8_t* payload = bytes_.data() + job.offset + detail::alt_chunk_header_bytes;
    if (detail::crc32_of(payload, h.stored) != h.payload_crc) {
      job.problem = "checksum mismatch";
      return;
    }
    raw.resize(h.raw);
    const std::size_t got = ZSTD_decompressDCtx(dctx, raw.data(), raw.size(), payload, h.stored);
    if (ZSTD_isError(got)) {
      job.problem = std::string("cannot decompress: ") + ZSTD_getErrorName(got);
      return;
    }
    if (got != h.raw) {
      job.problem = "decompressed size differs from the chunk header";
      return;
    }
    std::string error;
    if (!detail::decode_chunk_columns(raw.data(), raw.size(), h.events, version_,
                                      trace_.columns_at(job.base), job.extras, scratch, error))
      job.problem = "bad encoding: " + error;
  }

  // In file order: merge each good chunk, drop the slots of each bad one.
  void commit_all(std::vector<ChunkJob>& jobs, AltLoadStats& stats) {
    std::size_t removed = 0;
    std::string error;
    for (ChunkJob& job : jobs) {
      const std::size_t base = job.base - removed;
      if (job.problem.empty() &&
          !detail::commit_chunk(trace_, base, job.header.events, job.extras, error))
        job.problem = error;
      if (job.problem.empty()) continue;
      warn(job.offset, job.index,
           job.problem + "; chunk skipped, " + std::to_string(job.header.events) + " events lost");
      ++stats.damaged_chunks;
      stats.lost_events += job.header.events;
      trace_.erase(base, base + job.header.events);
      removed += job.header.events;
    }
  }

  std::string path_;
  bool tail_only_ = false;
  std::uint32_t version_ = 0;
  std::vector<std::uint8_t> bytes_;
  Trace trace_;
  std::vector<std::pair<std::size_t, std::string>> warnings_;  // (offset, text)
};

}  // namespace

Trace read_alt(const std::string& path, AltLoadStats* stats) {
  return parse_alt(read_whole_file(path), path, stats);
}

Trace parse_alt(std::vector<std::uint8_t> bytes, const std::string& name, AltLoadStats* stats) {
  AltLoadStats local;
  AltLoader loader(name, std::move(bytes));
  Trace trace = loader.load(stats ? *stats : local);
  return trace;
}

Trace read_alt_tail(const std::string& path, AltLoadStats* stats) {
  AltLoadStats local;
  AltLoader loader(path, read_whole_file(path), true);
  return loader.load(stats ? *stats : local);
}

bool looks_like_alt(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::uint8_t magic[8] = {};
  if (!in.read(reinterpret_cast<char*>(magic), sizeof magic)) return false;
  return std::memcmp(magic, detail::alt_magic.data(), sizeof magic) == 0;
}

}  // namespace alloclab
