#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "alloclab/trace/alt.hpp"
#include "alt_chunk_writer.hpp"
#include "alt_codec.hpp"
#include "alt_layout.hpp"

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
  const std::string text = metadata.dump();
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

void build_alt_chunk(const Trace& trace, std::size_t begin, std::size_t end, int zstd_level,
                     ChunkScratch& scratch, std::vector<std::uint8_t>& out) {
  if (end < begin || end - begin > alt_max_chunk_events)
    throw std::invalid_argument("an .alt chunk holds at most " +
                                std::to_string(alt_max_chunk_events) + " events");
  encode_chunk(trace, begin, end, scratch.written, scratch.raw, scratch.live_ordinal);
  out.resize(alt_chunk_header_bytes + ZSTD_compressBound(scratch.raw.size()));
  std::uint8_t* payload = out.data() + alt_chunk_header_bytes;
  const std::size_t stored_size =
      ZSTD_compressCCtx(scratch.zstd, payload, out.size() - alt_chunk_header_bytes,
                        scratch.raw.data(), scratch.raw.size(), zstd_level);
  if (ZSTD_isError(stored_size))
    throw std::runtime_error(std::string("zstd: ") + ZSTD_getErrorName(stored_size));
  out.resize(alt_chunk_header_bytes + stored_size);
  std::uint8_t* header = out.data();
  put_u32(header, alt_chunk_magic);
  put_u32(header + 4, static_cast<std::uint32_t>(end - begin));
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
    detail::build_alt_chunk(trace, begin, end, options.zstd_level, scratch, chunk);
    sink.write(chunk.data(), chunk.size());
  }
  sink.close();
}

}  // namespace alloclab
