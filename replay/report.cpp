#include "alloclab/replay/report.hpp"

#include <algorithm>
#include <functional>
#include <ostream>
#include <string>
#include <thread>
#include <unordered_map>

#include <sys/utsname.h>
#include <unistd.h>

#include "alloclab/format/error.hpp"
#include "alloclab/format/output_files.hpp"
#include "alloclab/replay/first_failure.hpp"
#include "report_fields.hpp"

namespace alloclab {
namespace {

// The metric keys of docs/strategy-contract.md, in the order tables and CSV show them.
const std::vector<std::string>& metric_keys() {
  static const std::vector<std::string> keys = {"requests",
                                                "hits",
                                                "misses",
                                                "hit_rate",
                                                "upstream_allocs",
                                                "upstream_frees",
                                                "evictions",
                                                "peak_live_bytes",
                                                "peak_reserved_bytes",
                                                "final_cached_bytes",
                                                "slack_bytes",
                                                "failed_requests"};
  return keys;
}

using report_fields::read_optional_u64;
using report_fields::read_u64;

}  // namespace

std::string json_text(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

void write_json(std::ostream& out, const nlohmann::json& j, int indent) {
  // What `out << std::setw(indent) << j` does, with the error handler it does not take.
  nlohmann::detail::serializer<nlohmann::json> writer(
      nlohmann::detail::output_adapter<char>(out), ' ', nlohmann::json::error_handler_t::replace);
  writer.dump(j, indent >= 0, false, static_cast<unsigned int>(std::max(indent, 0)));
}

void write_json_file(const std::string& path, const nlohmann::json& j) {
  // Streamed, not dump()ed: a report of a 100M-event trace would be a gigabyte-sized string.
  write_output(path, [&](std::ostream& out) {
    write_json(out, j, 1);
    out << '\n';
  });
}

nlohmann::json metrics_json(const Metrics& m) {
  return {{"requests", m.requests},
          {"hits", m.hits},
          {"misses", m.misses},
          {"hit_rate", m.hit_rate()},
          {"upstream_allocs", m.upstream_allocs},
          {"upstream_frees", m.upstream_frees},
          {"evictions", m.evictions},
          {"peak_live_bytes", m.peak_live_bytes},
          {"peak_reserved_bytes", m.peak_reserved_bytes},
          {"final_cached_bytes", m.final_cached_bytes},
          {"slack_bytes", m.slack_bytes},
          {"failed_requests", m.failed_requests}};
}

nlohmann::json run_json(const RunMetrics& run) {
  nlohmann::json j = {
      {"label", run.label},
      {"requests", run.requests},
      {"hits", run.hits},
      {"hit_rate",
       run.requests ? static_cast<double>(run.hits) / static_cast<double>(run.requests) : 0.0},
      {"upstream_allocs", run.upstream_allocs},
      {"upstream_frees", run.upstream_frees},
      {"evictions", run.evictions},
      {"peak_live_bytes", run.peak_live_bytes},
      {"peak_reserved_bytes", run.peak_reserved_bytes},
      {"slack_bytes", run.slack_bytes}};
  if (run.allocation_time_ns) j["allocation_time_ns"] = *run.allocation_time_ns;
  return j;
}

nlohmann::json result_json(const StrategyResult& r, bool with_runs) {
  nlohmann::json out = {{"strategy", r.strategy}};
  out.update(metrics_json(r.metrics));
  nlohmann::json runs = nlohmann::json::array();
  if (with_runs)
    for (const RunMetrics& run : r.runs) runs.push_back(run_json(run));
  out["runs"] = std::move(runs);
  nlohmann::json series = {
      {"first_op", nlohmann::json::array()},     {"time_ns", nlohmann::json::array()},
      {"live_min", nlohmann::json::array()},     {"live_max", nlohmann::json::array()},
      {"reserved_min", nlohmann::json::array()}, {"reserved_max", nlohmann::json::array()}};
  for (const SeriesPoint& p : r.series) {
    series["first_op"].push_back(p.first_op);
    series["time_ns"].push_back(p.time_ns);
    series["live_min"].push_back(p.live_min);
    series["live_max"].push_back(p.live_max);
    series["reserved_min"].push_back(p.reserved_min);
    series["reserved_max"].push_back(p.reserved_max);
  }
  out["series"] = std::move(series);
  out["timing"] = {{"wall_seconds", r.wall_seconds}};
  if (!r.latency.empty()) {  // real replay
    nlohmann::json latency = nlohmann::json::object();
    for (const auto& [name, l] : r.latency) {
      nlohmann::json histogram = nlohmann::json::array();
      for (const auto& [high, n] : l.histogram) histogram.push_back({high, n});
      latency[name] = {{"count", l.count},       {"p50_ns", l.p50_ns},
                       {"p90_ns", l.p90_ns},     {"p99_ns", l.p99_ns},
                       {"p999_ns", l.p999_ns},   {"max_ns", l.max_ns},
                       {"total_ns", l.total_ns}, {"histogram", std::move(histogram)}};
    }
    out["latency"] = std::move(latency);
    out["wall_seconds"] = r.wall_seconds;
  }
  if (r.modelled)
    out["modelled_ns"] = {{"upstream_allocate", r.modelled->upstream_allocate},
                          {"upstream_deallocate", r.modelled->upstream_deallocate},
                          {"hits", r.modelled->hits},
                          {"total", r.modelled->total()}};
  if (!r.strategy_counters.empty()) out["strategy_counters"] = r.strategy_counters;
  if (r.first_failure) {
    out["stopped_at_first_failure"] = r.stopped_at_first_failure;
    out["first_failure"] = first_failure_json(*r.first_failure);
  }
  if (r.empty_cache_calls) out["empty_cache_calls"] = *r.empty_cache_calls;
  if (r.fidelity) out["fidelity"] = fidelity_json(*r.fidelity);
  if (!r.device.empty()) out["device"] = r.device;
  if (r.peak_device_bytes) out["peak_device_bytes"] = *r.peak_device_bytes;
  if (r.runs_not_listed) out["runs_not_listed"] = *r.runs_not_listed;
  if (!r.sites.is_null()) out["sites"] = r.sites;
  return out;
}

// The `fidelity` section of docs/report-schema.md.
nlohmann::json fidelity_json(const Fidelity& f) {
  const auto calls = [](std::uint64_t allocs, std::uint64_t alloc_bytes, std::uint64_t frees,
                        std::uint64_t free_bytes) {
    return nlohmann::json{{"allocs", allocs},
                          {"alloc_bytes", alloc_bytes},
                          {"frees", frees},
                          {"free_bytes", free_bytes}};
  };
  nlohmann::json out = {
      {"recorded",
       calls(f.recorded_allocs, f.recorded_alloc_bytes, f.recorded_frees, f.recorded_free_bytes)},
      {"model", calls(f.model_allocs, f.model_alloc_bytes, f.model_frees, f.model_free_bytes)},
      {"matched_allocs", f.matched_allocs},
      {"matched_frees", f.matched_frees},
      {"diverging_points", f.diverging_points},
      {"all_matched", f.all_matched()},
      {"first_divergence", nullptr}};
  if (const auto& d = f.first_divergence) {
    nlohmann::json recorded = nullptr;
    if (d->recorded_size) recorded = {{"action", d->recorded_action}, {"size", *d->recorded_size}};
    out["first_divergence"] = {{"at", d->at},
                               {"op", d->op},
                               {"event", report_fields::optional_json(d->event)},
                               {"time_ns", d->time_ns},
                               {"device", device_name(d->device)},
                               {"stream", d->stream},
                               {"request_size", d->request_size},
                               {"calls", d->frees ? "frees" : "allocs"},
                               {"recorded", std::move(recorded)},
                               {"model_size", report_fields::optional_json(d->model_size)},
                               {"what", d->what}};
  }
  return out;
}

namespace {

// Optional (older reports lack it). When present it must be what the writer makes, because the
// GUI draws bars and a CDF from it: ascending bounds, counts adding up to `count`.
std::vector<std::pair<std::uint64_t, std::uint64_t>> read_histogram(const nlohmann::json& h,
                                                                    std::uint64_t count,
                                                                    const std::string& where) {
  if (!h.is_array()) throw InputError(where + ": 'histogram' is not an array");
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  std::uint64_t sum = 0;
  for (const nlohmann::json& b : h) {
    if (!b.is_array() || b.size() != 2 || !b[0].is_number_unsigned() || !b[1].is_number_unsigned())
      throw InputError(where + ": histogram entry " + b.dump() +
                       " is not [upper_bound_ns, count] of non-negative integers");
    const auto high = b[0].get<std::uint64_t>();
    if (!out.empty() && high <= out.back().first)
      throw InputError(where + ": histogram bounds are not increasing at " + b.dump());
    out.emplace_back(high, b[1].get<std::uint64_t>());
    sum += out.back().second;
  }
  if (sum != count)
    throw InputError(where + ": histogram counts add up to " + std::to_string(sum) + ", not " +
                     std::to_string(count));
  return out;
}

}  // namespace

Metrics metrics_from_json(const nlohmann::json& j, const std::string& source) {
  Metrics m;
  m.requests = read_u64(j, "requests", source);
  m.hits = read_u64(j, "hits", source);
  m.misses = read_u64(j, "misses", source);
  m.upstream_allocs = read_u64(j, "upstream_allocs", source);
  m.upstream_frees = read_u64(j, "upstream_frees", source);
  m.evictions = read_u64(j, "evictions", source);
  m.peak_live_bytes = read_u64(j, "peak_live_bytes", source);
  m.peak_reserved_bytes = read_u64(j, "peak_reserved_bytes", source);
  m.final_cached_bytes = read_u64(j, "final_cached_bytes", source);
  m.slack_bytes = read_u64(j, "slack_bytes", source);
  m.failed_requests = j.contains("failed_requests") ? read_u64(j, "failed_requests", source) : 0;
  if (m.hits > m.requests || m.misses != m.requests - m.hits)
    throw InputError(source + ": report has inconsistent requests/hits/misses");
  return m;
}

StrategyResult result_from_json(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object() || !j.contains("strategy") || !j["strategy"].is_string())
    throw InputError(source + ": result without a 'strategy' string");
  StrategyResult r;
  r.strategy = j["strategy"].get<std::string>();
  r.metrics = metrics_from_json(j, source + ", strategy '" + r.strategy + "'");
  if (j.contains("runs") && j["runs"].is_array())
    for (const nlohmann::json& run : j["runs"]) {
      RunMetrics m;
      if (!run.is_object()) throw InputError(source + ": a 'runs' entry is not an object");
      if (const auto label = run.find("label"); label != run.end()) {
        if (!label->is_string()) throw InputError(source + ": a run's 'label' is not a string");
        m.label = label->get<std::string>();
      }
      const std::string where = source + ", run '" + m.label + "'";
      m.requests = read_u64(run, "requests", where);
      m.hits = read_u64(run, "hits", where);
      m.upstream_allocs = read_u64(run, "upstream_allocs", where);
      m.upstream_frees = read_u64(run, "upstream_frees", where);
      m.evictions = read_u64(run, "evictions", where);
      m.peak_live_bytes = read_u64(run, "peak_live_bytes", where);
      m.peak_reserved_bytes = read_u64(run, "peak_reserved_bytes", where);
      m.slack_bytes = read_u64(run, "slack_bytes", where);
      if (run.contains("allocation_time_ns"))
        m.allocation_time_ns = read_u64(run, "allocation_time_ns", where);
      r.runs.push_back(std::move(m));
    }
  if (j.contains("series") && j["series"].is_object()) {
    const nlohmann::json& s = j["series"];
    const auto first_op = s.find("first_op");
    if (first_op != s.end() && !first_op->is_array())
      throw InputError(source + ": series column 'first_op' is not a list");
    const std::size_t n = first_op != s.end() ? first_op->size() : 0;
    for (const char* key : {"time_ns", "live_min", "live_max", "reserved_min", "reserved_max"})
      if (!s.contains(key) || !s[key].is_array() || s[key].size() != n)
        throw InputError(source + ": series column '" + key + "' is missing or of another length");
    const auto at = [&](const char* key, std::size_t i) {
      const nlohmann::json& value = s[key][i];
      if (!value.is_number_unsigned())
        throw InputError(source + ": series column '" + key + "' holds a " + value.type_name() +
                         ", not a non-negative integer");
      return value.get<std::uint64_t>();
    };
    for (std::size_t i = 0; i < n; ++i)
      r.series.push_back(SeriesPoint{at("first_op", i), at("time_ns", i), at("live_min", i),
                                     at("live_max", i), at("reserved_min", i),
                                     at("reserved_max", i)});
  }
  if (j.contains("timing") && j["timing"].contains("wall_seconds")) {
    const nlohmann::json& wall = j["timing"]["wall_seconds"];
    if (!wall.is_number()) throw InputError(source + ": 'timing.wall_seconds' is not a number");
    r.wall_seconds = wall.get<double>();
  }
  if (j.contains("latency") && j["latency"].is_object())
    for (const auto& [name, l] : j["latency"].items()) {
      const std::string where = source + ", latency '" + name + "'";
      r.latency[name] = LatencySummary{read_u64(l, "count", where),    read_u64(l, "p50_ns", where),
                                       read_u64(l, "p90_ns", where),   read_u64(l, "p99_ns", where),
                                       read_u64(l, "p999_ns", where),  read_u64(l, "max_ns", where),
                                       read_u64(l, "total_ns", where), {}};
      if (l.contains("histogram"))
        r.latency[name].histogram = read_histogram(l["histogram"], r.latency[name].count, where);
    }
  if (j.contains("modelled_ns") && j["modelled_ns"].is_object()) {
    const nlohmann::json& m = j["modelled_ns"];
    const std::string where = source + ", modelled_ns";
    r.modelled =
        ModelledTime{read_u64(m, "upstream_allocate", where),
                     read_u64(m, "upstream_deallocate", where), read_u64(m, "hits", where)};
  }
  if (const auto counters = j.find("strategy_counters"); counters != j.end()) {
    const std::string where = source + ", strategy_counters";
    if (!counters->is_object()) throw InputError(where + ": not an object");
    for (const auto& [name, value] : counters->items())
      r.strategy_counters[name] = read_u64(*counters, name.c_str(), where);
  }
  if (const auto failure = j.find("first_failure"); failure != j.end()) {
    r.first_failure = first_failure_from_json(*failure, source + ", first_failure");
    const auto stopped = j.find("stopped_at_first_failure");
    if (stopped == j.end() || !stopped->is_boolean())
      throw InputError(source +
                       ": a result with 'first_failure' needs a boolean "
                       "'stopped_at_first_failure'");
    r.stopped_at_first_failure = stopped->get<bool>();
  }
  // Both optional: reports of traces without segment calls, and older reports, lack them.
  if (j.contains("empty_cache_calls"))
    r.empty_cache_calls = read_u64(j, "empty_cache_calls", source);
  if (const auto device = j.find("device"); device != j.end()) {
    if (!device->is_string()) throw InputError(source + ": a result's 'device' is not a string");
    r.device = device->get<std::string>();
  }
  if (j.contains("peak_device_bytes"))
    r.peak_device_bytes = read_u64(j, "peak_device_bytes", source);
  if (j.contains("runs_not_listed")) r.runs_not_listed = read_u64(j, "runs_not_listed", source);
  if (j.contains("fidelity"))
    r.fidelity = fidelity_from_json(j["fidelity"], source + ", strategy '" + r.strategy + "'");
  if (const auto sites = j.find("sites"); sites != j.end()) {
    // Kept as written: the sites are read by the front ends that show them, not recomputed.
    if (!sites->is_array())
      throw InputError(source + ": strategy '" + r.strategy + "': 'sites' is not an array");
    r.sites = *sites;
  }
  return r;
}

namespace {

std::string read_text(const nlohmann::json& j, const char* key, const std::string& where) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_string())
    throw InputError(where + ": key '" + key + "' is missing or not a string");
  return it->get<std::string>();
}

}  // namespace

