#pragma once
// Logs of RAPIDS RMM's logging_resource_adaptor: a CSV with header
// Thread,Time,Action,Pointer,Size,Stream (columns found by name, so extra columns such as a
// pandas index are tolerated). docs/formats.md has the details.
//
// What the log lacks is filled in: every event is on device 0 (cuda:0), kind device. Time is a
// time of day; it becomes nanoseconds since the midnight before the first line, and a jump back
// of more than 12 hours is taken as midnight passing. "allocate failure" becomes an alloc at
// address 0 (a failed request for the resolver) and is counted in
// metadata["rmm"]["allocate_failures"].
#include <iosfwd>
#include <string>

#include "alloclab/format/trace.hpp"

namespace alloclab {

// Throws InputError ("file:line: what") on input it cannot take. A path ending in ".gz" may be
// gzip-compressed.
Trace read_rmm_log(const std::string& path);
Trace parse_rmm_log(std::istream& in, const std::string& name);

}  // namespace alloclab
