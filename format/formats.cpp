// Picks a reader or writer by format name, file name and, where names are ambiguous, content.
#include "alloclab/format/formats.hpp"

#include <algorithm>
#include <array>

#include "alloclab/format/alt/alt.hpp"
#include "alloclab/format/error.hpp"
#include "alloclab/format/interchange/chrome_trace.hpp"
#include "alloclab/format/interchange/csv.hpp"
#include "alloclab/format/interchange/rmm_log.hpp"
#include "alloclab/format/interchange/torch_snapshot.hpp"
#include "interchange/text_io.hpp"

namespace alloclab {
namespace {

constexpr std::string_view accepted_extensions =
    ".alt, .csv, .rmm.csv, .log, .json, .pickle, .pkl (all but .alt also with .gz)";

struct NamedFormat {
  std::string_view name;
  TraceFormat format;
};
constexpr std::array<NamedFormat, 7> format_names = {
    {{"alt", TraceFormat::alt},
     {"csv", TraceFormat::csv},
     {"rmm", TraceFormat::rmm},
     {"torch", TraceFormat::torch_snapshot},
     {"torch_snapshot", TraceFormat::torch_snapshot},
     {"chrome", TraceFormat::chrome},
     {"perfetto", TraceFormat::chrome}}};

// The name without a trailing ".gz", lower-cased, and whether it had one.
std::pair<std::string, bool> strip_gz(const std::string& path) {
  std::string name = interchange_detail::lowercase(path);
  const bool gz = interchange_detail::is_gzip_path(name);
  if (gz) name.resize(name.size() - 3);
  return {name, gz};
}

// True when the header names RMM's columns (Action, Pointer and Time, in any order; our CSV
// says "address" where RMM says "Pointer").
bool has_rmm_header(const std::string& path) {
  try {
    interchange_detail::InputFile file(path);
    interchange_detail::RecordReader reader(file.stream(), path, /*comments=*/true);
    interchange_detail::Record header;
    if (!reader.next(header)) return false;
    bool action = false, pointer = false, has_time = false;
    for (const std::string& field : header.fields) {
      const std::string name = interchange_detail::lowercase(field);
      action = action || name == "action";
      pointer = pointer || name == "pointer";
      has_time = has_time || name == "time";
    }
    return action && pointer && has_time;
  } catch (const std::exception&) {
    // Unreadable: the reader will say why.
  }
  return false;
}

// True when the file mentions "device_traces" anywhere (snapshots put it after the segments).
bool mentions_device_traces(const std::string& path) {
  constexpr std::string_view key = "\"device_traces\"";
  try {
    interchange_detail::InputFile file(path);
    std::string window;
    std::array<char, 1 << 16> chunk{};
    while (file.stream().read(chunk.data(), chunk.size()) || file.stream().gcount() > 0) {
      window.append(chunk.data(), static_cast<std::size_t>(file.stream().gcount()));
      if (window.find(key) != std::string::npos) return true;
      window.erase(0, window.size() - std::min(window.size(), key.size()));
    }
  } catch (const std::exception&) {
  }
  return false;
}

bool is_alt_file(const std::string& path) {
  try {
    return looks_like_alt(path);
  } catch (const std::exception&) {
    return false;
  }
}

// True when the file starts with a pickle's PROTO opcode (0x80), after gzip if it is gzip.
bool starts_like_pickle(const std::string& path) {
  try {
    interchange_detail::InputFile file(path);
    return file.stream().peek() == 0x80;
  } catch (const std::exception&) {
    return false;
  }
}

std::optional<TraceFormat> format_from_name(const std::string& path) {
  const auto [name, gz] = strip_gz(path);
  if (name.ends_with(".alt")) return gz ? std::nullopt : std::optional(TraceFormat::alt);
  if (name.ends_with(".rmm.csv") || name.ends_with(".log")) return TraceFormat::rmm;
  if (name.ends_with(".csv")) return TraceFormat::csv;
  if (name.ends_with(".json")) return TraceFormat::chrome;
  if (name.ends_with(".pickle") || name.ends_with(".pkl")) return TraceFormat::torch_snapshot;
  return std::nullopt;
}

}  // namespace

std::optional<TraceFormat> parse_format(std::string_view name) {
  const std::string lower = interchange_detail::lowercase(name);
  for (const auto& entry : format_names)
    if (entry.name == lower) return entry.format;
  return std::nullopt;
}

std::string_view to_string(TraceFormat format) {
  switch (format) {
    case TraceFormat::alt:
      return "alt";
    case TraceFormat::csv:
      return "csv";
    case TraceFormat::rmm:
      return "rmm";
    case TraceFormat::torch_snapshot:
      return "torch";
    case TraceFormat::chrome:
      return "chrome";
  }
  return "unknown";
}

TraceFormat format_from_path(const std::string& path) {
  refuse_directory(path);
  // A pipe's content can be read once: looking into it would take it from the reader.
  const bool stream = is_stream_input(path);
  const auto by_name = format_from_name(path);
  if (!by_name) {
    if (stream)
      throw InputError(path +
                       ": a pipe or device, whose format cannot be told from its name, and "
                       "looking at its first bytes would consume them; name the format (alt, "
                       "csv, rmm, torch)");
    if (is_alt_file(path)) return TraceFormat::alt;
    if (starts_like_pickle(path)) return TraceFormat::torch_snapshot;
    throw InputError(path + ": cannot tell the trace format from the file name (accepted: " +
                     std::string(accepted_extensions) + "; or name the format)");
  }
  if (*by_name == TraceFormat::csv && !stream && has_rmm_header(path)) return TraceFormat::rmm;
  // A .json pipe is read as a snapshot, the one JSON trace alloclab reads; so is a .json file
  // that is a snapshot's pickle under another name.
  if (*by_name == TraceFormat::chrome &&
      (stream || mentions_device_traces(path) || starts_like_pickle(path)))
    return TraceFormat::torch_snapshot;
  return *by_name;
}

TraceFormat output_format_from_path(const std::string& path) {
  const auto by_name = format_from_name(path);
  if (!by_name || *by_name == TraceFormat::rmm)
    throw InputError(path + ": cannot tell the output format from the file name (alloclab writes " +
                     ".alt, .csv, .csv.gz and .json for Chrome/Perfetto; or name the format)");
  return *by_name;
}

Trace read_trace(const std::string& path, std::optional<TraceFormat> format) {
  const bool guessed = !format.has_value();
  switch (format ? *format : format_from_path(path)) {
    case TraceFormat::alt:
      return read_alt(path);
    case TraceFormat::csv:
      return read_csv(path);
    case TraceFormat::rmm:
      return read_rmm_log(path);
    case TraceFormat::torch_snapshot:
      return read_torch_snapshot(path);
    case TraceFormat::chrome:
      // A .json that is not a snapshot: the snapshot reader says what is wrong with it (cannot
      // open, not JSON, or no "device_traces").
      if (guessed) return read_torch_snapshot_json(path);
      throw InputError(path +
                       ": Chrome trace JSON is an export format; alloclab cannot read it back: "
                       "read the trace it was made from (.alt, .csv)");
  }
  throw InputError(path + ": unknown trace format");
}

void write_trace(const Trace& trace, const std::string& path, TraceFormat format) {
  switch (format) {
    case TraceFormat::alt:
      return write_alt(trace, path);
    case TraceFormat::csv:
      return write_csv(trace, path);
    case TraceFormat::chrome:
      return write_chrome_trace(trace, path);
    case TraceFormat::rmm:
    case TraceFormat::torch_snapshot:
      break;
  }
  throw InputError(path + ": alloclab reads " + std::string(to_string(format)) +
                   " files but cannot write them (write alt, csv or chrome)");
}

void write_trace(const Trace& trace, const std::string& path) {
  write_trace(trace, path, output_format_from_path(path));
}

}  // namespace alloclab
