#pragma once
// Joining reports: the shard reports of one sweep (`alloclab sweep --shard i/n`) into the report
// the whole sweep would have written, or plain replay reports into one. A pure function over
// parsed JSON (read_report_file parses a file). docs/report-schema.md ("Sweep and advise
// reports") documents the merged report.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace alloclab {

struct MergeInput {
  std::string source;  // file name, used in every message
  nlohmann::json report;
};

struct MergeOptions {
  // Missing sweep points are not an error: the merged report says "partial": true.
  bool allow_partial = false;
  // Recorded as the merged report's command_line when not empty.
  std::string command_line;
};

// Checks that every input is a report (object with schema_version, trace, results) with the
// same schema_version and the same trace (summary "events" and "allocations") as the first,
// and that either all or none are sweep reports. Sweep reports must have the same
// "sweep.points"; their results are ordered by point index; a point given twice must have the
// same result both times (measurements aside: timing, latency, wall_seconds); missing points are
// an error listing them unless allow_partial. Plain reports have their results concatenated in
// input order, a strategy given twice kept once (its first), and it too must have the same
// result both times.
// Throws InputError naming the offending file and what is wrong.
nlohmann::json merge_reports(const std::vector<MergeInput>& inputs,
                             const MergeOptions& options = {});

// A report file, parsed (what merge_reports takes). Throws InputError "PATH: is a directory",
// "PATH: cannot open" or "PATH: not JSON (why)".
nlohmann::json read_report_file(const std::string& path);

// "0, 3-5, 9" for {0, 3, 4, 5, 9}: at most `limit` runs are listed, then "and N more".
std::string describe_indices(const std::vector<std::size_t>& indices, std::size_t limit = 20);

}  // namespace alloclab
