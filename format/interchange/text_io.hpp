#pragma once
// Private to alloclab_format: the plumbing the text readers share (file or gzip streams,
// an RFC 4180 record reader that knows its line numbers, strict number parsing).
#include <cstdint>
#include <istream>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace alloclab::interchange_detail {

// True when the path names a gzip file (".gz"); such files are read and written through zlib.
bool is_gzip_path(const std::string& path);

// An input stream over a plain or gzip file. Throws InputError when the file cannot be opened;
// a damaged gzip stream throws InputError from the read that meets the damage.
class InputFile {
 public:
  explicit InputFile(const std::string& path);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  std::istream& stream() { return *stream_; }

 private:
  std::unique_ptr<std::streambuf> buffer_;
  std::unique_ptr<std::istream> stream_;
};

// An output stream to a plain or gzip file. close() flushes and throws std::runtime_error on
// any write failure, so a full disk is never a silently short file.
class OutputFile {
 public:
  explicit OutputFile(const std::string& path);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  std::ostream& stream() { return *stream_; }
  void close();

 private:
  std::string path_;
  std::unique_ptr<std::streambuf> buffer_;
  std::unique_ptr<std::ostream> stream_;
};

// Bounds on what one record of a text format (a CSV or RMM line, with the lines a quoted field
// spans) and one JSON document may take. Real files stay far below them; an endless input
// (/dev/zero, a pipe that never ends a line) meets them and is refused, naming the byte offset,
// instead of growing until memory runs out. docs/formats.md states them.
inline constexpr std::size_t max_record_bytes = std::size_t{16} << 20;
inline constexpr std::uint64_t max_json_bytes = std::uint64_t{4} << 30;

// The whole content of a plain or gzip file holding one JSON document. Refuses, naming the byte
// offset, a control byte that JSON text never holds (a binary file) and more than `max_bytes`.
std::string read_json_text(const std::string& path, std::uint64_t max_bytes = max_json_bytes);
// Same, from a stream already open (`path` names it in messages).
std::string read_json_text(std::istream& in, const std::string& path,
                           std::uint64_t max_bytes = max_json_bytes);

// The size of a plain regular file, not compressed; std::nullopt for a pipe, a device or a gzip
// file (whose content InputFile decompresses, whatever its name).
std::optional<std::uint64_t> plain_file_size(const std::string& path);

struct Record {
  std::uint64_t line = 0;  // physical line where the record starts (1-based)
  std::vector<std::string> fields;
};

// Splits CSV text into records. Lines starting with '#' are comments when enabled; blank lines
// are skipped; CRLF and a UTF-8 byte-order mark are accepted. Unquoted fields lose surrounding
// spaces and tabs; quoted fields keep everything, "" stands for one quote and a quoted field may
// span lines. Control bytes (other than tab) are rejected: they mean a binary or damaged file.
class RecordReader {
 public:
  RecordReader(std::istream& in, std::string name, bool comments);
  // False at the end of the input.
  bool next(Record& record);
  // Lines consumed so far (for "empty file" messages).
  std::uint64_t lines() const { return line_; }
  const std::string& name() const { return name_; }

 private:
  bool read_line(std::string& line);

  std::istream& in_;
  std::string name_;
  bool comments_;
  std::uint64_t line_ = 0;
  std::uint64_t offset_ = 0;  // bytes consumed so far (of the text, after gzip)
  std::string text_;
  std::unique_ptr<char[]> line_buffer_;  // max_record_bytes + 1; pages touched only as used
};

// Strict unsigned parsing: the whole text must be the number. `column` names the column in
// messages. Decimal only:
std::uint64_t parse_decimal(std::string_view text, std::string_view column, const std::string& file,
                            std::uint64_t line);
// "0x…" hex or decimal:
std::uint64_t parse_hex_or_decimal(std::string_view text, std::string_view column,
                                   const std::string& file, std::uint64_t line);

// Lower-cased copy (header names match case-insensitively).
std::string lowercase(std::string_view text);

// Joins names as "'a', 'b'" for messages.
std::string quoted_list(const std::vector<std::string>& names);

}  // namespace alloclab::interchange_detail
