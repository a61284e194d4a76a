// Reads the CSV interchange format. Every field is checked: a trace that replays wrong because a
// column was half-parsed is worse than a clear error pointing at the line.
#include <array>
#include <bit>
#include <istream>
#include <optional>

#include "alloclab/format/error.hpp"
#include "alloclab/format/interchange/csv.hpp"
#include "text_io.hpp"

namespace alloclab {
namespace {

using interchange_detail::parse_decimal;
using interchange_detail::parse_hex_or_decimal;
using interchange_detail::Record;

// Column indices into Layout::index, in the order of column_names.
namespace col {
enum : std::size_t {
  action,
  address,
  size,
  time_ns,
  thread,
  stream,
  device,
  kind,
  alignment,
  segment,
  pool,
  realloc_in_place,
  label,
  count
};
}  // namespace col
constexpr std::size_t column_count = col::count;
constexpr std::array<std::string_view, column_count> column_names = {
    "action", "address",   "size",    "time_ns", "thread",           "stream", "device",
    "kind",   "alignment", "segment", "pool",    "realloc_in_place", "label"};
constexpr std::size_t required_columns = 3;  // action, address, size
constexpr std::size_t absent = static_cast<std::size_t>(-1);

struct Layout {
  std::array<std::size_t, column_count> index{};
  std::size_t fields = 0;
};

Layout read_header(const Record& header, const std::string& name, Trace& trace) {
  Layout layout;
  layout.index.fill(absent);
  layout.fields = header.fields.size();
  std::vector<std::string> unknown;
  bool looks_like_data = false;
  for (std::size_t i = 0; i < header.fields.size(); ++i) {
    const std::string column = interchange_detail::lowercase(header.fields[i]);
    std::size_t known = absent;
    for (std::size_t c = 0; c < column_count; ++c)
      if (column_names[c] == column) known = c;
    if (known == absent) {
      unknown.push_back(column.empty() ? "(empty name, column " + std::to_string(i + 1) + ")"
                                       : header.fields[i]);
      looks_like_data = looks_like_data || parse_op(column).has_value();
      continue;
    }
    if (layout.index[known] != absent)
      throw_at_line(name, header.line, "column '" + column + "' appears twice in the header");
    layout.index[known] = i;
  }
  std::vector<std::string> missing;
  for (std::size_t c = 0; c < required_columns; ++c)
    if (layout.index[c] == absent) missing.emplace_back(column_names[c]);
  if (!missing.empty())
    throw_at_line(name, header.line,
                  "missing required column(s) " + interchange_detail::quoted_list(missing) +
                      " (the first non-comment line must be a header naming action, address "
                      "and size" +
                      (looks_like_data ? "; this one looks like data" : "") + ")");
  if (!unknown.empty())
    trace.warnings.push_back(name + ":" + std::to_string(header.line) +
                             ": ignoring unknown column(s) " +
                             interchange_detail::quoted_list(unknown));
  return layout;
}

class RowParser {
 public:
  RowParser(const Record& row, const Layout& layout, const std::string& name)
      : row_(row), layout_(layout), name_(name) {}

