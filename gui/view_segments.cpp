// Segments: the `pytorch` model's segments and their pieces after a chosen event of the trace,
// for two settings side by side, each segment a bar of its pieces (handed out or cached), grouped
// by device, pool and stream; the first failure of each setting under a memory limit is marked
// on the slider. The replays run in SegmentsWorker threads: a frame only asks and reads.
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cinttypes>

#include "alloclab/format/units.hpp"
#include "alloclab/replay/first_failure.hpp"
#include "alloclab/strategies/params.hpp"
#include "segments.hpp"
#include "ui_registry.hpp"
#include "views.hpp"

namespace alloclab::gui {

struct SegmentsView {
  std::shared_ptr<const TraceDoc> trace;
  std::uint64_t position = 0;  // operations replayed: the state after operation position - 1
  bool by_time = false;
  std::string spec[2] = {"pytorch", ""};
  std::string limit;  // the memory limit field: empty for none
  const ReportDoc* report_seen = nullptr;
  std::vector<std::string> report_specs;  // the current report's pytorch-family strategies
  std::unique_ptr<SegmentsWorker> worker[2];
  std::string tried[2];  // the spec and limit each worker was made for
  std::string error[2];
};

bool segments_busy(const ViewState& state) {
  if (!state.segments) return false;
  for (const auto& w : state.segments->worker)
    if (w && !w->settled()) return true;
  return false;
}

namespace {

constexpr ImU32 kHandedOut = IM_COL32(230, 159, 0, 255);
constexpr ImU32 kCached = IM_COL32(60, 100, 140, 255);
constexpr ImU32 kSplit = IM_COL32(20, 20, 24, 255);
constexpr ImU32 kFailure = IM_COL32(240, 70, 70, 255);
const char* const kSide[2] = {"A", "B"};

std::string bytes_text(std::uint64_t v) {
  return human_bytes(v) + (v >= 1024 ? " (" + grouped(v) + " B)" : "");
}

// Picks up what a newly current report says: its pytorch-family strategies (offered for the
// settings, the first other than A's taken as B when B is empty) and the memory limit of its
// failed replays.
void take_report(SegmentsView& v, const ReportDoc* report) {
  if (v.report_seen == report) return;
  v.report_seen = report;
  v.report_specs.clear();
  if (!report) return;
  for (const StrategyResult& r : report->results) {
    if (pytorch_family_error(r.strategy).empty()) v.report_specs.push_back(r.strategy);
    if (r.first_failure && r.first_failure->memory_limit)
      v.limit = size_spec(*r.first_failure->memory_limit);
  }
  for (const std::string& s : v.report_specs)
    if (v.spec[1].empty() && s != v.spec[0]) v.spec[1] = s;
}

std::optional<std::uint64_t> parse_limit(const std::string& text, std::string& error) {
  error.clear();
  if (text.find_first_not_of(" \t") == std::string::npos) return std::nullopt;
  try {
    const std::uint64_t bytes = parse_size(text);
    if (bytes > 0) return bytes;
    error = "the limit must be more than 0 bytes";
  } catch (const std::exception& e) {
    error = e.what();
  }
  return std::nullopt;
}

// The operation after which live bytes peak: where a view of segments says most.
std::uint64_t peak_position(const TraceDoc& trace) {
  std::size_t best = 0;
  for (std::size_t i = 1; i < trace.live.size(); ++i)
    if (trace.live.y_max(i) > trace.live.y_max(best)) best = i;
  return trace.live.empty() ? 0 : best + 1;
}

// Keeps each side's worker replaying its spec under the limit, made anew when either changes
// (a spec that cannot be replayed is tried once, not every frame).
void keep_workers(SegmentsView& v, const std::optional<std::uint64_t>& limit) {
  for (int i = 0; i < 2; ++i) {
    auto& w = v.worker[i];
    const std::string key = v.spec[i] + "\n" + (limit ? std::to_string(*limit) : "");
    if (key != v.tried[i]) {
      w.reset();
      v.tried[i] = key;
      v.error[i].clear();
      if (!v.spec[i].empty()) try {
          w = std::make_unique<SegmentsWorker>(v.trace, v.spec[i], limit);
        } catch (const std::exception& e) {
          v.error[i] = e.what();
        }
    }
    if (!w) continue;
    w->seek(v.position);
    if (v.error[i].empty()) v.error[i] = w->error();
  }
}

// The slider over events or time, step buttons and an exact event field; the strip under the
// slider marks each side's first failure (click it: go there) and the current point.
void position_controls(SegmentsView& v, std::optional<FirstFailure> failures[2]) {
  const ResolvedTrace& t = v.trace->resolved;
  const std::uint64_t n = t.ops.size();
  const std::uint64_t first_time = t.op_time_ns.empty() ? 0 : t.op_time_ns.front();
  const std::uint64_t last_time = t.op_time_ns.empty() ? 0 : t.op_time_ns.back();
  ImGui::SetNextItemWidth(90);
  int mode = v.by_time ? 1 : 0;
  if (ImGui::Combo("##by", &mode, "by event\0by time\0")) v.by_time = mode == 1;
  track_item("segments:by");
  ImGui::SameLine();
  if (ImGui::ArrowButton("##previous", ImGuiDir_Left) && v.position > 0) --v.position;
  track_item("segments:previous");
  ImGui::SameLine();
  const ImGuiStyle& style = ImGui::GetStyle();
  const float event_w = 110;
  const float after_slider = ImGui::GetFrameHeight() + style.ItemSpacing.x + event_w +
                             style.ItemSpacing.x + style.ItemInnerSpacing.x +
                             ImGui::CalcTextSize("event").x;
  ImGui::SetNextItemWidth(std::max(50.0f, ImGui::GetContentRegionAvail().x - after_slider));
  const ImVec2 slider_min = ImGui::GetCursorScreenPos();
  const std::uint64_t at = v.position == 0 ? 0 : v.position - 1;
  if (v.by_time) {
    std::uint64_t lo = 0, hi = last_time > first_time ? last_time - first_time : 0;
    std::uint64_t value = n ? t.op_time_ns[at] - std::min(t.op_time_ns[at], first_time) : 0;
    std::string format = "t = " + human_duration(value);
    if (ImGui::SliderScalar("##slider", ImGuiDataType_U64, &value, &lo, &hi, format.c_str()))
      v.position = ops_through_time(t, first_time + value);
  } else {
    std::uint64_t lo = n ? event_of(t, 0) : 0, hi = n ? event_of(t, n - 1) : 0;
    std::uint64_t value = n ? event_of(t, at) : 0;
    if (ImGui::SliderScalar("##slider", ImGuiDataType_U64, &value, &lo, &hi, "event %" PRIu64))
      v.position = ops_through_event(t, value);
  }
  track_item("segments:slider");
  const ImVec2 slider_max = ImGui::GetItemRectMax();
  ImGui::SameLine();
  if (ImGui::ArrowButton("##next", ImGuiDir_Right) && v.position < n) ++v.position;
  track_item("segments:next");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(event_w);
  std::uint64_t event = n && v.position ? event_of(t, v.position - 1) : 0;
  if (ImGui::InputScalar("event##segments", ImGuiDataType_U64, &event))
    v.position = ops_through_event(t, event);
  track_item("segments:event");

  // The strip: x as the slider's grab centre (ImGui's slider keeps 2 px of padding and a grab
  // of GrabMinSize, or wider when each value gets more than that).
  const float strip_h = 10;
  const ImVec2 s0 = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton("##strip", ImVec2(std::max(1.0f, slider_max.x - s0.x), strip_h));
  const bool strip_clicked = ImGui::IsItemClicked();
  auto value_of_op = [&](std::uint64_t k) -> double {
    if (v.by_time)
      return static_cast<double>(t.op_time_ns[k] - std::min(t.op_time_ns[k], first_time));
    return static_cast<double>(event_of(t, k) - event_of(t, 0));
  };
  const double range = n ? std::max(1.0, value_of_op(n - 1)) : 1.0;
  const float pad = 2, width = slider_max.x - slider_min.x - 2 * pad;
  const float grab =
      std::max(ImGui::GetStyle().GrabMinSize, width / static_cast<float>(std::max(1.0, range + 1)));
  const float x0 = slider_min.x + pad + grab / 2, usable = width - grab;
  auto px = [&](std::uint64_t k) {
    return x0 + static_cast<float>(value_of_op(k) / range) * usable;
  };
  ImDrawList* list = ImGui::GetWindowDrawList();
  list->AddRectFilled(ImVec2(slider_min.x, s0.y + 4), ImVec2(slider_max.x, s0.y + 6),
                      IM_COL32(90, 90, 90, 255));
  if (n) {
    const float cx = px(at);
    list->AddRectFilled(ImVec2(cx - 1, s0.y), ImVec2(cx + 1, s0.y + strip_h),
                        IM_COL32(235, 235, 235, 255));
  }
  for (int i = 0; i < 2; ++i) {
    if (!failures[i] || failures[i]->op_index >= n) continue;
    const float fx = px(failures[i]->op_index);
    list->AddTriangleFilled(ImVec2(fx - 5, s0.y), ImVec2(fx + 5, s0.y), ImVec2(fx, s0.y + strip_h),
                            kFailure);
    // A's label right of its mark, B's left of it: both stay readable where the marks meet.
    const float label_w = ImGui::CalcTextSize(kSide[i]).x;
    list->AddText(ImVec2(i == 0 ? fx + 6 : fx - 6 - label_w, s0.y - 3), kFailure, kSide[i]);
    const std::string name = std::string("chart:segments/oom:") + std::to_string(i);
    track_rect(name, ImVec2(fx - 5, s0.y), ImVec2(fx + 5, s0.y + strip_h));
    track_text(name, "first failure of " + v.spec[i] + " at event " +
                         grouped(failures[i]->event_index.value_or(failures[i]->op_index)));
  }
  if (strip_clicked && n) {
    const double value = (ImGui::GetIO().MousePos.x - x0) / std::max(1.0f, usable) * range;
    const auto rounded = static_cast<std::uint64_t>(std::clamp(value, 0.0, range) + 0.5);
    v.position = v.by_time ? ops_through_time(t, first_time + rounded)
                           : ops_through_event(t, event_of(t, 0) + rounded);
  }
  v.position = std::min(v.position, n);
}

// One line per side: where it first fails under the limit and PyTorch's message, and a button
// that goes there.
void failure_lines(SegmentsView& v, const std::optional<std::uint64_t>& limit,
                   std::optional<FirstFailure> failures[2]) {
  if (!limit) return;
  for (int i = 0; i < 2; ++i) {
    const auto& w = v.worker[i];
    if (!w) continue;
    const std::string name = std::string("chart:segments/") + std::to_string(i) + "/failure";
    std::string text;
    ImGui::PushID(i);
    if (!w->failure_searched()) {
      text = std::string(kSide[i]) + ": looking for the first failure under " +
             exact_bytes(*limit) + "...";
      ImGui::TextDisabled("%s", text.c_str());
    } else if (!failures[i]) {
      text = std::string(kSide[i]) + ": no request fails under " + exact_bytes(*limit);
      ImGui::TextUnformatted(text.c_str());
    } else {
      const FirstFailure& f = *failures[i];
      // The state right after the failed request, as PyTorch's message describes it.
      if (ImGui::SmallButton("go to")) v.position = f.op_index + 1;
      track_item(std::string("chart:segments/") + std::to_string(i) + "/go-to-failure");
      ImGui::SameLine();
      text = std::string(kSide[i]) + " fails first at event " +
             grouped(f.event_index.value_or(f.op_index)) + " (request of " +
             human_bytes(f.requested_bytes) + "): " + out_of_memory_message(f);
      // One line (the view clips it); the whole message in the tooltip.
      ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 150, 130, 255));
      ImGui::TextUnformatted(text.c_str());
      ImGui::PopStyleColor();
      if (ImGui::IsItemHovered()) {
        ImGui::BeginTooltip();
        ImGui::PushTextWrapPos(ImGui::GetFontSize() * 45);
        StrategyResult result;
        result.strategy = w->spec();
        result.first_failure = f;
        ImGui::TextUnformatted(first_failure_text(result).c_str());
        ImGui::PopTextWrapPos();
        ImGui::EndTooltip();
      }
    }
    track_text(name, text);
    ImGui::PopID();
  }
}

