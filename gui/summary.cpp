#include "summary.hpp"

#include <cstdint>
#include <utility>

#include "alloclab/format/units.hpp"

namespace alloclab::gui {
namespace {

std::uint64_t count_of(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return 0;
  return it->is_number_unsigned() || it->get<std::int64_t>() >= 0 ? it->get<std::uint64_t>() : 0;
}

std::string text_of(const nlohmann::json& j, const char* key, const char* otherwise) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : otherwise;
}

std::string joined(const std::vector<std::string>& parts, const char* separator) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : separator) + p;
  return out;
}

// The anomaly counters of `info --json` by the words `alloclab info` uses for them.
const std::pair<const char*, const char*> anomaly_names[] = {
    {"free_unknown", "free of unknown address"}, {"double_free", "double free"},
    {"alloc_over_live", "alloc over live"},      {"failed_allocs", "failed alloc"},
    {"nested_run_begin", "nested run_begin"},    {"run_end_outside_run", "run_end outside run"},
    {"unterminated_runs", "unterminated run"},
};

SummaryLine anomalies_line(const nlohmann::json& anomalies) {
  std::vector<std::string> parts;
  std::uint64_t total = 0;
  for (const auto& [key, words] : anomaly_names) {
    const std::uint64_t n = count_of(anomalies, key);
    if (n == 0) continue;
    total += n;
    parts.push_back(std::string(words) + " " + grouped(n));
  }
  if (total == 0) return {"anomalies: none", false};
  return {"anomalies: " + grouped(total) + " (" + joined(parts, ", ") + ")", true};
}

}  // namespace

std::vector<SummaryLine> trace_summary_lines(const nlohmann::json& info,
                                             std::size_t load_warnings) {
  std::vector<SummaryLine> lines;
  if (!info.is_object()) return lines;
  const std::uint64_t runs =
      info.contains("events_by_op") ? count_of(info["events_by_op"], "run_begin") : 0;
  lines.push_back({counted(count_of(info, "events"), "event") + " · " +
                       (runs == 0 ? std::string("no run markers") : counted(runs, "run")) + " · " +
                       counted(count_of(info, "threads"), "thread"),
                   false});
  std::vector<std::string> devices;
  if (const auto it = info.find("devices"); it != info.end() && it->is_array())
    for (const auto& d : *it)
      if (d.is_string()) devices.push_back(d.get<std::string>());
  lines.push_back({(devices.size() == 1 ? "device " : "devices ") +
                       (devices.empty() ? std::string("none") : joined(devices, ", ")) + " · " +
                       counted(count_of(info, "streams"), "stream"),
                   false});
  lines.push_back({"peak live " + human_bytes(count_of(info, "peak_live_bytes")) + " · " +
                       human_duration(count_of(info, "duration_ns")),
                   false});
  if (const auto it = info.find("anomalies"); it != info.end() && it->is_object()) {
    lines.push_back(anomalies_line(*it));
    const std::uint64_t leaks = count_of(*it, "leaks");
    if (leaks > 0)
      lines.push_back({counted(leaks, "leak") + " (" + human_bytes(count_of(*it, "leaked_bytes")) +
                           ") at the end",
                       false});
  }
  if (const auto it = info.find("start_state"); it != info.end() && !it->is_null())
    lines.push_back({"starts from a recorded allocator state", false});
  if (load_warnings > 0)
    lines.push_back({counted(load_warnings, "load warning") + ": events were lost", true});
  return lines;
}

std::vector<SummaryLine> report_summary_lines(const nlohmann::json& report) {
  std::vector<SummaryLine> lines;
  if (!report.is_object()) return lines;
  const auto results = report.find("results");
  const std::size_t n = results != report.end() && results->is_array() ? results->size() : 0;
  lines.push_back(
      {text_of(report, "mode", "sim") + " mode · " + counted(n, "strategy", "strategies"), false});
  if (const auto sweep = report.find("sweep"); sweep != report.end() && sweep->is_object()) {
    const auto points = sweep->find("points");
    const std::size_t all = points != sweep->end() && points->is_array() ? points->size() : n;
    lines.push_back({"a sweep of " + counted(all, "point") +
                         (all == n ? std::string() : ", " + grouped(n) + " of them here"),
                     false});
  }
  if (const auto partial = report.find("partial");
      partial != report.end() && partial->is_boolean() && partial->get<bool>())
    lines.push_back({"partial: merged with points missing", true});
  if (const auto trace = report.find("trace"); trace != report.end() && trace->is_object()) {
    if (const auto below = trace->find("below_min_size");
        below != trace->end() && below->is_object())
      lines.push_back({counted(count_of(*below, "allocations"), "allocation") + " below " +
                           human_bytes(count_of(*below, "min_size")) +
                           " left to the real allocator",
                       false});
  }
  return lines;
}

std::string trace_name(const nlohmann::json& info) {
  std::string source = info.is_object() ? text_of(info, "source", "") : "";
  if (const auto slash = source.find_last_of('/'); slash != std::string::npos)
    source.erase(0, slash + 1);
  return source.empty() ? "(unnamed)" : source;
}

}  // namespace alloclab::gui
