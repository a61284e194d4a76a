// Merging shard reports. Every check names the file it failed on, because the usual mistake is
// one stray file from another sweep or another trace among many shard files.
#include "alloclab/replay/merge.hpp"

#include <fstream>
#include <map>

#include "alloclab/format/error.hpp"
#include "alloclab/replay/report.hpp"

namespace alloclab {
namespace {

using nlohmann::json;

// The trace summary keys that must agree for two reports to be of the same trace. "events" and
// "allocations" are required; the others are compared when both reports have them.
constexpr const char* kRequiredTraceKeys[] = {"events", "allocations"};
constexpr const char* kOptionalTraceKeys[] = {"bytes_requested", "peak_live_bytes"};

void check_report_shape(const MergeInput& in) {
  const json& r = in.report;
  if (!r.is_object()) throw InputError(in.source + ": not a report (expected a JSON object)");
  if (!r.contains("schema_version") || !r["schema_version"].is_number_integer())
    throw InputError(in.source + ": not a report (no integer 'schema_version')");
  if (!r.contains("trace") || !r["trace"].is_object())
    throw InputError(in.source + ": report has no 'trace' object");
  for (const char* key : kRequiredTraceKeys)
    if (!r["trace"].contains(key) || !r["trace"][key].is_number_unsigned())
      throw InputError(in.source + ": report's trace summary has no '" + key + "' count");
  if (!r.contains("results") || !r["results"].is_array())
    throw InputError(in.source + ": report has no 'results' array");
  for (const json& result : r["results"]) (void)result_from_json(result, in.source);
}

void check_same_run(const MergeInput& first, const MergeInput& in) {
  const json& a = first.report;
  const json& b = in.report;
  if (a["schema_version"] != b["schema_version"])
    throw InputError(in.source + ": schema_version " + b["schema_version"].dump() +
                     " differs from " + first.source + "'s " + a["schema_version"].dump() +
                     " (re-run the older one with this alloclab)");
  auto differ = [&](const char* key) {
    throw InputError(in.source + ": not the same trace as " + first.source + " (trace " + key +
                     " " + b["trace"][key].dump() + " vs " + a["trace"][key].dump() + ")");
  };
  for (const char* key : kRequiredTraceKeys)
    if (a["trace"][key] != b["trace"][key]) differ(key);
  for (const char* key : kOptionalTraceKeys)
    if (a["trace"].contains(key) && b["trace"].contains(key) && a["trace"][key] != b["trace"][key])
      differ(key);
  if (a.contains("sweep") != b.contains("sweep"))
    throw InputError(in.source + (b.contains("sweep") ? " is" : " is not") +
                     " a sweep report but " + first.source +
                     (a.contains("sweep") ? " is" : " is not") +
                     " (merge joins either shards of one sweep or plain replay reports)");
}

// A result without what is measured (timings, and a real replay's latencies and wall time),
// which differs between runs of the same replay.
json deterministic_part(json result) {
  for (const char* measured : {"timing", "latency", "wall_seconds"}) result.erase(measured);
  return result;
}

struct SweepShape {
  const json* points = nullptr;
  std::vector<std::size_t> indices;
};

SweepShape read_sweep(const MergeInput& in) {
  const json& sweep = in.report["sweep"];
  if (!sweep.is_object() || !sweep.contains("points") || !sweep["points"].is_array() ||
      !sweep.contains("point_indices") || !sweep["point_indices"].is_array())
    throw InputError(in.source + ": 'sweep' needs a 'points' array and a 'point_indices' array");
  SweepShape shape;
  shape.points = &sweep["points"];
  for (const json& p : *shape.points)
    if (!p.is_string()) throw InputError(in.source + ": sweep.points holds a non-string");
  for (const json& i : sweep["point_indices"]) {
    if (!i.is_number_unsigned() || i.get<std::uint64_t>() >= shape.points->size())
      throw InputError(in.source + ": sweep.point_indices holds " + i.dump() +
                       ", not a point index below " + std::to_string(shape.points->size()));
    shape.indices.push_back(i.get<std::size_t>());
  }
  const json& results = in.report["results"];
  if (shape.indices.size() != results.size())
    throw InputError(in.source + ": " + std::to_string(results.size()) + " results but " +
                     std::to_string(shape.indices.size()) + " sweep.point_indices");
  for (std::size_t k = 0; k < results.size(); ++k)
    if (results[k]["strategy"] != (*shape.points)[shape.indices[k]])
      throw InputError(in.source + ": result " + std::to_string(k) + " is " +
                       results[k]["strategy"].dump() + " but its point " +
                       std::to_string(shape.indices[k]) + " is " +
                       (*shape.points)[shape.indices[k]].dump());
  return shape;
}

json merged_from_entry(const MergeInput& in) {
  json entry = {{"source", in.source}, {"results", in.report["results"].size()}};
  for (const char* key : {"machine", "command_line"})
    if (in.report.contains(key)) entry[key] = in.report[key];
  if (in.report.contains("sweep") && in.report["sweep"].contains("shard"))
    entry["shard"] = in.report["sweep"]["shard"];
  return entry;
}

}  // namespace

std::string describe_indices(const std::vector<std::size_t>& indices, std::size_t limit) {
  std::string out;
  std::size_t runs = 0;
  for (std::size_t i = 0; i < indices.size();) {
    std::size_t j = i;
    while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1) ++j;
    if (runs == limit) {
      out += ", and " + std::to_string(indices.size() - i) + " more";
      break;
    }
    if (!out.empty()) out += ", ";
    out += std::to_string(indices[i]);
    if (j > i) out += "-" + std::to_string(indices[j]);
    ++runs;
    i = j + 1;
  }
  return out;
}