Fidelity fidelity_from_json(const nlohmann::json& j, const std::string& source) {
  const std::string where = source + ", fidelity";
  if (!j.is_object()) throw InputError(where + ": not an object");
  const auto part = [&](const char* key) -> const nlohmann::json& {
    if (!j.contains(key) || !j[key].is_object())
      throw InputError(where + ": key '" + key + "' is missing or not an object");
    return j[key];
  };
  Fidelity f;
  const nlohmann::json& recorded = part("recorded");
  const nlohmann::json& model = part("model");
  const std::string recorded_where = where + ".recorded", model_where = where + ".model";
  f.recorded_allocs = read_u64(recorded, "allocs", recorded_where);
  f.recorded_alloc_bytes = read_u64(recorded, "alloc_bytes", recorded_where);
  f.recorded_frees = read_u64(recorded, "frees", recorded_where);
  f.recorded_free_bytes = read_u64(recorded, "free_bytes", recorded_where);
  f.model_allocs = read_u64(model, "allocs", model_where);
  f.model_alloc_bytes = read_u64(model, "alloc_bytes", model_where);
  f.model_frees = read_u64(model, "frees", model_where);
  f.model_free_bytes = read_u64(model, "free_bytes", model_where);
  f.matched_allocs = read_u64(j, "matched_allocs", where);
  f.matched_frees = read_u64(j, "matched_frees", where);
  f.diverging_points = read_u64(j, "diverging_points", where);
  if (j.contains("first_divergence") && !j["first_divergence"].is_null()) {
    const nlohmann::json& d = j["first_divergence"];
    const std::string at = where + ".first_divergence";
    if (!d.is_object()) throw InputError(at + ": not an object");
    FidelityDivergence out;
    out.at = read_text(d, "at", at);
    out.op = read_u64(d, "op", at);
    out.event = read_optional_u64(d, "event", at);
    out.time_ns = read_u64(d, "time_ns", at);
    const std::string device = read_text(d, "device", at);
    const std::optional<DeviceId> parsed = parse_device(device);
    if (!parsed) throw InputError(at + ": 'device' " + device + " is not cpu or cuda:N");
    out.device = *parsed;
    out.stream = read_u64(d, "stream", at);
    out.request_size = read_u64(d, "request_size", at);
    const std::string calls = read_text(d, "calls", at);
    if (calls != "allocs" && calls != "frees")
      throw InputError(at + ": 'calls' is '" + calls + "', not allocs or frees");
    out.frees = calls == "frees";
    if (d.contains("recorded") && !d["recorded"].is_null()) {
      const nlohmann::json& rec = d["recorded"];
      if (!rec.is_object()) throw InputError(at + ": 'recorded' is not an object or null");
      out.recorded_action = read_text(rec, "action", at + ".recorded");
      out.recorded_size = read_u64(rec, "size", at + ".recorded");
    }
    out.model_size = read_optional_u64(d, "model_size", at);
    out.what = read_text(d, "what", at);
    f.first_divergence = std::move(out);
  }
  if (f.matched_allocs > f.recorded_allocs || f.matched_allocs > f.model_allocs ||
      f.matched_frees > f.recorded_frees || f.matched_frees > f.model_frees)
    throw InputError(where + ": more calls matched than were made");
  if ((f.diverging_points == 0) != !f.first_divergence)
    throw InputError(where + ": 'diverging_points' and 'first_divergence' disagree");
  return f;
}

