// Files for the text formats. Every read goes through zlib: gzread passes plain files through
// unchanged, so one code path serves "x.csv" and "x.csv.gz" and reports read errors the same way.
#include <zlib.h>

#include <sys/stat.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <utility>

#include "alloclab/format/error.hpp"
#include "alloclab/format/units.hpp"
#include "text_io.hpp"

namespace alloclab::interchange_detail {
namespace {

std::string gz_message(gzFile file) {
  int errnum = Z_OK;
  const char* message = gzerror(file, &errnum);
  if (errnum == Z_ERRNO) return std::strerror(errno);
  return message != nullptr && *message != '\0' ? message : "unknown zlib error";
}

class GzReadBuffer : public std::streambuf {
 public:
  GzReadBuffer(gzFile file, std::string path) : file_(file), path_(std::move(path)) {}
  ~GzReadBuffer() override { gzclose(file_); }
  GzReadBuffer(const GzReadBuffer&) = delete;
  GzReadBuffer& operator=(const GzReadBuffer&) = delete;

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    const int n = gzread(file_, buffer_.data(), static_cast<unsigned>(buffer_.size()));
    // gzread reports a truncated gzip stream as a plain end of file; gzerror still knows.
    int errnum = Z_OK;
    gzerror(file_, &errnum);
    if (n < 0 || (n == 0 && errnum != Z_OK))
      throw InputError(path_ + ": read failed: " + gz_message(file_));
    if (n == 0) return traits_type::eof();
    setg(buffer_.data(), buffer_.data(), buffer_.data() + n);
    return traits_type::to_int_type(*gptr());
  }

 private:
  gzFile file_;
  std::string path_;
  std::array<char, 1 << 16> buffer_{};
};

class GzWriteBuffer : public std::streambuf {
 public:
  GzWriteBuffer(gzFile file, std::string path) : file_(file), path_(std::move(path)) {
    setp(buffer_.data(), buffer_.data() + buffer_.size());
  }
  ~GzWriteBuffer() override {
    if (file_ != nullptr) gzclose(file_);
  }
  GzWriteBuffer(const GzWriteBuffer&) = delete;
  GzWriteBuffer& operator=(const GzWriteBuffer&) = delete;

  void close() {
    flush_buffer();
    gzFile file = file_;
    file_ = nullptr;
    if (gzclose(file) != Z_OK) throw std::runtime_error(path_ + ": write failed on close");
  }

 protected:
  int_type overflow(int_type ch) override {
    flush_buffer();
    if (!traits_type::eq_int_type(ch, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(ch);
      pbump(1);
    }
    return traits_type::not_eof(ch);
  }
  int sync() override {
    flush_buffer();
    return 0;
  }

 private:
  void flush_buffer() {
    const auto n = static_cast<unsigned>(pptr() - pbase());
    if (n > 0 && gzwrite(file_, pbase(), n) != static_cast<int>(n))
      throw std::runtime_error(path_ + ": write failed: " + gz_message(file_));
    setp(buffer_.data(), buffer_.data() + buffer_.size());
  }

  gzFile file_;
  std::string path_;
  std::array<char, 1 << 16> buffer_{};
};

}  // namespace

bool is_gzip_path(const std::string& path) {
  return path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
}

InputFile::InputFile(const std::string& path) {
  refuse_directory(path);
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) throw InputError(path + ": cannot open: " + std::strerror(errno));
  buffer_ = std::make_unique<GzReadBuffer>(file, path);
  stream_ = std::make_unique<std::istream>(buffer_.get());
  // Rethrows the buffer's InputError instead of quietly ending the input.
  stream_->exceptions(std::ios::badbit);
}

InputFile::~InputFile() = default;

std::optional<std::uint64_t> plain_file_size(const std::string& path) {
  struct stat st = {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  unsigned char magic[2] = {};
  if (in.read(reinterpret_cast<char*>(magic), 2) && magic[0] == 0x1F && magic[1] == 0x8B)
    return std::nullopt;  // gzip
  return static_cast<std::uint64_t>(st.st_size);
}

OutputFile::OutputFile(const std::string& path) : path_(path) {
  // "T" writes without compression: the same buffer serves plain files.
  gzFile file = gzopen(path.c_str(), is_gzip_path(path) ? "wb6" : "wbT");
  if (file == nullptr) throw std::runtime_error(path + ": cannot create: " + std::strerror(errno));
  buffer_ = std::make_unique<GzWriteBuffer>(file, path);
  stream_ = std::make_unique<std::ostream>(buffer_.get());
  stream_->exceptions(std::ios::badbit | std::ios::failbit);
}

OutputFile::~OutputFile() = default;

void OutputFile::close() {
  stream_->flush();
  static_cast<GzWriteBuffer*>(buffer_.get())->close();
}

std::string read_json_text(const std::string& path, std::uint64_t max_bytes) {
  InputFile file(path);
  return read_json_text(file.stream(), path, max_bytes);
}

std::string read_json_text(std::istream& in, const std::string& path, std::uint64_t max_bytes) {
  std::string content;
  std::array<char, 1 << 16> chunk{};
  while (in.read(chunk.data(), chunk.size()) || in.gcount() > 0) {
    const auto n = static_cast<std::size_t>(in.gcount());
    for (std::size_t i = 0; i < n; ++i) {
      // Outside strings JSON allows tab, line feed and carriage return; inside, none raw.
      const auto byte = static_cast<unsigned char>(chunk[i]);
      if (byte < 0x20 && byte != '\t' && byte != '\n' && byte != '\r') {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02X", byte);
        throw InputError(path + ": byte " + std::to_string(content.size() + i) + " is " + hex +
                         ", which JSON text never holds (a binary file?)");
      }
    }
    if (content.size() + n > max_bytes)
      throw InputError(path + ": more than " + exact_bytes(max_bytes) + " of JSON (at byte " +
                       std::to_string(max_bytes) +
                       "), more than any memory snapshot holds; not one document?");
    content.append(chunk.data(), n);
  }
  return content;
}

}  // namespace alloclab::interchange_detail
