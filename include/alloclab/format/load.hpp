#pragma once
// Loading a trace of any format alloclab reads, the one way every front end does it (each
// command of the CLI, the GUI): the format detected as below, load warnings kept with what was
// loaded (Trace::warnings, TraceSummary::warnings) for the front end to show where its user
// looks. Nothing is printed here.
#include <cstdint>
#include <optional>
#include <string>

#include "alloclab/format/alt/stream_load.hpp"
#include "alloclab/format/formats.hpp"
#include "alloclab/format/trace.hpp"

namespace alloclab {

struct LoadedTrace {
  Trace trace;
  std::optional<std::uint64_t> file_bytes;  // set for .alt input (bytes per event on disk)
};

// The format `path` is read as: `chosen` when given; else .alt when the file starts with its
// magic, whatever its name; else the one format_from_path says (its name, and for .csv and
// .json its content).
TraceFormat input_format(const std::string& path, std::optional<TraceFormat> chosen = {});

// Reads the trace in input_format(path, format). Throws InputError as the format's reader does.
LoadedTrace load_trace(const std::string& path, std::optional<TraceFormat> format = {});

// What a replay starts from: the resolved trace and its summary, whose `source` is `path` and
// whose `file_bytes` is set for .alt input; the events themselves are not kept. An .alt trace
// is streamed (load_alt_resolved), so the event columns of a large trace never exist beside
// the resolved trace; any other format is read whole, then resolved and summarised.
ResolvedLoad load_resolved(const std::string& path, std::optional<TraceFormat> format = {},
                           const ResolveOptions& options = {});

}  // namespace alloclab
