#include "alloclab/replay/report_table.hpp"

#include <cstdio>
#include <string>

#include "alloclab/format/text_table.hpp"
#include "alloclab/format/units.hpp"

namespace alloclab {

namespace {

std::string percent_cell(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f%%", 100.0 * fraction);
  return text;
}

std::string ratio_cell(double ratio) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2fx", ratio);
  return text;
}

}  // namespace

void print_results_table(const std::vector<StrategyResult>& results) {
  bool timed = false, modelled = false;
  for (const StrategyResult& r : results) {
    timed = timed || !r.latency.empty();
    modelled = modelled || r.modelled.has_value();
  }
  using Align = TextTable::Align;
  std::vector<TextTable::Column> columns = {{"strategy", Align::left},
                                            {"requests"},
                                            {"hit rate"},
                                            {"up allocs"},
                                            {"up frees"},
                                            {"evictions"},
                                            {"peak live"},
                                            {"peak reserved"},
                                            {"res/live"},
                                            {"slack"},
                                            {"final cached"}};
  // Real replay: strategy allocate p50/p99, and the total of allocate (+ touch with --touch).
  if (timed) columns.insert(columns.end(), {{"alloc p50/p99"}, {"alloc total"}});
  if (modelled) columns.push_back({"modelled time"});
  TextTable table(std::move(columns));
  for (const StrategyResult& r : results) {
    const Metrics& m = r.metrics;
    const double ratio = m.peak_live_bytes ? static_cast<double>(m.peak_reserved_bytes) /
                                                 static_cast<double>(m.peak_live_bytes)
                                           : 0.0;
    std::vector<std::string> row = {r.strategy,
                                    grouped(m.requests),
                                    percent_cell(m.hit_rate()),
                                    grouped(m.upstream_allocs),
                                    grouped(m.upstream_frees),
                                    grouped(m.evictions),
                                    human_bytes(m.peak_live_bytes),
                                    human_bytes(m.peak_reserved_bytes),
                                    ratio_cell(ratio),
                                    human_bytes(m.slack_bytes),
                                    human_bytes(m.final_cached_bytes)};
    if (timed) {
      const auto at = [&](const char* name) {
        const auto it = r.latency.find(name);
        return it == r.latency.end() ? LatencySummary{} : it->second;
      };
      const LatencySummary alloc = at("strategy_allocate"), touch = at("touch");
      row.push_back(human_duration(alloc.p50_ns) + "/" + human_duration(alloc.p99_ns));
      row.push_back(human_duration(alloc.total_ns + touch.total_ns));
    }
    if (modelled) row.push_back(r.modelled ? human_duration(r.modelled->total()) : "");
    table.add_row(std::move(row));
    if (m.failed_requests)
      table.add_note(
          "^ " + counted(m.failed_requests, "request") + " failed (upstream out of memory)", 1);
  }
  table.print();
}

}  // namespace alloclab