json merge_reports(const std::vector<MergeInput>& inputs, const MergeOptions& options) {
  if (inputs.empty()) throw InputError("merge: no reports to merge");
  for (const MergeInput& in : inputs) check_report_shape(in);
  const MergeInput& first = inputs.front();
  for (const MergeInput& in : inputs) check_same_run(first, in);

  json merged = first.report;
  bool partial = false;
  json sources = json::array();
  for (const MergeInput& in : inputs) {
    partial = partial || in.report.value("partial", false);
    sources.push_back(merged_from_entry(in));
  }
  json results = json::array();

  if (first.report.contains("sweep")) {
    const SweepShape first_shape = read_sweep(first);
    std::map<std::size_t, std::pair<const json*, const std::string*>> by_point;
    for (const MergeInput& in : inputs) {
      const SweepShape shape = read_sweep(in);
      if (*shape.points != *first_shape.points)
        throw InputError(in.source + ": not a shard of the same sweep as " + first.source +
                         " (sweep.points differ: " + std::to_string(shape.points->size()) +
                         " points vs " + std::to_string(first_shape.points->size()) + ")");
      for (std::size_t k = 0; k < shape.indices.size(); ++k) {
        const json& result = in.report["results"][k];
        const auto [it, inserted] =
            by_point.emplace(shape.indices[k], std::pair{&result, &in.source});
        if (!inserted && deterministic_part(*it->second.first) != deterministic_part(result))
          throw InputError(in.source + ": point " + std::to_string(shape.indices[k]) + " (" +
                           result["strategy"].get<std::string>() + ") has another result in " +
                           *it->second.second +
                           " (the same replay must give the same numbers; were they run on "
                           "different traces or alloclab versions?)");
      }
    }
    std::vector<std::size_t> missing, present;
    for (std::size_t p = 0; p < first_shape.points->size(); ++p)
      (by_point.count(p) ? present : missing).push_back(p);
    if (!missing.empty()) {
      if (!options.allow_partial)
        throw InputError("merge: " + std::to_string(missing.size()) + " of " +
                         std::to_string(first_shape.points->size()) +
                         " sweep points have no result: " + describe_indices(missing) +
                         " (merge the missing shards too, or pass --allow-partial)");
      partial = true;
    }
    for (const auto& [point, entry] : by_point) results.push_back(*entry.first);
    merged["sweep"]["shard"] = {{"index", 0}, {"count", 1}};
    merged["sweep"]["point_indices"] = present;
  } else {
    // A strategy given by several inputs (the same report twice, or overlapping replays) is
    // kept once, as a point of a sweep is: two rows with one spec could not be told apart.
    std::map<std::string, std::pair<const json*, const std::string*>> by_strategy;
    for (const MergeInput& in : inputs)
      for (const json& result : in.report["results"]) {
        const std::string strategy = result["strategy"].get<std::string>();
        const auto [it, inserted] = by_strategy.emplace(strategy, std::pair{&result, &in.source});
        if (inserted) {
          results.push_back(result);
        } else if (deterministic_part(*it->second.first) != deterministic_part(result)) {
          throw InputError(in.source + ": strategy " + strategy + " has another result in " +
                           *it->second.second +
                           " (the same replay must give the same numbers; were they run with "
                           "other options, on different traces or alloclab versions?)");
        }
      }
  }

  merged["results"] = std::move(results);
  merged["partial"] = partial;
  merged["merged_from"] = std::move(sources);
  if (!options.command_line.empty()) merged["command_line"] = options.command_line;
  return merged;
}

nlohmann::json read_report_file(const std::string& path) {
  refuse_directory(path);
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot open");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for 1e999
    throw InputError(path + ": not JSON (" + e.what() + ")");
  }
}

}  // namespace alloclab
