#pragma once
// Export to the Chrome trace-event JSON object format, which Perfetto's UI (ui.perfetto.dev) and
// chrome://tracing open: {"traceEvents":[...],"displayTimeUnit":"ns"}. Export only; alloclab does
// not read it back. docs/formats.md lists the tracks.
//
// One process holds: a counter track "live bytes <device>" per device (program requests, paired
// by alloclab::resolve, so it shows what the replay model sees), a counter track
// "reserved bytes <device>" when the trace records the allocator's own segments, runs as slices
// on a "runs" thread and marks as instant events on the thread that recorded them. Timestamps
// are microseconds since the trace's earliest event (otherData.time_origin_ns holds that time).
#include <iosfwd>
#include <string>

#include "alloclab/format/trace.hpp"

namespace alloclab {

// Throws std::runtime_error on I/O failure. A path ending in ".gz" is gzip-compressed.
void write_chrome_trace(const Trace& trace, const std::string& path);
void write_chrome_trace(const Trace& trace, std::ostream& out);

}  // namespace alloclab