nlohmann::json machine_json() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  struct utsname name = {};
  ::uname(&name);
  return {{"host", host},
          {"cores", std::thread::hardware_concurrency()},
          {"os", std::string(name.sysname) + " " + name.release},
          {"arch", name.machine}};
}

namespace {

nlohmann::json report_json(const TraceSummary& trace, const std::vector<StrategyResult>& results,
                           const ReportContext& context, bool with_runs) {
  nlohmann::json out = {{"schema_version", report_schema_version},
                        {"tool", {{"name", "alloclab"}, {"version", ALLOCLAB_VERSION}}},
                        {"machine", machine_json()},
                        {"mode", context.mode},
                        {"command_line", context.command_line},
                        {"partial", context.partial},
                        {"trace", to_json(trace, with_runs)}};
  if (context.mode == "real") {
    out["upstream"] = context.upstream;
    out["touch"] = context.touch;
    out["timing_mode"] = context.timing;
  }
  if (context.mode == "live") out["program"] = context.program;
  nlohmann::json list = nlohmann::json::array();
  for (const StrategyResult& r : results) list.push_back(result_json(r, with_runs));
  out["results"] = std::move(list);
  return out;
}

// An array of the document that is written from a list, one entry made at a time.
struct DeferredArray {
  std::size_t size = 0;
  std::function<nlohmann::json(std::size_t)> make;
};
using DeferredArrays = std::unordered_map<const nlohmann::json*, DeferredArray>;

// nlohmann::json's pretty printer with an indent of one space (what `out << std::setw(1) << j`
// does), except for the deferred arrays.
void write_pretty(std::ostream& out, const nlohmann::json& j, std::size_t indent,
                  const DeferredArrays& deferred) {
  const std::string inner(indent + 1, ' ');
  if (j.is_object()) {
    if (j.empty()) {
      out << "{}";
      return;
    }
    out << "{\n";
    std::size_t left = j.size();
    for (auto it = j.begin(); it != j.end(); ++it) {
      out << inner;
      write_json(out, nlohmann::json(it.key()));
      out << ": ";
      write_pretty(out, it.value(), indent + 1, deferred);
      out << (--left ? ",\n" : "\n");
    }
    out << std::string(indent, ' ') << '}';
    return;
  }
  if (!j.is_array()) {
    write_json(out, j);
    return;
  }
  const auto found = deferred.find(&j);
  const std::size_t size = found != deferred.end() ? found->second.size : j.size();
  if (size == 0) {
    out << "[]";
    return;
  }
  out << "[\n";
  for (std::size_t i = 0; i < size; ++i) {
    out << inner;
    if (found != deferred.end())
      write_pretty(out, found->second.make(i), indent + 1, deferred);
    else
      write_pretty(out, j[i], indent + 1, deferred);
    out << (i + 1 < size ? ",\n" : "\n");
  }
  out << std::string(indent, ' ') << ']';
}

}  // namespace