  Event parse() const {
    Event e;
    const std::string_view action_text = field(col::action).value_or("");
    const auto op = parse_op(action_text);
    if (!op)
      fail(action_text.empty() ? std::string("missing action")
                               : "unknown action '" + std::string(action_text) + "'");
    e.op = *op;
    const bool request = e.op == Op::alloc || e.op == Op::free;
    const std::string op_name(to_string(e.op));

    if (auto text = field(col::address); text && !text->empty())
      e.address = parse_hex_or_decimal(*text, "address", name_, row_.line);
    else if (request)
      fail_plain(op_name + " without an address");

    if (auto text = field(col::size); text && !text->empty())
      e.size = parse_decimal(*text, "size", name_, row_.line);
    else if (e.op == Op::alloc)
      fail_plain("alloc without a size");

    if (auto text = field(col::time_ns); text && !text->empty())
      e.time_ns = parse_decimal(*text, "time_ns", name_, row_.line);
    if (auto text = field(col::thread); text && !text->empty())
      e.thread = parse_hex_or_decimal(*text, "thread", name_, row_.line);
    if (auto text = field(col::stream); text && !text->empty())
      e.stream = parse_hex_or_decimal(*text, "stream", name_, row_.line);
    if (auto text = field(col::pool); text && !text->empty())
      e.pool = parse_hex_or_decimal(*text, "pool", name_, row_.line);

    if (auto text = field(col::device); text && !text->empty()) {
      const auto id = parse_device(*text);
      if (!id)
        fail_plain("bad device '" + std::string(*text) + "' (expected cpu, cuda:N, -1 or N)");
      e.device = *id;
    }
    e.kind = e.device == cpu_device ? MemoryKind::host : MemoryKind::device;
    if (auto text = field(col::kind); text && !text->empty()) {
      const auto parsed = parse_memory_kind(*text);
      if (!parsed)
        fail_plain("unknown kind '" + std::string(*text) +
                   "' (expected host, device, managed, pinned, mapped)");
      e.kind = *parsed;
    }

    if (auto text = field(col::alignment); text && !text->empty()) {
      e.alignment = parse_hex_or_decimal(*text, "alignment", name_, row_.line);
      if (e.alignment != 0 && !std::has_single_bit(e.alignment))
        fail_plain("alignment " + std::string(*text) + " is not a power of two");
    }
    if (auto text = field(col::segment); text && !text->empty()) {
      if (*text != "0" && *text != "1")
        fail_plain("bad segment flag '" + std::string(*text) + "' (expected 0 or 1)");
      e.segment = *text == "1";
    }
    if (auto text = field(col::realloc_in_place); text && !text->empty()) {
      if (*text != "0" && *text != "1")
        fail_plain("bad realloc_in_place flag '" + std::string(*text) + "' (expected 0 or 1)");
      e.realloc_in_place = *text == "1";
      if (e.realloc_in_place && e.op != Op::alloc)
        fail_plain("a " + op_name + " marked realloc_in_place (only an alloc can be)");
    }
    if (auto text = field(col::label)) e.label = std::string(*text);
    return e;
  }

 private:
  std::optional<std::string_view> field(std::size_t c) const {
    if (layout_.index[c] == absent) return std::nullopt;
    return std::string_view(row_.fields[layout_.index[c]]);
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw_at_line(name_, row_.line, what + " (expected alloc, free, run_begin, run_end, mark)");
  }
  [[noreturn]] void fail_plain(const std::string& what) const {
    throw_at_line(name_, row_.line, what);
  }

  const Record& row_;
  const Layout& layout_;
  const std::string& name_;
};

}  // namespace

Trace parse_csv(std::istream& in, const std::string& name) {
  interchange_detail::RecordReader reader(in, name, /*comments=*/true);
  Trace trace;
  trace.metadata["imported_from"] = {{"format", "csv"}, {"file", name}};
  Record record;
  if (!reader.next(record))
    throw_at_line(name, reader.lines() + 1,
                  reader.lines() == 0 ? "empty file (no header line)"
                                      : "no header line (only comments and blank lines)");
  const Layout layout = read_header(record, name, trace);
  // Rows whose time_ns is earlier than that of the timed row before them: the file's order is
  // what is replayed, so times that go back mean a merge or a clock gone wrong, worth a word.
  std::uint64_t previous_time = 0, backwards = 0, first_backwards_line = 0;
  bool timed_before = false;
  while (reader.next(record)) {
    if (record.fields.size() != layout.fields)
      throw_at_line(name, record.line,
                    "expected " + std::to_string(layout.fields) +
                        " fields as in the header, found " + std::to_string(record.fields.size()));
    const Event event = RowParser(record, layout, name).parse();
    try {
      trace.push_back(event);
    } catch (const InputError& e) {
      throw_at_line(name, record.line, e.what());
    }
    if (layout.index[col::time_ns] != absent &&
        !record.fields[layout.index[col::time_ns]].empty()) {
      if (timed_before && event.time_ns < previous_time && backwards++ == 0)
        first_backwards_line = record.line;
      previous_time = event.time_ns;
      timed_before = true;
    }
  }
  if (backwards > 0)
    trace.warnings.push_back(name + ":" + std::to_string(first_backwards_line) +
                             ": time_ns goes backwards (earlier than the row before), here first "
                             "and in " +
                             std::to_string(backwards) +
                             " row(s) in all; the rows are replayed in file order");
  return trace;
}

Trace read_csv(const std::string& path) {
  interchange_detail::InputFile file(path);
  return parse_csv(file.stream(), path);
}

}  // namespace alloclab