// One segment's bar: cached background, handed-out pieces over it (pieces thinner than a pixel
// merged with their neighbours, so a bar costs at most its width in rectangles), a dark line at
// each split boundary at least 3 px from the previous one. Returns the hovered piece.
const PyTorchBlockInfo* segment_bar(ImDrawList* list, const PyTorchSegmentInfo& s, ImVec2 a,
                                    ImVec2 b) {
  list->AddRectFilled(a, b, kCached);
  const double scale =
      static_cast<double>(b.x - a.x) / static_cast<double>(std::max<std::uint64_t>(s.size, 1));
  auto x_of = [&](std::uint64_t address) {
    return a.x + static_cast<float>(static_cast<double>(address - s.address) * scale);
  };
  float run0 = -1, run1 = -1;
  for (const PyTorchBlockInfo& p : s.blocks) {
    if (!p.allocated) continue;
    const float x0 = x_of(p.address), x1 = x_of(p.address + p.size);
    if (run1 >= 0 && x0 <= run1 + 1) {
      run1 = std::max(run1, x1);
      continue;
    }
    if (run1 >= 0)
      list->AddRectFilled(ImVec2(run0, a.y), ImVec2(std::max(run1, run0 + 2), b.y), kHandedOut);
    run0 = x0;
    run1 = x1;
  }
  if (run1 >= 0)
    list->AddRectFilled(ImVec2(run0, a.y), ImVec2(std::max(run1, run0 + 2), b.y), kHandedOut);
  float last_line = a.x;
  for (const PyTorchBlockInfo& p : s.blocks) {
    const float x0 = x_of(p.address);
    if (x0 - last_line < 3) continue;
    list->AddLine(ImVec2(x0, a.y), ImVec2(x0, b.y), kSplit, 1.5f);
    last_line = x0;
  }
  list->AddRect(a, b, IM_COL32(200, 200, 200, 120));
  if (!ImGui::IsMouseHoveringRect(a, b) || !ImGui::IsWindowHovered()) return nullptr;
  const double offset = (ImGui::GetIO().MousePos.x - a.x) / scale;
  const std::uint64_t address = s.address + static_cast<std::uint64_t>(std::max(0.0, offset));
  auto it =
      std::upper_bound(s.blocks.begin(), s.blocks.end(), address,
                       [](std::uint64_t x, const PyTorchBlockInfo& p) { return x < p.address; });
  return it == s.blocks.begin() ? &s.blocks.front() : &*std::prev(it);
}

