#include "replay_table.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

#include "cli_common.hpp"

namespace alloclab::cli {

namespace {

// Real replay: strategy allocate p50/p99, and the total of allocate (+ touch with --touch).
std::string timing_columns(const StrategyResult& r) {
  const auto at = [&](const char* name) {
    const auto it = r.latency.find(name);
    return it == r.latency.end() ? LatencySummary{} : it->second;
  };
  const LatencySummary alloc = at("strategy_allocate"), touch = at("touch");
  char text[96];
  std::snprintf(text, sizeof text, " %19s %12s",
                (human_duration(alloc.p50_ns) + "/" + human_duration(alloc.p99_ns)).c_str(),
                human_duration(alloc.total_ns + touch.total_ns).c_str());
  return text;
}

}  // namespace

void print_results_table(const std::vector<StrategyResult>& results) {
  std::size_t width = 8;
  bool timed = false, modelled = false;
  for (const StrategyResult& r : results) {
    width = std::max(width, r.strategy.size());
    timed = timed || !r.latency.empty();
    modelled = modelled || r.modelled.has_value();
  }
  const int w = static_cast<int>(std::min<std::size_t>(width, 48));
  std::printf("%-*s %12s %8s %11s %11s %10s %12s %13s %8s %12s %12s", w, "strategy", "requests",
              "hit rate", "up allocs", "up frees", "evictions", "peak live", "peak reserved",
              "res/live", "slack", "final cached");
  if (timed) std::printf(" %19s %12s", "alloc p50/p99", "alloc total");
  if (modelled) std::printf(" %14s", "modelled time");
  std::printf("\n");
  for (const StrategyResult& r : results) {
    const Metrics& m = r.metrics;
    const double ratio = m.peak_live_bytes ? static_cast<double>(m.peak_reserved_bytes) /
                                                 static_cast<double>(m.peak_live_bytes)
                                           : 0.0;
    std::printf("%-*s %12s %7.2f%% %11s %11s %10s %12s %13s %7.2fx %12s %12s", w,
                r.strategy.c_str(), grouped(m.requests).c_str(), 100.0 * m.hit_rate(),
                grouped(m.upstream_allocs).c_str(), grouped(m.upstream_frees).c_str(),
                grouped(m.evictions).c_str(), human_bytes(m.peak_live_bytes).c_str(),
                human_bytes(m.peak_reserved_bytes).c_str(), ratio,
                human_bytes(m.slack_bytes).c_str(), human_bytes(m.final_cached_bytes).c_str());
    if (timed) std::printf("%s", timing_columns(r).c_str());
    if (modelled)
      std::printf(" %14s", r.modelled ? human_duration(r.modelled->total()).c_str() : "");
    std::printf("\n");
    if (m.failed_requests)
      std::printf("%-*s   ^ %s requests failed (upstream out of memory)\n", w, "",
                  grouped(m.failed_requests).c_str());
  }
}

}  // namespace alloclab::cli
