// Writes the CSV interchange format with every field, so read_csv(write_csv(t)) == t.
#include <charconv>
#include <ostream>
#include <stdexcept>

#include "alloclab/format/interchange/csv.hpp"
#include "text_io.hpp"

namespace alloclab {
namespace {

constexpr std::string_view csv_header =
    "time_ns,thread,action,address,size,stream,device,kind,alignment,segment,pool,realloc_in_place,"
    "label\n";

void append_decimal(std::string& out, std::uint64_t value) {
  char text[24];
  const auto [end, ec] = std::to_chars(text, text + sizeof text, value);
  out.append(text, end);
}

void append_hex(std::string& out, std::uint64_t value) {
  char text[24];
  const auto [end, ec] = std::to_chars(text, text + sizeof text, value, 16);
  out += "0x";
  out.append(text, end);
}

bool needs_quotes(std::string_view label) {
  if (label.empty()) return false;
  if (label.front() == ' ' || label.front() == '\t' || label.back() == ' ' || label.back() == '\t')
    return true;
  return label.find_first_of(",\"\n") != std::string_view::npos;
}

void append_label(std::string& out, std::string_view label, std::size_t index) {
  for (char c : label) {
    const auto byte = static_cast<unsigned char>(c);
    // The reader treats control bytes as a damaged file and strips a CR before a line break.
    if ((byte < 0x20 && c != '\t' && c != '\n') || byte == 0x7F)
      throw std::runtime_error("event " + std::to_string(index) +
                               ": label holds a control byte that CSV cannot carry");
  }
  if (!needs_quotes(label)) {
    out += label;
    return;
  }
  out += '"';
  for (char c : label) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
}

void append_row(std::string& out, const Trace& trace, std::size_t i) {
  const Op op = trace.op(i);
  const bool request = op == Op::alloc || op == Op::free;
  append_decimal(out, trace.time_ns(i));
  out += ',';
  append_decimal(out, trace.thread(i));
  out += ',';
  out += to_string(op);
  out += ',';
  // Empty where docs/strategy-contract.md says so, unless the event really carries a value.
  if (request || trace.address(i) != 0) append_hex(out, trace.address(i));
  out += ',';
  if (op == Op::alloc || trace.size_of(i) != 0) append_decimal(out, trace.size_of(i));
  out += ',';
  append_decimal(out, trace.stream(i));
  out += ',';
  out += device_name(trace.device(i));
  out += ',';
  out += to_string(trace.kind(i));
  out += ',';
  append_decimal(out, trace.alignment(i));
  out += ',';
  out += trace.segment(i) ? '1' : '0';
  out += ',';
  append_decimal(out, trace.pool(i));
  out += ',';
  out += trace.realloc_in_place(i) ? '1' : '0';
  out += ',';
  append_label(out, trace.label(i), i);
  out += '\n';
}

}  // namespace

void write_csv(const Trace& trace, std::ostream& out) {
  std::string buffer(csv_header);
  for (std::size_t i = 0; i < trace.size(); ++i) {
    append_row(buffer, trace, i);
    if (buffer.size() >= (1u << 16)) {
      out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
      buffer.clear();
    }
  }
  out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
  out.flush();
  if (!out) throw std::runtime_error("write_csv: writing the CSV stream failed");
}

void write_csv(const Trace& trace, const std::string& path) {
  interchange_detail::OutputFile file(path);
  write_csv(trace, file.stream());
  file.close();
}

}  // namespace alloclab