// One side: its spec, totals, and the segments as rows of bars (only the visible rows drawn).
void side(SegmentsView& v, int i, const std::shared_ptr<const SegmentsState> states[2],
          const std::uint64_t widest[2]) {
  ImGui::PushID(i);
  ImGui::Text("%s", kSide[i]);
  ImGui::SameLine();
  const float pick_w = v.report_specs.empty() ? 0 : 30;
  ImGui::SetNextItemWidth(ImGui::GetContentRegionAvail().x - pick_w);
  ImGui::InputTextWithHint("##spec", i == 0 ? "pytorch" : "a pytorch or pytorch-conf spec",
                           &v.spec[i], ImGuiInputTextFlags_AutoSelectAll);
  track_item("segments:spec:" + std::to_string(i));
  if (!v.report_specs.empty()) {
    ImGui::SameLine();
    if (ImGui::BeginCombo("##pick", "",
                          ImGuiComboFlags_NoPreview | ImGuiComboFlags_PopupAlignLeft)) {
      for (const std::string& s : v.report_specs)
        if (ImGui::Selectable(s.c_str(), s == v.spec[i])) v.spec[i] = s;
      ImGui::EndCombo();
    }
    track_item("segments:pick:" + std::to_string(i));
  }
  const std::string prefix = "chart:segments/" + std::to_string(i);
  const SegmentsState* state = states[i].get();
  if (!v.error[i].empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 140, 100, 255));
    ImGui::TextWrapped("%s", v.error[i].c_str());
    ImGui::PopStyleColor();
    track_text(prefix + "/error", v.error[i]);
  } else if (v.spec[i].empty()) {
    empty_hint(i == 0 ? "Type a pytorch or pytorch-conf spec."
                      : "Type a second setting to compare, or pick one of the report's.");
  }
  if (!state || !v.error[i].empty()) {
    ImGui::PopID();
    return;
  }
  std::string totals = "reserved " + human_bytes(state->reserved) + ", allocated " +
                       human_bytes(state->allocated) + ", cached " + human_bytes(state->cached()) +
                       "; " + counted(state->segments, "segment") + ", " +
                       counted(state->pieces, "piece");
  ImGui::TextWrapped("%s", totals.c_str());
  track_text(prefix + "/totals", totals);
  if (state->position != v.position) {
    ImGui::SameLine();
    ImGui::TextDisabled(" (replaying: %s of %s operations)",
                        grouped(v.worker[i]->replayed()).c_str(), grouped(v.position).c_str());
  }
  // Rows: a title per group, then its segments; the clipper visits the visible ones only.
  std::vector<std::size_t> group_row;  // first row of each group
  std::size_t rows = 0;
  for (const SegmentGroup& g : state->groups) {
    group_row.push_back(rows);
    rows += 1 + g.segments.size();
  }
  ImGui::BeginChild("rows", ImVec2(0, 0), true);
  const float row_h = ImGui::GetTextLineHeightWithSpacing() + 2;
  const float label_w = ImGui::CalcTextSize("0x7fffffffffff 888 MiB ").x;
  ImDrawList* list = ImGui::GetWindowDrawList();
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(rows), row_h);
  const PyTorchBlockInfo* hovered = nullptr;
  const PyTorchSegmentInfo* hovered_segment = nullptr;
  const SegmentGroup* hovered_group = nullptr;
  while (clipper.Step()) {
    for (int row = clipper.DisplayStart; row < clipper.DisplayEnd; ++row) {
      const auto r = static_cast<std::size_t>(row);
      const std::size_t gi = static_cast<std::size_t>(
          std::upper_bound(group_row.begin(), group_row.end(), r) - group_row.begin() - 1);
      const SegmentGroup& g = state->groups[gi];
      const ImVec2 at = ImGui::GetCursorScreenPos();
      ImGui::Dummy(ImVec2(ImGui::GetContentRegionAvail().x, row_h));
      if (r == group_row[gi]) {
        list->AddText(ImVec2(at.x, at.y + 1), IM_COL32(200, 200, 200, 255), group_title(g).c_str());
        continue;
      }
      std::size_t index = r - gi - 1;  // the segment's index among this side's, all groups
      const PyTorchSegmentInfo& s = g.segments[r - group_row[gi] - 1];
      const std::string label = hex_address(s.address) + " " + short_bytes(s.size);
      list->AddText(ImVec2(at.x, at.y + 1), IM_COL32(170, 170, 170, 255), label.c_str());
      const float full = std::max(10.0f, ImGui::GetWindowContentRegionMax().x -
                                             ImGui::GetWindowContentRegionMin().x - label_w);
      const double share = static_cast<double>(s.size) /
                           static_cast<double>(std::max<std::uint64_t>(widest[g.small ? 1 : 0], 1));
      const float w = std::max(24.0f, full * static_cast<float>(std::min(1.0, share)));
      const ImVec2 a(at.x + label_w, at.y + 1), b(at.x + label_w + w, at.y + row_h - 2);
      if (const PyTorchBlockInfo* p = segment_bar(list, s, a, b)) {
        hovered = p;
        hovered_segment = &s;
        hovered_group = &g;
      }
      const std::string name = prefix + "/segment:" + std::to_string(index);
      track_rect(name, a, b);
      track_text(name, segment_text(g, s));
    }
  }
  ImGui::EndChild();
  if (hovered) {
    const PyTorchSegmentInfo& s = *hovered_segment;
    Chart::tooltip(
        {std::string(hovered->allocated ? "handed out (allocated)" : "cached (free)") + " piece",
         "address " + hex_address(hovered->address) + " (+" +
             human_bytes(hovered->address - s.address) + " into its segment)",
         "size " + bytes_text(hovered->size),
         std::string("segment ") + hex_address(s.address) + ", " + bytes_text(s.size) + ", " +
             (hovered_group->small ? "small" : "large") + " pool, stream " +
             std::to_string(s.stream) +
             (hovered_group->device == cpu_device ? ""
                                                  : ", " + device_name(hovered_group->device))});
  }
  ImGui::PopID();
}

}  // namespace

