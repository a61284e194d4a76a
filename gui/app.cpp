#include "app.hpp"

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "alloclab/strategies/registry.hpp"
#include "alloclab/strategies/upstream/sim.hpp"
#include "ui_registry.hpp"

namespace alloclab::gui {

std::string validate_spec(const std::string& spec) {
  if (spec.find_first_not_of(" \t") == std::string::npos) return "empty spec";
  try {
    SimUpstream upstream;
    make_strategy(spec, upstream);
    return {};
  } catch (const std::exception& e) {
    return e.what();
  }
}

const std::vector<std::string>& spec_presets() {
  static const std::vector<std::string> presets = {"passthrough",
                                                   "exact",
                                                   "best-fit",
                                                   "fifo-shrink:max=64MiB",
                                                   "fifo-shrink:max=64MiB,match=best-fit",
                                                   "per-run-pool",
                                                   "pytorch",
                                                   "rten",
                                                   "dfdx"};
  return presets;
}

std::string spec_hint(const std::string& spec) {
  const std::string name = spec.substr(0, spec.find(':'));
  std::string names;
  for (const StrategyInfo& info : builtin_strategies()) {
    if (info.name == name) {
      std::string hint = info.name + ": " + info.summary;
      if (!info.keys.empty()) {
        hint += "\nkeys:";
        for (const std::string& k : info.keys) hint += " " + k;
      }
      return hint;
    }
    names += (names.empty() ? "" : ", ") + info.name;
  }
  return "strategies: " + names + ", plugin:PATH.so (sizes: 64MiB, 1.5GB, ...)";
}

ImVec4 clear_color() {
  const ImVec4 bg = ImGui::GetStyle().Colors[ImGuiCol_WindowBg];
  const ImVec4 under(0.1f, 0.1f, 0.12f, 1);
  auto over = [&](float top, float bottom) { return top * bg.w + bottom * (1 - bg.w); };
  return ImVec4(over(bg.x, under.x), over(bg.y, under.y), over(bg.z, under.z), 1);
}

App::App() {
  ImGuiStyle& style = ImGui::GetStyle();
  style.WindowRounding = 0;
  style.FrameRounding = 3;
  style.ItemSpacing = ImVec2(8, 5);
}

std::string App::add_spec(const std::string& spec) {
  std::string message = validate_spec(spec);
  if (message.empty()) specs.push_back(spec);
  return message;
}

std::string App::run_replay() {
  std::shared_ptr<const TraceDoc> trace;
  if (model.current_trace >= 0 && model.current_trace < static_cast<int>(model.traces.size()))
    trace = model.traces[static_cast<std::size_t>(model.current_trace)];
  else if (const ReportDoc* report = model.report(); report && report->trace)
    trace = report->trace;
  if (!trace) return "open a trace first";
  if (specs.empty()) return "add at least one strategy";
  model.replay(trace, specs);
  return {};
}

void App::open_paths(const std::vector<std::string>& paths) {
  for (const std::string& p : paths) model.open(p);
}

void App::drop_files(int count, const char* const* paths) {
  std::vector<std::string> files;
  for (int i = 0; i < count; ++i)
    if (paths[i] && *paths[i]) files.emplace_back(paths[i]);
  open_paths(files);
}

void App::export_csv(const std::string& path) const {
  if (state.table.columns.empty())
    throw std::runtime_error(std::string("the ") + view_title(state.view) + " view shows no table");
  std::ofstream out(path, std::ios::trunc);
  if (!out) throw std::runtime_error("cannot write " + path);
  write_csv(out, state.table);
  if (!out.flush()) throw std::runtime_error("cannot write " + path);
}

void App::frame(ImVec2 display) {
  begin_registry_frame();
  model.poll_jobs();
  ImGui::SetNextWindowPos(ImVec2(0, 0));
  ImGui::SetNextWindowSize(display);
  ImGui::Begin("alloclab", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_MenuBar | ImGuiWindowFlags_NoMove |
                   ImGuiWindowFlags_NoBringToFrontOnFocus | ImGuiWindowFlags_NoSavedSettings |
                   ImGuiWindowFlags_NoBackground);  // clear_color() is the background
  // NoBackground also drops the window's outer border: draw it as ImGui would (unclipped).
  if (const float border = ImGui::GetStyle().WindowBorderSize; border > 0) {
    ImDrawList* list = ImGui::GetWindowDrawList();
    list->PushClipRectFullScreen();
    list->AddRect(ImVec2(0, 0), display, ImGui::GetColorU32(ImGuiCol_Border), 0, 0, border);
    list->PopClipRect();
  }
  menu_bar();
  ImGui::BeginChild("side", ImVec2(300, 0), true);
  side_panel();
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("views", ImVec2(0, 0), false);
  views_area();
  ImGui::EndChild();
  file_dialog();
  export_popup();
  ImGui::End();
}

void App::menu_bar() {
  if (!ImGui::BeginMenuBar()) return;
  // Scripts click "menu:File" and then "File > ITEM". BeginMenu leaves the open menu's window as
  // the last item, so the header's rectangle is taken from where it will be drawn.
  const ImVec2 at = ImGui::GetCursorScreenPos();
  const ImVec2 label = ImGui::CalcTextSize("File");
  track_rect(
      "menu:File", at,
      ImVec2(at.x + label.x + ImGui::GetStyle().ItemSpacing.x, at.y + ImGui::GetFrameHeight()));
  if (ImGui::BeginMenu("File")) {
    auto item = [](const char* name) {
      const bool chosen = ImGui::MenuItem(name);
      track_item(std::string("File > ") + name);
      return chosen;
    };
    if (item("Open...")) dialog_open_ = true;
    if (item("Export view to PNG...")) {
      export_open_ = true;
      export_png_ = true;
    }
    if (item("Export table to CSV...")) {
      export_open_ = true;
      export_png_ = false;
    }
    if (item("Quit")) quit_requested = true;
    ImGui::EndMenu();
  }
  // The status line: the trace on show, when its load found damage; else how to open files.
  if (const TraceDoc* trace = model.trace(); trace && !trace->warnings.empty()) {
    const std::string name = std::filesystem::path(trace->path).filename().string();
    ImGui::TextColored(ImVec4(1, 0.7f, 0.4f, 1), "  %s: %zu load warning%s, first: %s",
                       name.c_str(), trace->warnings.size(), trace->warnings.size() == 1 ? "" : "s",
                       trace->warnings.front().c_str());
    track_item("status:warnings");
  } else {
    ImGui::TextDisabled("  drop traces (.alt .csv .log) or reports (.json) on the window");
  }
  ImGui::EndMenuBar();
}

void App::views_area() {
  if (!ImGui::BeginTabBar("views")) return;
  for (View v : all_views) {
    ImGuiTabItemFlags flags = 0;
    if (requested_view_ == v) flags |= ImGuiTabItemFlags_SetSelected;
    const bool open = ImGui::BeginTabItem(view_title(v), nullptr, flags);
    track_item(std::string("tab:") + view_name(v));
    if (!open) continue;
    state.view = v;
    switch (v) {
      case View::overview:
        draw_overview(model, state);
        break;
      case View::tradeoff:
        draw_tradeoff(model, state);
        break;
      case View::hit_rate:
        draw_hit_rate(model, state);
        break;
      case View::latency:
        draw_latency(model, state);
        break;
      case View::memory:
        draw_memory(model, state);
        break;
      case View::runs:
        draw_runs(model, state);
        break;
      case View::segments:
        draw_segments(model, state);
        break;
      case View::flame:
        draw_flame(model, state);
        break;
      case View::trace:
        draw_trace(model, state);
        break;
      case View::sweep:
        draw_sweep(model, state);
        break;
      case View::diff:
        draw_diff(model, state);
        break;
    }
    ImGui::EndTabItem();
  }
  requested_view_.reset();
  ImGui::EndTabBar();
}

}  // namespace alloclab::gui
