#pragma once
// The versioned JSON report every front end reads (CLI tables, CSV, GUI, merge).
// docs/report-schema.md documents every key.
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "alloclab/format/summary.hpp"
#include "alloclab/replay/metrics.hpp"

namespace alloclab {

inline constexpr int report_schema_version = 1;

struct ReportContext {
  std::string mode = "sim";  // "sim", "real" or "live" (`alloclab run`)
  // Real mode only (written only when mode is "real"): the upstream's name, --touch, --timing.
  std::string upstream;
  bool touch = false;
  std::string timing = "asap";
  std::string command_line;
  bool partial = false;  // the replay was interrupted: some results are missing or cut short
  // Live mode only (written as "program"): the program `alloclab run` ran and what it cost
  // (docs/report-schema.md).
  nlohmann::json program;
};

// `j` as JSON text (indent -1: on one line). Labels and command lines are bytes, not always
// UTF-8 (a Latin-1 file name): each byte that is not becomes U+FFFD instead of an exception.
std::string json_text(const nlohmann::json& j, int indent = -1);
// The same, written to `out` as it is made: a report of a 100M-event trace never exists as one
// gigabyte-sized string.
void write_json(std::ostream& out, const nlohmann::json& j, int indent = -1);
// write_json(out, j, 1) and a newline, into the file `path`, whole or not at all
// (write_output of format/output_files.hpp).
void write_json_file(const std::string& path, const nlohmann::json& j);

nlohmann::json metrics_json(const Metrics& metrics);
// The `fidelity` object of a result, and back (InputError naming `source` and the key).
nlohmann::json fidelity_json(const Fidelity& fidelity);
Fidelity fidelity_from_json(const nlohmann::json& j, const std::string& source);
// `with_runs` false leaves "runs" an empty array (run_json makes each entry).
nlohmann::json result_json(const StrategyResult& result, bool with_runs = true);
nlohmann::json run_json(const RunMetrics& run);
nlohmann::json make_report(const TraceSummary& trace, const std::vector<StrategyResult>& results,
                           const ReportContext& context);
// Writes make_report(trace, results, context) exactly as `out << std::setw(1) << report` would,
// byte for byte, but makes the run lists (one entry per run of the trace, and per run and
// strategy) one entry at a time: for a trace of many runs the whole document would take more
// memory than the replay did.
void write_report(std::ostream& out, const TraceSummary& trace,
                  const std::vector<StrategyResult>& results, const ReportContext& context);
// write_report and a newline, into the file `path`, whole or not at all (write_output).
void write_report_file(const std::string& path, const TraceSummary& trace,
                       const std::vector<StrategyResult>& results, const ReportContext& context);

// Reads back what result_json wrote (for merging shard reports and for the GUI). Throws
// InputError naming `source` and the key that is missing or wrong.
StrategyResult result_from_json(const nlohmann::json& j, const std::string& source);
Metrics metrics_from_json(const nlohmann::json& j, const std::string& source);

// One header line and one row per strategy, the metric names of docs/strategy-contract.md as
// columns.
void write_results_csv(std::ostream& out, const std::vector<StrategyResult>& results);

// The machine a report was produced on: host name, cores, OS.
nlohmann::json machine_json();

}  // namespace alloclab