void draw_segments(const Model& model, ViewState& state) {
  state.table = {};
  if (!state.segments) state.segments = std::make_shared<SegmentsView>();
  SegmentsView& v = *state.segments;
  std::shared_ptr<const TraceDoc> trace = model.shared_trace();
  if (!trace) {
    empty_hint(
        "No trace: open a trace (or a report of a trace that is open here) to see the segments "
        "of the pytorch model at any event.");
    return;
  }
  if (trace != v.trace) {
    for (int i = 0; i < 2; ++i) {
      v.worker[i].reset();
      v.tried[i].clear();
    }
    v.trace = trace;
    v.position = peak_position(*trace);
  }
  take_report(v, model.report());

  ImGui::TextUnformatted("memory limit");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(120);
  ImGui::InputTextWithHint("##limit", "none, e.g. 8GiB", &v.limit,
                           ImGuiInputTextFlags_AutoSelectAll);
  track_item("segments:limit");
  std::string limit_error;
  const std::optional<std::uint64_t> limit = parse_limit(v.limit, limit_error);
  ImGui::SameLine();
  if (!limit_error.empty())
    ImGui::TextColored(ImVec4(1, 0.55f, 0.4f, 1), "%s", limit_error.c_str());
  else
    empty_hint(limit ? "each setting's first failed request is marked on the slider"
                     : "the pytorch model's segments after the chosen event; hover a piece");
  keep_workers(v, limit);
  std::optional<FirstFailure> failures[2];
  for (int i = 0; i < 2; ++i)
    if (v.worker[i] && v.error[i].empty()) failures[i] = v.worker[i]->first_failure();
  position_controls(v, failures);
  keep_workers(v, limit);  // the controls may have moved the point
  const std::string where = position_text(v.trace->resolved, v.position);
  ImGui::TextUnformatted(where.c_str());
  track_text("chart:segments/position", where);
  failure_lines(v, limit, failures);
  keep_workers(v, limit);  // a "go to" moves the point too

  std::shared_ptr<const SegmentsState> states[2];
  std::uint64_t widest[2] = {0, 0};  // the largest segment of each pool (large, small), both sides
  for (int i = 0; i < 2; ++i) {
    if (v.worker[i]) states[i] = v.worker[i]->state();
    if (!states[i]) continue;
    widest[0] = std::max(widest[0], states[i]->widest_large);
    widest[1] = std::max(widest[1], states[i]->widest_small);
  }
  ImGui::PushStyleColor(ImGuiCol_Text, kHandedOut);
  ImGui::TextUnformatted("handed out");
  ImGui::PopStyleColor();
  ImGui::SameLine();
  ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(110, 160, 210, 255));
  ImGui::TextUnformatted("cached (free)");
  ImGui::PopStyleColor();
  ImGui::SameLine();
  empty_hint("dark lines: split boundaries; a bar's length is its size (at least 24 px)");
  const ImVec2 area0 = ImGui::GetCursorScreenPos();
  const float half = (ImGui::GetContentRegionAvail().x - 8) / 2;
  for (int i = 0; i < 2; ++i) {
    if (i) ImGui::SameLine();
    ImGui::BeginChild(i == 0 ? "side:A" : "side:B", ImVec2(half, 0), false);
    side(v, i, states, widest);
    ImGui::EndChild();
  }
  track_rect("chart:segments", area0, ImVec2(area0.x + 2 * half + 8, ImGui::GetItemRectMax().y));
}

}  // namespace alloclab::gui
