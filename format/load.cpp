#include "alloclab/format/load.hpp"

#include <utility>

#include "alloclab/format/alt/alt.hpp"
#include "alloclab/format/resolve.hpp"
#include "alloclab/format/summary.hpp"

namespace alloclab {
namespace {

LoadedTrace load_as(const std::string& path, bool chosen, TraceFormat format) {
  LoadedTrace loaded;
  if (format == TraceFormat::alt) {
    AltLoadStats stats;
    loaded.trace = read_alt(path, &stats);
    loaded.file_bytes = stats.file_bytes;
  } else if (!chosen && format == TraceFormat::chrome) {
    loaded.trace = read_trace(path);  // a .json that is no snapshot: the reader says what it is
  } else {
    loaded.trace = read_trace(path, format);
  }
  return loaded;
}

}  // namespace

TraceFormat input_format(const std::string& path, std::optional<TraceFormat> chosen) {
  if (chosen) return *chosen;
  return looks_like_alt(path) ? TraceFormat::alt : format_from_path(path);
}

LoadedTrace load_trace(const std::string& path, std::optional<TraceFormat> format) {
  return load_as(path, format.has_value(), input_format(path, format));
}

ResolvedLoad load_resolved(const std::string& path, std::optional<TraceFormat> format,
                           const ResolveOptions& options) {
  ResolvedLoad out;
  const TraceFormat detected = input_format(path, format);
  if (detected == TraceFormat::alt) {
    AltLoadStats stats;
    out = load_alt_resolved(path, &stats, alt_stream_batch_events, options);
    out.summary.file_bytes = stats.file_bytes;
  } else {
    const LoadedTrace loaded = load_as(path, format.has_value(), detected);
    out.resolved = resolve(loaded.trace, path, options);
    out.summary = summarize(loaded.trace, out.resolved);
    out.summary.file_bytes = loaded.file_bytes;
    out.metadata = loaded.trace.metadata;
  }
  out.summary.source = path;
  return out;
}

}  // namespace alloclab
