#pragma once
// What the side panel says about the selected trace or report, in a few lines: what it is
// (events, runs, threads, devices, mode), what is wrong with it (anomalies, leaks, load
// warnings), so a user sees at a glance what they are looking at. Built from the JSON the CLI
// writes, without a window, so that it is tested and reads as `alloclab info` does.
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace alloclab::gui {

struct SummaryLine {
  std::string text;
  bool warning = false;  // something the user should not miss (anomalies, lost events)
};

// Lines for a trace, from its `alloclab info --json` summary and the number of load warnings.
std::vector<SummaryLine> trace_summary_lines(const nlohmann::json& info, std::size_t load_warnings);

// Lines for a report (the replay schema): its mode and strategies, whether it is partial, a
// sweep or a live run, and the trace it came from.
std::vector<SummaryLine> report_summary_lines(const nlohmann::json& report);

// The file name of the trace a summary describes (its `source`), "(unnamed)" without one.
std::string trace_name(const nlohmann::json& info);

}  // namespace alloclab::gui