nlohmann::json make_report(const TraceSummary& trace, const std::vector<StrategyResult>& results,
                           const ReportContext& context) {
  return report_json(trace, results, context, true);
}

void write_report_file(const std::string& path, const TraceSummary& trace,
                       const std::vector<StrategyResult>& results, const ReportContext& context) {
  write_output(path, [&](std::ostream& out) {
    write_report(out, trace, results, context);
    out << '\n';
  });
}

void write_report(std::ostream& out, const TraceSummary& trace,
                  const std::vector<StrategyResult>& results, const ReportContext& context) {
  const nlohmann::json skeleton = report_json(trace, results, context, false);
  DeferredArrays deferred;
  deferred[&skeleton["trace"]["runs"]] = {trace.runs.size(),
                                          [&](std::size_t i) { return to_json(trace.runs[i]); }};
  for (std::size_t k = 0; k < results.size(); ++k)
    deferred[&skeleton["results"][k]["runs"]] = {
        results[k].runs.size(), [&, k](std::size_t i) { return run_json(results[k].runs[i]); }};
  write_pretty(out, skeleton, 0, deferred);
}

void write_results_csv(std::ostream& out, const std::vector<StrategyResult>& results) {
  out << "strategy";
  for (const std::string& key : metric_keys()) out << ',' << key;
  out << '\n';
  for (const StrategyResult& r : results) {
    const nlohmann::json m = metrics_json(r.metrics);
    std::string quoted = "\"";
    for (char c : r.strategy) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    out << quoted << '"';
    for (const std::string& key : metric_keys()) {
      out << ',';
      write_json(out, m[key]);
    }
    out << '\n';
  }
}

}  // namespace alloclab
