#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "alloclab/format/alt/alt.hpp"
#include "chunk_writer.hpp"
#include "codec.hpp"
#include "layout.hpp"

namespace alloclab {
namespace detail {

std::uint32_t crc32_of(const std::uint8_t* data, std::size_t size) {
  return static_cast<std::uint32_t>(::crc32_z(0L, data, size));
}

}  // namespace detail

namespace {

class FileSink {
 public:
  explicit FileSink(const std::string& path) : path_(path), file_(std::fopen(path.c_str(), "wb")) {
    if (!file_) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
  }
  ~FileSink() {
    if (file_) std::fclose(file_);
  }
  FileSink(const FileSink&) = delete;
  FileSink& operator=(const FileSink&) = delete;

  void write(const void* data, std::size_t size) {
    if (std::fwrite(data, 1, size, file_) != size)
      throw std::runtime_error("cannot write " + path_ + ": " + std::strerror(errno));
  }
  void close() {
    const int status = std::fclose(file_);
    file_ = nullptr;
    if (status != 0)
      throw std::runtime_error("cannot write " + path_ + ": " + std::strerror(errno));
  }

 private:
  std::string path_;
  std::FILE* file_;
};

}  // namespace

namespace detail {

std::vector<std::uint8_t> build_alt_header(const nlohmann::json& metadata_in) {
  nlohmann::json metadata = metadata_in;
  if (!metadata.is_object()) metadata = nlohmann::json::object();
  metadata["format"] = "alloclab-trace";
  if (!metadata.contains("tool_version")) metadata["tool_version"] = ALLOCLAB_VERSION;
  // A command line or host name need not be UTF-8 (a file name in Latin-1): such bytes become
  // U+FFFD instead of an exception that would end the traced program.
  const std::string text = metadata.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::vector<std::uint8_t> header(alt_fixed_header_bytes + text.size() + 4);
  std::memcpy(header.data(), alt_magic.data(), alt_magic.size());
  put_u32(header.data() + 8, alt_format_version);
  put_u32(header.data() + 12, static_cast<std::uint32_t>(text.size()));
  std::memcpy(header.data() + 16, text.data(), text.size());
  put_u32(header.data() + 16 + text.size(), crc32_of(header.data() + 8, 8 + text.size()));
  return header;
}

ChunkScratch::ChunkScratch() : zstd(ZSTD_createCCtx()) {
  if (!zstd) throw std::bad_alloc();
}

ChunkScratch::~ChunkScratch() {
  ZSTD_freeCCtx(zstd);
}

namespace {

// Columns smaller than this share a block with the next: a block costs a header and tables.
constexpr std::size_t min_block_bytes = 4096;

// One zstd frame of scratch.raw, after the chunk header in `out`, ending a block where a column
// ends (ZSTD_e_flush): zstd builds one set of literal and sequence tables per block, and sizes,
// references and deltas each have their own statistics (about 4% smaller on malloc-heavy
// programs). A reader needs nothing special: it is still one frame.
std::size_t compress_sections(ChunkScratch& scratch, int zstd_level,
                              std::vector<std::uint8_t>& out) {
  const std::vector<std::uint8_t>& raw = scratch.raw;
  const std::vector<std::size_t>& ends = scratch.encode.section_ends;
  const std::size_t capacity = ZSTD_compressBound(raw.size()) + 16 * (ends.size() + 1);
  out.resize(alt_chunk_header_bytes + capacity);
  ZSTD_CCtx* zstd = scratch.zstd;
  auto check = [](std::size_t result) {
    if (ZSTD_isError(result))
      throw std::runtime_error(std::string("zstd: ") + ZSTD_getErrorName(result));
    return result;
  };
  check(ZSTD_CCtx_reset(zstd, ZSTD_reset_session_only));
  check(ZSTD_CCtx_setParameter(zstd, ZSTD_c_compressionLevel, zstd_level));
  check(ZSTD_CCtx_setPledgedSrcSize(zstd, raw.size()));
  ZSTD_outBuffer dst{out.data() + alt_chunk_header_bytes, capacity, 0};
  std::size_t start = 0;
  auto feed = [&](std::size_t end, ZSTD_EndDirective mode) {
    ZSTD_inBuffer src{raw.data() + start, end - start, 0};
    while (check(ZSTD_compressStream2(zstd, &dst, &src, mode)) != 0)
      if (dst.pos == dst.size) throw std::runtime_error("zstd: output larger than its bound");
    start = end;
  };
  for (const std::size_t end : ends)
    if (end < raw.size() && end - start >= min_block_bytes) feed(end, ZSTD_e_flush);
  feed(raw.size(), ZSTD_e_end);
  return dst.pos;
}

}  // namespace

void build_alt_chunk(const Trace& trace, std::size_t begin, std::size_t end, int zstd_level,
                     std::size_t events_per_group, ChunkScratch& scratch,
                     std::vector<std::uint8_t>& out) {
  if (end < begin || end - begin > alt_max_chunk_events)
    throw std::invalid_argument("an .alt chunk holds at most " +
                                std::to_string(alt_max_chunk_events) + " events");
  const bool continues =
      scratch.group.next_continues(end - begin, events_per_group, scratch.encode);
  // Until the chunk is built the encoder's group state is in between: a throw ends the group.
  GroupCursor group = std::exchange(scratch.group, GroupCursor{});
  const std::uint32_t position = group.chunks;
  encode_chunk(trace, begin, end, scratch.written, scratch.raw, scratch.encode, continues);
  const std::size_t stored_size = compress_sections(scratch, zstd_level, out);
  group.built(end - begin);
  scratch.group = group;
  out.resize(alt_chunk_header_bytes + stored_size);
  std::uint8_t* header = out.data();
  put_u32(header, alt_chunk_magic);
  put_u32(header + 4,
          static_cast<std::uint32_t>(end - begin) | position << alt_group_position_shift);
  put_u32(header + 8, static_cast<std::uint32_t>(stored_size));
  put_u32(header + 12, static_cast<std::uint32_t>(scratch.raw.size()));
  put_u32(header + 16, crc32_of(out.data() + alt_chunk_header_bytes, stored_size));
  put_u32(header + 20, crc32_of(header, 20));
}

}  // namespace detail

void write_alt(const Trace& trace, const std::string& path, const AltWriteOptions& options) {
  FileSink sink(path);
  const std::vector<std::uint8_t> header = detail::build_alt_header(trace.metadata);
  sink.write(header.data(), header.size());

  const std::size_t per_chunk = std::max<std::size_t>(1, options.events_per_chunk);
  detail::ChunkScratch scratch;
  std::vector<std::uint8_t> chunk;
  for (std::size_t begin = 0; begin < trace.size(); begin += per_chunk) {
    const std::size_t end = std::min(trace.size(), begin + per_chunk);
    detail::build_alt_chunk(trace, begin, end, options.zstd_level, options.events_per_group,
                            scratch, chunk);
    sink.write(chunk.data(), chunk.size());
  }
  sink.close();
}

}  // namespace alloclab
