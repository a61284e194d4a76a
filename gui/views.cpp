#include "views.hpp"

namespace alloclab::gui {

const char* view_name(View view) {
  switch (view) {
    case View::overview:
      return "overview";
    case View::tradeoff:
      return "tradeoff";
    case View::hit_rate:
      return "hit-rate";
    case View::latency:
      return "latency";
    case View::memory:
      return "memory";
    case View::runs:
      return "runs";
    case View::segments:
      return "segments";
    case View::flame:
      return "flame";
    case View::trace:
      return "trace";
    case View::sweep:
      return "sweep";
    case View::diff:
      return "diff";
  }
  return "overview";
}

const char* view_title(View view) {
  switch (view) {
    case View::overview:
      return "Overview";
    case View::tradeoff:
      return "Trade-off";
    case View::hit_rate:
      return "Hit rate";
    case View::latency:
      return "Latency";
    case View::memory:
      return "Memory over time";
    case View::runs:
      return "Runs";
    case View::segments:
      return "Segments";
    case View::flame:
      return "Flame";
    case View::trace:
      return "Trace";
    case View::sweep:
      return "Sweep";
    case View::diff:
      return "Diff";
  }
  return "Overview";
}

std::string view_names() {
  std::string names;
  for (View v : all_views) names += (names.empty() ? "" : ", ") + std::string(view_name(v));
  return names;
}

std::optional<View> parse_view(std::string_view name) {
  if (name == "hitrate" || name == "hit_rate") return View::hit_rate;
  if (name == "trade-off") return View::tradeoff;
  for (View v : all_views)
    if (name == view_name(v)) return v;
  return std::nullopt;
}

}  // namespace alloclab::gui
