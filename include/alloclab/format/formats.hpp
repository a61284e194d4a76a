#pragma once
// One entry point for every trace format alloclab reads or writes, chosen by name (a --format
// option) or by the file's extension and first bytes.
#include <optional>
#include <string>
#include <string_view>

#include "alloclab/format/trace.hpp"

namespace alloclab {

enum class TraceFormat { alt, csv, rmm, torch_snapshot, chrome };

// "alt", "csv", "rmm", "torch" (or "torch_snapshot"), "chrome" (or "perfetto").
std::optional<TraceFormat> parse_format(std::string_view name);
std::string_view to_string(TraceFormat format);

// The format to read `path` as: .alt; .rmm.csv, .log or a CSV whose header starts
// "Thread,Time,Action" → rmm; .csv → csv; .pickle, .pkl → torch_snapshot; .json →
// torch_snapshot when the file holds "device_traces" (or is a pickle), chrome otherwise (which
// read_trace refuses, saying why). A trailing ".gz" is looked through. A file whose name says
// nothing is .alt or a snapshot's pickle by its first bytes. Throws InputError listing the
// accepted extensions for anything else.
TraceFormat format_from_path(const std::string& path);
// The format to write `path` as, from its name alone (.json → chrome; nothing is opened).
TraceFormat output_format_from_path(const std::string& path);

// Reads a trace in the given format, or the one format_from_path picks. Throws InputError.
Trace read_trace(const std::string& path, std::optional<TraceFormat> format = {});
// Writes alt, csv or chrome; rmm and torch_snapshot are import-only (InputError says so).
void write_trace(const Trace& trace, const std::string& path, TraceFormat format);
// Same, with output_format_from_path(path).
void write_trace(const Trace& trace, const std::string& path);

}  // namespace alloclab
