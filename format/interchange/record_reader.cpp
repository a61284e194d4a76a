// RFC 4180 records with line numbers, strict about bytes that cannot be text.
#include <cstdio>

#include "alloclab/format/error.hpp"
#include "alloclab/format/units.hpp"
#include "text_io.hpp"

namespace alloclab::interchange_detail {
namespace {

bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && is_blank(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_blank(text.back())) text.remove_suffix(1);
  return text;
}

std::string byte_hex(unsigned char byte) {
  char text[8];
  std::snprintf(text, sizeof text, "0x%02X", byte);
  return text;
}

}  // namespace

RecordReader::RecordReader(std::istream& in, std::string name, bool comments)
    : in_(in),
      name_(std::move(name)),
      comments_(comments),
      line_buffer_(new char[max_record_bytes + 1]) {}

bool RecordReader::read_line(std::string& line) {
  const std::uint64_t start = offset_;
  // Bounded: std::getline would grow the line for as long as the input holds no line break.
  in_.getline(line_buffer_.get(), static_cast<std::streamsize>(max_record_bytes + 1));
  const auto got = static_cast<std::size_t>(in_.gcount());
  if (in_.fail() && !in_.eof())
    throw_at_line(name_, line_ + 1,
                  "a line longer than " + exact_bytes(max_record_bytes) + " (from byte " +
                      std::to_string(start) + "; not a text file?)");
  if (got == 0 && in_.eof()) return false;
  offset_ += got;
  // getline took the line break, when there was one, without storing it.
  line.assign(line_buffer_.get(), in_.eof() ? got : got - 1);
  ++line_;
  if (line_ == 1 && line.starts_with("\xEF\xBB\xBF")) line.erase(0, 3);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  for (std::size_t i = 0; i < line.size(); ++i) {
    const auto byte = static_cast<unsigned char>(line[i]);
    if ((byte < 0x20 && byte != '\t') || byte == 0x7F)
      throw_at_line(name_, line_,
                    "stray byte " + byte_hex(byte) + " at character " + std::to_string(i + 1) +
                        " (not text: a binary or damaged file?)");
  }
  return true;
}

bool RecordReader::next(Record& record) {
  std::string& line = text_;  // reused: its capacity outlives the record
  std::uint64_t record_start = 0;
  do {
    record_start = offset_;
    if (!read_line(line)) return false;
  } while (trim(line).empty() || (comments_ && line.front() == '#'));

  record.line = line_;
  std::size_t count = 0;  // fields filled; the strings of earlier records are reused
  std::size_t pos = 0;
  for (;;) {
    // One field starts at `pos`.
    std::size_t start = pos;
    while (start < line.size() && is_blank(line[start])) ++start;
    if (count == record.fields.size()) record.fields.emplace_back();
    std::string& field = record.fields[count];
    field.clear();
    if (start < line.size() && line[start] == '"') {
      std::size_t i = start + 1;
      for (;;) {
        if (i == line.size()) {
          // A quoted field may hold a line break: continue on the next physical line.
          std::string more;
          if (!read_line(more))
            throw_at_line(name_, record.line, "unterminated quoted field (missing closing '\"')");
          if (line.size() + 1 + more.size() > max_record_bytes)
            throw_at_line(name_, record.line,
                          "a quoted field runs on for more than " + exact_bytes(max_record_bytes) +
                              " (from byte " + std::to_string(record_start) +
                              "; a missing closing '\"'?)");
          field += '\n';
          line += '\n';
          line += more;
          ++i;
          continue;
        }
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        field += line[i++];
      }
      while (i < line.size() && is_blank(line[i])) ++i;
      if (i < line.size() && line[i] != ',')
        throw_at_line(
            name_, line_,
            "unexpected text after the closing quote of field " + std::to_string(count + 1));
      pos = i;
    } else {
      std::size_t end = line.find(',', start);
      if (end == std::string::npos) end = line.size();
      const std::string_view raw = trim(std::string_view(line).substr(start, end - start));
      if (raw.find('"') != std::string_view::npos)
        throw_at_line(name_, line_,
                      "stray '\"' in unquoted field " + std::to_string(count + 1) +
                          " (quote the whole field and double inner quotes)");
      field.assign(raw);
      pos = end;
    }
    ++count;
    if (pos >= line.size()) break;
    ++pos;  // past the comma
  }
  record.fields.resize(count);
  return true;
}

}  // namespace alloclab::interchange_detail
