// Reads RMM logging_resource_adaptor logs ("%t,%H:%M:%S.%f,<action>,<pointer>,<bytes>,<stream>").
#include "alloclab/format/interchange/rmm_log.hpp"

#include <array>
#include <charconv>
#include <istream>
#include <optional>

#include "alloclab/format/error.hpp"
#include "text_io.hpp"

namespace alloclab {
namespace {

using interchange_detail::Record;

constexpr std::uint64_t ns_per_second = 1'000'000'000;
constexpr std::uint64_t ns_per_hour = 3600 * ns_per_second;
constexpr std::uint64_t ns_per_day = 24 * ns_per_hour;

namespace col {
enum : std::size_t { thread, time, action, pointer, size, stream, count };
}  // namespace col
constexpr std::array<std::string_view, col::count> column_names = {"thread",  "time", "action",
                                                                   "pointer", "size", "stream"};
constexpr std::size_t absent = static_cast<std::size_t>(-1);

struct Layout {
  std::array<std::size_t, col::count> index{};
  std::vector<std::string> header;  // as written, to skip a header repeated by a second logger
};

Layout read_header(const Record& header, const std::string& name, Trace& trace) {
  Layout layout;
  layout.index.fill(absent);
  layout.header = header.fields;
  std::vector<std::string> unknown;
  for (std::size_t i = 0; i < header.fields.size(); ++i) {
    const std::string column = interchange_detail::lowercase(header.fields[i]);
    std::size_t known = absent;
    for (std::size_t c = 0; c < col::count; ++c)
      if (column_names[c] == column) known = c;
    if (known == absent) {
      // An unnamed first column is the index pandas adds when it saves a log again.
      if (!column.empty()) unknown.push_back(header.fields[i]);
      continue;
    }
    if (layout.index[known] != absent)
      throw_at_line(name, header.line, "column '" + header.fields[i] + "' appears twice");
    layout.index[known] = i;
  }
  std::vector<std::string> missing;
  for (std::size_t c : {col::action, col::pointer, col::size})
    if (layout.index[c] == absent) missing.emplace_back(column_names[c]);
  if (!missing.empty())
    throw_at_line(
        name, header.line,
        "missing required column(s) " + interchange_detail::quoted_list(missing) +
            " (an RMM log starts with the header Thread,Time,Action,Pointer,Size,Stream)");
  if (!unknown.empty())
    trace.warnings.push_back(name + ":" + std::to_string(header.line) +
                             ": ignoring unknown column(s) " +
                             interchange_detail::quoted_list(unknown));
  return layout;
}

// Whole digits of text (no sign, no blanks), or nullopt.
std::optional<std::uint64_t> digits(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// Fraction digits ".123456" after a second → nanoseconds (extra digits past 9 are refused).
std::optional<std::uint64_t> fraction_ns(std::string_view text) {
  if (text.empty()) return 0;
  if (text.size() > 9 || !digits(text)) return std::nullopt;
  std::uint64_t ns = *digits(text);
  for (std::size_t i = text.size(); i < 9; ++i) ns *= 10;
  return ns;
}

struct ParsedTime {
  std::uint64_t ns = 0;
  bool time_of_day = true;
};

// "HH:MM:SS.ffffff" as spdlog writes it ("HH:MM:SS:ffffff" in RMM's own replay docs), or
// seconds since the epoch "1634567890.123456" as some RMM documentation shows.
std::optional<ParsedTime> parse_time(std::string_view text) {
  if (text.find(':') == std::string_view::npos) {
    const std::size_t dot = text.find('.');
    const auto seconds = digits(text.substr(0, dot));
    const auto fraction =
        fraction_ns(dot == std::string_view::npos ? std::string_view() : text.substr(dot + 1));
    if (!seconds || !fraction || *seconds > (UINT64_MAX - *fraction) / ns_per_second)
      return std::nullopt;
    return ParsedTime{*seconds * ns_per_second + *fraction, false};
  }
  if (text.size() < 8 || text[2] != ':' || text[5] != ':') return std::nullopt;
  const auto hours = digits(text.substr(0, 2));
  const auto minutes = digits(text.substr(3, 2));
  const auto seconds = digits(text.substr(6, 2));
  std::optional<std::uint64_t> fraction = 0;
  if (text.size() > 8) {
    if (text[8] != '.' && text[8] != ':') return std::nullopt;
    fraction = fraction_ns(text.substr(9));
  }
  if (!hours || !minutes || !seconds || !fraction || *hours > 23 || *minutes > 59 || *seconds > 60)
    return std::nullopt;
  return ParsedTime{((*hours * 60 + *minutes) * 60 + *seconds) * ns_per_second + *fraction, true};
}

// 0x-prefixed hex, "(nil)" (glibc's %p of a null pointer), or decimal.
std::uint64_t parse_pointer(std::string_view text, std::string_view column, const std::string& name,
                            std::uint64_t line) {
  if (text == "(nil)") return 0;
  return interchange_detail::parse_hex_or_decimal(text, column, name, line);
}

class RmmReader {
 public:
  RmmReader(const std::string& name, Trace& trace) : name_(name), trace_(trace) {}

  void add(const Record& row, const Layout& layout) {
    const auto field = [&](std::size_t c) -> std::string_view {
      return layout.index[c] == absent ? std::string_view() : row.fields[layout.index[c]];
    };
    Event e;
    e.device = 0;
    e.kind = MemoryKind::device;
    const std::string_view action = field(col::action);
    bool failure = false;
    if (action == "allocate") {
      e.op = Op::alloc;
    } else if (action == "free" || action == "deallocate") {
      e.op = Op::free;
    } else if (action == "allocate failure") {
      e.op = Op::alloc;
      failure = true;
    } else {
      throw_at_line(name_, row.line,
                    "unknown action '" + std::string(action) +
                        "' (expected allocate, free, allocate failure)");
    }
    // A failed request has no block; address 0 is how the resolver recognises it.
    e.address = failure ? 0 : parse_pointer(field(col::pointer), "Pointer", name_, row.line);
    e.size = interchange_detail::parse_decimal(field(col::size), "Size", name_, row.line);
    if (layout.index[col::thread] != absent)
      e.thread =
          interchange_detail::parse_hex_or_decimal(field(col::thread), "Thread", name_, row.line);
    if (layout.index[col::stream] != absent)
      e.stream = parse_pointer(field(col::stream), "Stream", name_, row.line);
    if (layout.index[col::time] != absent) e.time_ns = time_of(field(col::time), row.line);
    failures_ += failure ? 1 : 0;
    try {
      trace_.push_back(e);
    } catch (const InputError& error) {
      throw_at_line(name_, row.line, error.what());
    }
  }

  void finish() {
    trace_.metadata["rmm"] = {{"allocate_failures", failures_}, {"midnight_wraps", wraps_}};
  }

 private:
  std::uint64_t time_of(std::string_view text, std::uint64_t line) {
    const auto parsed = parse_time(text);
    if (!parsed)
      throw_at_line(name_, line,
                    "bad time '" + std::string(text) +
                        "' in column Time (expected HH:MM:SS.ffffff, a time of day)");
    if (!parsed->time_of_day) return parsed->ns;
    std::uint64_t time = day_offset_ + parsed->ns;
    // Threads log slightly out of order; only a jump of half a day means midnight passed, or,
    // forwards, that a thread's line from just before midnight came after the first ones past it.
    if (has_previous_ && time + ns_per_day / 2 < previous_) {
      day_offset_ += ns_per_day;
      time += ns_per_day;
      ++wraps_;
    } else if (has_previous_ && time > previous_ + ns_per_day / 2 && day_offset_ >= ns_per_day) {
      time -= ns_per_day;
    }
    previous_ = time;
    has_previous_ = true;
    return time;
  }

  const std::string& name_;
  Trace& trace_;
  bool has_previous_ = false;
  std::uint64_t previous_ = 0;
  std::uint64_t day_offset_ = 0;
  std::uint64_t failures_ = 0;
  std::uint64_t wraps_ = 0;
};

}  // namespace

Trace parse_rmm_log(std::istream& in, const std::string& name) {
  interchange_detail::RecordReader reader(in, name, /*comments=*/true);
  Trace trace;
  trace.metadata["imported_from"] = {{"format", "rmm"}, {"file", name}};
  Record record;
  if (!reader.next(record))
    throw_at_line(name, reader.lines() + 1,
                  "empty file (no header line Thread,Time,Action,Pointer,Size,Stream)");
  const Layout layout = read_header(record, name, trace);
  RmmReader rmm(name, trace);
  while (reader.next(record)) {
    if (record.fields == layout.header) continue;
    if (record.fields.size() != layout.header.size())
      throw_at_line(name, record.line,
                    "expected " + std::to_string(layout.header.size()) +
                        " fields as in the header, found " + std::to_string(record.fields.size()));
    rmm.add(record, layout);
  }
  rmm.finish();
  return trace;
}

Trace read_rmm_log(const std::string& path) {
  interchange_detail::InputFile file(path);
  return parse_rmm_log(file.stream(), path);
}

}  // namespace alloclab
