#pragma once
// The versioned JSON report every front end reads (CLI tables, CSV, GUI, merge).
// docs/report-schema.md documents every key.
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "alloclab/replay/metrics.hpp"
#include "alloclab/trace/summary.hpp"

namespace alloclab {

inline constexpr int report_schema_version = 1;

struct ReportContext {
  std::string mode = "sim";  // "sim" or "real"
  // Real mode only (written only when mode is "real"): the upstream's name, --touch, --timing.
  std::string upstream;
  bool touch = false;
  std::string timing = "asap";
  std::string command_line;
  bool partial = false;  // the replay was interrupted: some results are missing or cut short
};

nlohmann::json metrics_json(const Metrics& metrics);
nlohmann::json result_json(const StrategyResult& result);
nlohmann::json make_report(const TraceSummary& trace, const std::vector<StrategyResult>& results,
                           const ReportContext& context);

// Reads back what result_json wrote (for merging shard reports and for the GUI). Throws
// InputError naming `source` and the key that is missing or wrong.
StrategyResult result_from_json(const nlohmann::json& j, const std::string& source);
Metrics metrics_from_json(const nlohmann::json& j, const std::string& source);

// One header line and one row per strategy, the metric names of STRATEGIES.md as columns.
void write_results_csv(std::ostream& out, const std::vector<StrategyResult>& results);

// The machine a report was produced on: host name, cores, OS.
nlohmann::json machine_json();

}  // namespace alloclab
