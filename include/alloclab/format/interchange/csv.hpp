#pragma once
// The CSV interchange format of docs/strategy-contract.md ("The CSV interchange format"), plus
// alloclab's own optional columns kind, alignment and segment so that an export reads back as the
// same trace. docs/formats.md lists the columns, their units and the odd cases.
#include <iosfwd>
#include <string>

#include "alloclab/format/trace.hpp"

namespace alloclab {

// Reads a CSV trace; a path ending in ".gz" may be gzip-compressed (plain files read too).
// Unknown columns are ignored with a note in Trace::warnings. Throws InputError
// ("file:line: what") on anything it cannot take exactly: a missing required column, a bad,
// negative or too-large number, an unknown action, a wrong number of fields, stray bytes, an
// empty file.
Trace read_csv(const std::string& path);
// Same, from a stream; `name` is the file name used in messages.
Trace parse_csv(std::istream& in, const std::string& name);

// Writes every field of every event, columns
// time_ns,thread,action,address,size,stream,device,kind,alignment,segment,label, gzip-compressed
// when the path ends in ".gz". Throws std::runtime_error on I/O failure, and when a label holds
// a control byte other than tab or line feed (CSV cannot carry it back).
void write_csv(const Trace& trace, const std::string& path);
void write_csv(const Trace& trace, std::ostream& out);

}  // namespace alloclab
