// Flame: where the program allocates, as an icicle of its call stacks (callers on top). A box is
// as wide as what the allocations made through its chain of callers hold or cost: live bytes at
// a time picked on a slider (the peak by default), allocations, requested bytes, or one
// strategy's misses, upstream bytes, slack or evictions. Two strategies make a difference graph.
// A click on a box draws the live bytes of that site's allocations in the Memory view.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <future>

#include "alloclab/format/text_table.hpp"
#include "alloclab/format/units.hpp"
#include "alloclab/replay/sites.hpp"
#include "flame.hpp"
#include "ui_registry.hpp"
#include "views.hpp"

namespace alloclab::gui {

struct FlameView {
  std::shared_ptr<const TraceDoc> trace;
  const ReportDoc* report = nullptr;
  std::vector<std::string> specs;  // the current report's strategies
  // The trace's own numbers at `at` (no strategy), and the strategies' once replayed.
  std::optional<std::uint64_t> at_op;  // unset: the peak
  std::optional<SitesResult> trace_sites;
  std::future<SitesResult> pending;
  std::optional<SitesResult> strategy_sites;
  std::string error;
  // What the graph was built from, to rebuild it only when that changes.
  std::string built_for;
  FlameGraph graph;
  int hovered = -1;
  int selected = -1;  // the node of ViewState::flame_filter in `graph`, -1: none
};

bool flame_busy(const ViewState& state) {
  return state.flame && state.flame->pending.valid();
}

namespace {

constexpr float kRowHeight = 20.0f;
constexpr std::size_t kMaxTrackedBoxes = 400;  // named for scripts; more is noise

Unit metric_unit(SiteMetric metric) {
  return metric == SiteMetric::allocations || metric == SiteMetric::misses ||
                 metric == SiteMetric::evictions
             ? Unit::count
             : Unit::bytes;
}

// "live bytes", "upstream bytes": the metric as the caption and tooltip say it.
std::string metric_words(SiteMetric metric) {
  switch (metric) {
    case SiteMetric::live:
      return "live bytes";
    case SiteMetric::bytes:
      return "requested bytes";
    case SiteMetric::slack:
      return "slack bytes";
    case SiteMetric::upstream_bytes:
      return "upstream bytes";
    default:
      return std::string(to_string(metric));
  }
}

std::vector<double> values_of(const SitesResult& sites, SiteMetric metric, std::size_t spec) {
  std::vector<double> values(sites.stacks.size());
  for (std::size_t s = 0; s < sites.stacks.size(); ++s)
    values[s] = static_cast<double>(metric_value(sites.stacks[s], metric, spec));
  return values;
}

// A warm colour per name (flamegraph.pl's palette), the same on every frame and run.
ImU32 name_color(const std::string& name, float alpha) {
  std::uint32_t h = 2166136261u;
  for (const char c : name) h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
  const int r = 205 + static_cast<int>(h % 50);
  const int g = 80 + static_cast<int>((h >> 8) % 130);
  const int b = 30 + static_cast<int>((h >> 16) % 40);
  return IM_COL32(r, g, b, static_cast<int>(alpha * 255));
}

// Red where the first strategy has more, blue where the second has, grey where they agree.
ImU32 delta_color(double delta, double scale) {
  const double t = scale > 0 ? std::clamp(std::abs(delta) / scale, 0.0, 1.0) : 0.0;
  const int strong = 120 + static_cast<int>(135 * t);
  const int weak = 200 - static_cast<int>(150 * t);
  return delta > 0   ? IM_COL32(strong, weak, weak, 255)
         : delta < 0 ? IM_COL32(weak, weak, strong, 255)
                     : IM_COL32(190, 190, 190, 255);
}

// Keeps the view on the current trace and report; what belonged to another one is dropped.
void follow_model(FlameView& v, const Model& model) {
  const std::shared_ptr<const TraceDoc> trace = model.shared_trace();
  const ReportDoc* report = model.report();
  if (v.trace != trace) {
    v.trace = trace;
    v.trace_sites.reset();
    v.strategy_sites.reset();
    v.pending = {};
    v.built_for.clear();
    v.error.clear();
  }
  if (v.report != report) {
    v.report = report;
    v.specs.clear();
    if (report)
      for (const StrategyResult& r : report->results) v.specs.push_back(r.strategy);
    v.strategy_sites.reset();
    v.pending = {};
    v.built_for.clear();
  }
}

// The trace's own numbers after the first `done` operations (at the peak when unset).
SitesResult trace_tally(const TraceDoc& trace, std::optional<std::uint64_t> done) {
  SitesAt at;
  const std::vector<std::uint64_t>& times = trace.resolved.op_time_ns;
  if (done && *done > 0 && *done <= times.size()) {
    at.peak = false;
    at.time_ns = times[*done - 1] - std::min(times[*done - 1], times.front());
  }
  return tally_sites(*trace.stack_trace, trace.resolved, {}, at, ReplayOptions{}, 1);
}

std::string stack_hint(const TraceDoc& trace) {
  return "This trace has no call stacks (" + trace.path +
         "). Record them with `alloclab record --stacks 16 -o t.alt -- PROGRAM`, or open a "
         "PyTorch snapshot taken with stacks.";
}

}  // namespace

void draw_flame(const Model& model, ViewState& state) {
  if (!state.flame) state.flame = std::make_shared<FlameView>();
  FlameView& v = *state.flame;
  follow_model(v, model);
  state.table = {};
  if (!v.trace) {
    empty_hint("Nothing to show: open a trace recorded with call stacks (record --stacks N).");
    return;
  }
  if (!v.trace->stack_trace) {
    empty_hint(stack_hint(*v.trace).c_str());
    track_text("flame/hint", stack_hint(*v.trace));
    return;
  }
  const TraceDoc& trace = *v.trace;
  const std::uint64_t ops = trace.resolved.ops.size();

  // The metric; a strategy's only when a report of this trace is current.
  ImGui::SetNextItemWidth(150);
  if (ImGui::BeginCombo("##flame-metric", metric_words(state.flame_metric).c_str())) {
    for (const SiteMetric m : all_site_metrics()) {
      if (per_strategy(m) && v.specs.empty()) continue;
      if (ImGui::Selectable(metric_words(m).c_str(), m == state.flame_metric))
        state.flame_metric = m;
      track_item("flame-metric:" + std::string(to_string(m)));
    }
    ImGui::EndCombo();
  }
  track_item("flame-metric");
  if (per_strategy(state.flame_metric) && v.specs.empty()) state.flame_metric = SiteMetric::live;
  const bool by_strategy = per_strategy(state.flame_metric);

  if (by_strategy) {
    state.flame_strategy =
        std::clamp(state.flame_strategy, 0, static_cast<int>(v.specs.size()) - 1);
    if (state.flame_compare >= static_cast<int>(v.specs.size()) ||
        state.flame_compare == state.flame_strategy)
      state.flame_compare = -1;
    for (int side = 0; side < 2; ++side) {
      int& pick = side == 0 ? state.flame_strategy : state.flame_compare;
      ImGui::SameLine();
      ImGui::SetNextItemWidth(200);
      const char* id = side == 0 ? "##flame-strategy" : "##flame-compare";
      const std::string shown =
          pick >= 0 ? v.specs[static_cast<std::size_t>(pick)] : std::string("compare with: none");
      if (ImGui::BeginCombo(id, shown.c_str())) {
        if (side == 1 && ImGui::Selectable("compare with: none", pick < 0)) pick = -1;
        for (int i = 0; i < static_cast<int>(v.specs.size()); ++i) {
          if (side == 1 && i == state.flame_strategy) continue;
          if (ImGui::Selectable(v.specs[static_cast<std::size_t>(i)].c_str(), i == pick)) pick = i;
          track_item(std::string(side == 0 ? "flame-strategy:" : "flame-compare:") +
                     v.specs[static_cast<std::size_t>(i)]);
        }
        ImGui::EndCombo();
      }
      track_item(side == 0 ? "flame-strategy" : "flame-compare");
    }
  }

  // The time: the peak until the user picks an operation on the slider.
  if (state.flame_metric == SiteMetric::live && ops > 0) {
    ImGui::SameLine();
    if (named_button("Peak")) {
      v.at_op.reset();
      v.trace_sites.reset();
    }
    ImGui::SameLine();
    int position = static_cast<int>(v.at_op.value_or(v.trace_sites ? v.trace_sites->at_op : 0));
    ImGui::SetNextItemWidth(std::max(120.0f, ImGui::GetContentRegionAvail().x - 10));
    // "after operation N" counts operations done, as `alloclab sites` says it.
    const std::string label =
        v.trace_sites ? "after %d operations, " +
                            format_value(static_cast<double>(v.trace_sites->at_time_ns), Unit::ns) +
                            (v.at_op ? "" : " (peak)")
                      : std::string("after %d operations");
    if (v.trace_sites)
      track_text("flame/at",
                 string_printf("after %llu operations, ",
                               static_cast<unsigned long long>(v.trace_sites->at_op)) +
                     format_value(static_cast<double>(v.trace_sites->at_time_ns), Unit::ns) +
                     (v.at_op ? "" : " (peak)"));
    if (ImGui::SliderInt("##flame-at", &position, 0, static_cast<int>(ops), label.c_str()))
      v.at_op = static_cast<std::uint64_t>(position);
    track_item("flame-at");
    if (ImGui::IsItemDeactivatedAfterEdit()) v.trace_sites.reset();
  }

  // Counted once per point picked: on the slider's release, not while it is dragged.
  if (!v.trace_sites) v.trace_sites = trace_tally(trace, v.at_op);

  // The strategies' numbers come from replays, off the UI thread.
  if (by_strategy && !v.strategy_sites && !v.pending.valid() && v.error.empty()) {
    const std::shared_ptr<const TraceDoc> keep = v.trace;
    const std::vector<std::string> specs = v.specs;
    v.pending = std::async(std::launch::async, [keep, specs] {
      return tally_sites(*keep->stack_trace, keep->resolved, specs, SitesAt{}, ReplayOptions{}, 0);
    });
  }
  if (v.pending.valid() &&
      v.pending.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
    try {
      v.strategy_sites = v.pending.get();
    } catch (const std::exception& e) {
      v.error = e.what();
    }
    v.pending = {};
  }
  if (by_strategy && !v.error.empty()) {
    empty_hint(("The replay for this view failed: " + v.error).c_str());
    return;
  }
  if (by_strategy && !v.strategy_sites) {
    empty_hint("Replaying the report's strategies for their numbers per call site...");
    return;
  }

  const SitesResult& sites = by_strategy ? *v.strategy_sites : *v.trace_sites;
  const bool difference = by_strategy && state.flame_compare >= 0;
  const std::string key = std::string(to_string(state.flame_metric)) + "/" +
                          std::to_string(state.flame_strategy) + "/" +
                          std::to_string(state.flame_compare) + "/" + std::to_string(sites.at_op) +
                          "/" + (by_strategy ? "s" : "t");
  if (v.built_for != key) {
    const std::vector<double> first =
        values_of(sites, state.flame_metric, static_cast<std::size_t>(state.flame_strategy));
    std::vector<double> second;
    if (difference)
      second = values_of(sites, state.flame_metric, static_cast<std::size_t>(state.flame_compare));
    v.graph = build_flame(v.trace->stack_trace->frames(), v.trace->stack_trace->stacks(), first,
                          difference ? &second : nullptr);
    v.built_for = key;
    // The clicked chain keeps its box in the new graph, found once here rather than per frame.
    v.selected = -1;
    if (!state.flame_filter.empty())
      for (std::uint32_t n = 1; n < v.graph.nodes.size() && v.selected < 0; ++n)
        if (flame_path(v.graph, n) == state.flame_filter) v.selected = static_cast<int>(n);
  }
  const FlameGraph& g = v.graph;
  const Unit unit = metric_unit(state.flame_metric);
  const double total = g.nodes[0].value;

  std::string caption = metric_words(state.flame_metric);
  if (by_strategy) caption += " under " + v.specs[static_cast<std::size_t>(state.flame_strategy)];
  if (difference)
    caption += " against " + v.specs[static_cast<std::size_t>(state.flame_compare)] +
               " (red: more under the first, blue: more under the second)";
  caption += ": " + format_exact(total, unit) + " in all";
  if (!state.flame_filter.empty()) caption += "; Memory view shows " + state.flame_filter;
  ImGui::TextUnformatted(caption.c_str());
  track_text("flame/caption", caption);
  if (total <= 0) {
    empty_hint("No allocation has any of this: nothing to draw.");
    return;
  }

  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  const float width = std::max(100.0f, ImGui::GetContentRegionAvail().x);
  const float height =
      std::max(kRowHeight * static_cast<float>(g.depth + 1), ImGui::GetContentRegionAvail().y - 4);
  ImGui::InvisibleButton("##flame", ImVec2(width, height));
  track_item("chart:flame");
  const bool hovered = ImGui::IsItemHovered();
  const bool clicked = ImGui::IsItemClicked(ImGuiMouseButton_Left);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  draw->PushClipRect(p0, ImVec2(p0.x + width, p0.y + height), true);
  const double scale = width / total;
  double delta_scale = 0;
  if (difference)
    for (const FlameNode& n : g.nodes) delta_scale = std::max(delta_scale, std::abs(n.delta));
  const ImVec2 mouse = ImGui::GetMousePos();
  int under_mouse = -1;
  std::size_t tracked = 0;
  // Depth-first over boxes at least a pixel wide: narrower ones and their callees are not drawn.
  std::vector<std::uint32_t> todo = {0};
  while (!todo.empty()) {
    const std::uint32_t n = todo.back();
    todo.pop_back();
    const FlameNode& node = g.nodes[n];
    const float x0 = p0.x + static_cast<float>(node.x * scale);
    const float w = static_cast<float>(node.value * scale);
    if (w < 1.0f) continue;
    const float y0 = p0.y + kRowHeight * static_cast<float>(node.depth);
    const ImVec2 a(x0, y0), b(x0 + w - 1, y0 + kRowHeight - 1);
    const bool selected = static_cast<int>(n) == v.selected && !state.flame_filter.empty();
    const ImU32 fill = difference ? delta_color(node.delta, delta_scale)
                                  : name_color(node.name, n == 0 ? 0.6f : 1.0f);
    draw->AddRectFilled(a, b, fill);
    if (selected) draw->AddRect(a, b, IM_COL32(255, 255, 255, 255), 0, 0, 2.0f);
    if (w > 24) {
      const ImVec4 clip(a.x + 2, a.y, b.x - 2, b.y);
      draw->AddText(nullptr, 0, ImVec2(a.x + 3, a.y + 3), IM_COL32(20, 20, 20, 255),
                    node.name.c_str(), nullptr, 0, &clip);
    }
    if (tracked < kMaxTrackedBoxes && w >= 4) {
      track_rect("flame:" + node.name, a, b);
      ++tracked;
    }
    if (hovered && mouse.x >= a.x && mouse.x <= b.x && mouse.y >= a.y && mouse.y <= b.y)
      under_mouse = static_cast<int>(n);
    for (auto c = node.children.rbegin(); c != node.children.rend(); ++c) todo.push_back(*c);
  }
  draw->PopClipRect();
  v.hovered = under_mouse;

  if (under_mouse >= 0) {
    const FlameNode& node = g.nodes[static_cast<std::size_t>(under_mouse)];
    std::vector<std::string> lines = {node.name};
    if (under_mouse > 0) lines.push_back("called from: " + flame_path(g, node.parent));
    const double share = node.value / total;
    lines.push_back(metric_words(state.flame_metric) + ": " + format_exact(node.value, unit) +
                    " (" + format_value(share, Unit::percent) + " of all)");
    if (difference)
      lines.push_back("first minus second: " + std::string(node.delta < 0 ? "-" : "+") +
                      format_exact(std::abs(node.delta), unit));
    lines.push_back("click: show this site's live bytes in the Memory view");
    Chart::tooltip(lines);
  }
  if (clicked) {
    const std::string path =
        under_mouse > 0 ? flame_path(g, static_cast<std::uint32_t>(under_mouse)) : std::string();
    if (path.empty() || path == state.flame_filter) {
      state.flame_filter.clear();
      state.flame_live = {};
      state.flame_live_of = nullptr;
      v.selected = -1;
    } else {
      const std::vector<bool> through = stacks_through(g, static_cast<std::uint32_t>(under_mouse));
      state.flame_filter = path;
      state.flame_live =
          live_bytes_pyramid(trace.resolved, trace.first_time_ns, &trace.alloc_stack, &through);
      state.flame_live_of = &trace;
      v.selected = under_mouse;
    }
  }
}

}  // namespace alloclab::gui
