#include <zlib.h>
#include <zstd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "alloclab/trace/alt.hpp"
#include "alt_codec.hpp"
#include "alt_layout.hpp"

namespace alloclab {
namespace detail {

std::uint32_t crc32_of(const std::uint8_t* data, std::size_t size) {
  return static_cast<std::uint32_t>(::crc32_z(0L, data, size));
}

}  // namespace detail

namespace {

using detail::put_u32;

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
    if (status != 0) throw std::runtime_error("cannot write " + path_ + ": " + std::strerror(errno));
  }

 private:
  std::string path_;
  std::FILE* file_;
};

void write_header(FileSink& sink, const nlohmann::json& metadata) {
  const std::string text = metadata.dump();
  std::vector<std::uint8_t> header(detail::alt_fixed_header_bytes + text.size() + 4);
  std::memcpy(header.data(), detail::alt_magic.data(), detail::alt_magic.size());
  put_u32(header.data() + 8, alt_format_version);
  put_u32(header.data() + 12, static_cast<std::uint32_t>(text.size()));
  std::memcpy(header.data() + 16, text.data(), text.size());
  put_u32(header.data() + 16 + text.size(),
          detail::crc32_of(header.data() + 8, 8 + text.size()));
  sink.write(header.data(), header.size());
}

}  // namespace

void write_alt(const Trace& trace, const std::string& path, const AltWriteOptions& options) {
  nlohmann::json metadata = trace.metadata;
  if (!metadata.is_object()) metadata = nlohmann::json::object();
  metadata["format"] = "alloclab-trace";
  if (!metadata.contains("tool_version")) metadata["tool_version"] = ALLOCLAB_VERSION;

  FileSink sink(path);
  write_header(sink, metadata);

  const std::size_t per_chunk = std::max<std::size_t>(1, options.events_per_chunk);
  std::vector<std::uint8_t> raw;
  std::vector<std::uint8_t> stored;
  std::uint8_t chunk_header[detail::alt_chunk_header_bytes];
  for (std::size_t begin = 0; begin < trace.size(); begin += per_chunk) {
    const std::size_t end = std::min(trace.size(), begin + per_chunk);
    detail::encode_chunk(trace, begin, end, raw);
    stored.resize(ZSTD_compressBound(raw.size()));
    const std::size_t stored_size =
        ZSTD_compress(stored.data(), stored.size(), raw.data(), raw.size(), options.zstd_level);
    if (ZSTD_isError(stored_size))
      throw std::runtime_error(std::string("zstd: ") + ZSTD_getErrorName(stored_size));
    put_u32(chunk_header, detail::alt_chunk_magic);
    put_u32(chunk_header + 4, static_cast<std::uint32_t>(end - begin));
    put_u32(chunk_header + 8, static_cast<std::uint32_t>(stored_size));
    put_u32(chunk_header + 12, static_cast<std::uint32_t>(raw.size()));
    put_u32(chunk_header + 16, detail::crc32_of(stored.data(), stored_size));
    put_u32(chunk_header + 20, detail::crc32_of(chunk_header, 20));
    sink.write(chunk_header, sizeof chunk_header);
    sink.write(stored.data(), stored_size);
  }
  sink.close();
}

}  // namespace alloclab
