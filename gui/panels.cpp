// The side panel (open files, strategy editor, background jobs, messages), the file dialog and
// the export popup.
#include <algorithm>
#include <filesystem>
#include <optional>
#include <system_error>

#include <imgui.h>
#include <imgui_stdlib.h>

#include "app.hpp"
#include "chart.hpp"
#include "summary.hpp"
#include "ui_registry.hpp"

namespace alloclab::gui {
namespace {

std::string file_name(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

const ImVec4 warning_color(1, 0.7f, 0.4f, 1);

// Under a trace's entry: what its load found wrong, so a damaged trace never looks complete.
void load_warnings(const TraceDoc& trace) {
  if (trace.warnings.empty()) return;
  constexpr std::size_t shown = 3;
  ImGui::Indent();
  ImGui::PushTextWrapPos(0);
  ImGui::TextColored(warning_color, "%zu load warning%s:", trace.warnings.size(),
                     trace.warnings.size() == 1 ? "" : "s");
  track_item("warnings:" + file_name(trace.path));
  for (std::size_t k = 0; k < std::min(shown, trace.warnings.size()); ++k)
    ImGui::TextColored(warning_color, "%s", trace.warnings[k].c_str());
  if (trace.warnings.size() > shown)
    ImGui::TextDisabled("... %zu more (alloclab info lists them)", trace.warnings.size() - shown);
  ImGui::PopTextWrapPos();
  ImGui::Unindent();
}

}  // namespace

// Jobs and messages come right after the files: a long strategy list must not push a running
// replay's Cancel button, or an error, out of sight.
void App::side_panel() {
  files_section();
  ImGui::Separator();
  jobs_section();
  selection_section();
  ImGui::Separator();
  strategy_section();
}

void App::files_section() {
  if (named_button("Open...")) dialog_open_ = true;
  ImGui::TextDisabled("traces");
  for (std::size_t i = 0; i < model.traces.size(); ++i) {
    const std::string label = file_name(model.traces[i]->path) + "##trace" + std::to_string(i);
    if (ImGui::Selectable(label.c_str(), model.current_trace == static_cast<int>(i)))
      model.current_trace = model.current_trace == static_cast<int>(i) ? -1 : static_cast<int>(i);
    track_item("trace:" + file_name(model.traces[i]->path));
    load_warnings(*model.traces[i]);
  }
  ImGui::TextDisabled("reports");
  for (std::size_t i = 0; i < model.reports.size(); ++i) {
    const std::string label = model.reports[i]->name + "##report" + std::to_string(i);
    if (ImGui::Selectable(label.c_str(), model.current_report == static_cast<int>(i)))
      model.current_report = static_cast<int>(i);
    track_item("report:" + std::to_string(i));
  }
}

// What the selected report and trace are, and the report's strategies as chips that take a
// strategy out of every view.
void App::selection_section() {
  const auto lines = [](const std::string& name, const std::vector<SummaryLine>& summary) {
    std::string all;
    ImGui::PushTextWrapPos(0);
    for (const SummaryLine& line : summary) {
      if (line.warning)
        ImGui::TextColored(warning_color, "%s", line.text.c_str());
      else
        ImGui::TextUnformatted(line.text.c_str());
      all += (all.empty() ? "" : "\n") + line.text;
    }
    ImGui::PopTextWrapPos();
    track_text(name, all);
  };
  ReportDoc* report =
      model.current_report >= 0 && model.current_report < static_cast<int>(model.reports.size())
          ? model.reports[static_cast<std::size_t>(model.current_report)].get()
          : nullptr;
  if (report) {
    ImGui::TextDisabled("report %s", report->name.c_str());
    lines("panel/report", report_summary_lines(report->json));
    strategy_chips(*report);
  }
  // The trace of the selected report (its summary travels in the report), else the selected
  // trace.
  const TraceDoc* trace = report ? report->trace.get() : model.trace();
  const nlohmann::json* info = nullptr;
  if (report) {
    if (const auto it = report->json.find("trace"); it != report->json.end() && it->is_object())
      info = &*it;
  } else if (trace) {
    info = &trace->summary;
  }
  if (!info) {
    if (!report) ImGui::TextDisabled("open a trace or a report to see what it holds");
    return;
  }
  ImGui::TextDisabled("trace %s", trace_name(*info).c_str());
  lines("panel/trace", trace_summary_lines(*info, trace ? trace->warnings.size() : 0));
}

// One small button per strategy, laid out in rows that wrap at the panel's edge; clicking one
// takes that strategy out of the report.
void App::strategy_chips(ReportDoc& report) {
  const ImGuiStyle& style = ImGui::GetStyle();
  const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  std::optional<std::size_t> removed;
  // A sweep of hundreds of points would bury the panel: its points are in the sweep view.
  constexpr std::size_t max_chips = 24;
  const std::size_t shown = std::min(report.results.size(), max_chips);
  for (std::size_t i = 0; i < shown; ++i) {
    const std::string& name = report.results[i].strategy;
    const std::string id = "##chip" + std::to_string(i);
    // A chip: its name highlights the strategy in every view, its x takes it out.
    const float width = ImGui::CalcTextSize(name.c_str()).x + ImGui::CalcTextSize("x").x +
                        style.FramePadding.x * 4 + style.ItemSpacing.x;
    if (i > 0) {
      ImGui::SameLine();
      if (ImGui::GetCursorScreenPos().x + width > right) ImGui::NewLine();
    }
    const bool highlighted = highlighted_strategy() == name;
    ImGui::PushStyleColor(ImGuiCol_Button,
                          series_color(static_cast<int>(i), highlighted ? 0.9f : 0.35f));
    if (ImGui::SmallButton((name + id).c_str())) toggle_highlight(name);
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip(highlighted ? "%s is highlighted in every view; click to stop"
                                    : "highlight %s in every view",
                        name.c_str());
    track_item("chip:" + name);
    ImGui::SameLine(0, 1);
    if (ImGui::SmallButton(("x" + id + "x").c_str())) removed = i;
    ImGui::PopStyleColor();
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("take %s out of this report's views", name.c_str());
    track_item("chip:" + name + "/x");
  }
  if (report.results.size() > shown)
    ImGui::TextDisabled("and %zu more", report.results.size() - shown);
  if (!highlighted_strategy().empty()) {
    const std::string line = "highlighted: " + highlighted_strategy();
    ImGui::TextUnformatted(line.c_str());
    track_item("panel/highlight");
    track_text("panel/highlight", line);
  }
  if (removed) Model::remove_result(report, *removed);
}

void App::strategy_section() {
  ImGui::TextUnformatted("Strategies");
  ImGui::SetNextItemWidth(-1);
  const bool entered = ImGui::InputTextWithHint(
      "##spec", "spec, e.g. fifo-shrink:max=64MiB", &spec_input_,
      ImGuiInputTextFlags_EnterReturnsTrue | ImGuiInputTextFlags_AutoSelectAll);
  track_item("spec");
  const std::string live_error = spec_input_.empty() ? std::string() : validate_spec(spec_input_);
  if (!spec_input_.empty()) {
    ImGui::PushTextWrapPos(0);
    if (live_error.empty())
      ImGui::TextColored(ImVec4(0.5f, 0.9f, 0.5f, 1), "valid");
    else
      ImGui::TextColored(ImVec4(1, 0.55f, 0.4f, 1), "%s", live_error.c_str());
    ImGui::TextDisabled("%s", spec_hint(spec_input_).c_str());
    ImGui::PopTextWrapPos();
  }
  if (named_button("Add") || entered) {
    spec_message_ = add_spec(spec_input_);
    if (spec_message_.empty()) spec_input_.clear();
  }
  ImGui::SameLine();
  ImGui::SetNextItemWidth(-1);
  const auto& presets = spec_presets();
  if (ImGui::BeginCombo("##preset", "add a preset...")) {
    for (std::size_t i = 0; i < presets.size(); ++i)
      if (ImGui::Selectable(presets[i].c_str())) {
        preset_ = static_cast<int>(i);
        spec_message_ = add_spec(presets[i]);
      }
    ImGui::EndCombo();
  }
  track_item("presets");
  if (!spec_message_.empty()) {
    ImGui::PushTextWrapPos(0);
    ImGui::TextColored(ImVec4(1, 0.55f, 0.4f, 1), "%s", spec_message_.c_str());
    ImGui::PopTextWrapPos();
  }
  // Above the list, so that a long list never pushes it out of sight.
  if (named_button("Run")) spec_message_ = run_replay();
  ImGui::SameLine();
  ImGui::TextDisabled("simulated replay of the selected trace");
  for (std::size_t i = 0; i < specs.size();) {
    ImGui::PushID(static_cast<int>(i));
    const bool remove = ImGui::SmallButton("x");
    ImGui::SameLine();
    ImGui::TextUnformatted(specs[i].c_str());
    ImGui::PopID();
    if (remove)
      specs.erase(specs.begin() + static_cast<std::ptrdiff_t>(i));
    else
      ++i;
  }
}

void App::jobs_section() {
  for (std::size_t i = 0; i < model.jobs.size(); ++i) {
    Job& job = *model.jobs[i];
    ImGui::PushID(static_cast<int>(i));
    ImGui::TextUnformatted(job.label().c_str());
    const float f = job.fraction();
    ImGui::ProgressBar(f, ImVec2(-60, 0), f > 0 ? nullptr : "working...");
    ImGui::SameLine();
    if (ImGui::Button(job.cancelled() ? "..." : "Cancel")) job.cancel();
    track_item("Cancel");
    ImGui::PopID();
  }
  const std::size_t first = model.messages.size() > 6 ? model.messages.size() - 6 : 0;
  ImGui::PushTextWrapPos(0);
  for (std::size_t i = first; i < model.messages.size(); ++i)
    ImGui::TextColored(warning_color, "%s", model.messages[i].c_str());
  ImGui::PopTextWrapPos();
  if (!model.jobs.empty() || !model.messages.empty()) ImGui::Separator();
}

void App::file_dialog() {
  if (dialog_open_) {
    ImGui::OpenPopup("Open file");
    dialog_open_ = false;
    if (dialog_dir_.empty()) {
      std::error_code ec;
      dialog_dir_ = std::filesystem::current_path(ec).string();
    }
  }
  ImGui::SetNextWindowSize(ImVec2(640, 440), ImGuiCond_Appearing);
  if (!ImGui::BeginPopupModal("Open file", nullptr, ImGuiWindowFlags_NoSavedSettings)) return;
  ImGui::SetNextItemWidth(-80);
  ImGui::InputText("##path", &dialog_path_, ImGuiInputTextFlags_AutoSelectAll);
  track_item("path");
  ImGui::SameLine();
  if (named_button("Open##dialog") && !dialog_path_.empty()) {
    open_paths({dialog_path_});
    ImGui::CloseCurrentPopup();
  }
  ImGui::TextDisabled("%s", dialog_dir_.c_str());
  ImGui::BeginChild("listing", ImVec2(0, -30), true);
  std::error_code ec;
  std::vector<std::filesystem::directory_entry> entries;
  for (const auto& e : std::filesystem::directory_iterator(dialog_dir_, ec)) entries.push_back(e);
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
    if (a.is_directory() != b.is_directory()) return a.is_directory();
    return a.path().filename() < b.path().filename();
  });
  if (ImGui::Selectable("../"))
    dialog_dir_ = std::filesystem::path(dialog_dir_).parent_path().string();
  for (const auto& e : entries) {
    const std::string name = e.path().filename().string() + (e.is_directory() ? "/" : "");
    if (ImGui::Selectable(name.c_str(), dialog_path_ == e.path().string(),
                          ImGuiSelectableFlags_AllowDoubleClick)) {
      if (e.is_directory()) {
        dialog_dir_ = e.path().string();
      } else {
        dialog_path_ = e.path().string();
        if (ImGui::IsMouseDoubleClicked(0)) {
          open_paths({dialog_path_});
          ImGui::CloseCurrentPopup();
        }
      }
    }
  }
  ImGui::EndChild();
  if (named_button("Close")) ImGui::CloseCurrentPopup();
  ImGui::EndPopup();
}

void App::export_popup() {
  if (export_open_) {
    ImGui::OpenPopup("Export");
    export_open_ = false;
    export_path_ =
        std::string("alloclab-") + view_name(state.view) + (export_png_ ? ".png" : ".csv");
  }
  if (!ImGui::BeginPopupModal("Export", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) return;
  ImGui::Text(export_png_ ? "Write the current view to PNG" : "Write the current table to CSV");
  ImGui::SetNextItemWidth(420);
  // The proposed name is selected on click: typing replaces it.
  ImGui::InputText("##export-path", &export_path_, ImGuiInputTextFlags_AutoSelectAll);
  track_item("export-path");
  if (named_button("Write")) {
    try {
      if (export_png_)
        request_png(export_path_);
      else
        export_csv(export_path_);
      model.messages.push_back("wrote " + export_path_);
    } catch (const std::exception& e) {
      model.messages.push_back(std::string("error: ") + e.what());
    }
    ImGui::CloseCurrentPopup();
  }
  ImGui::SameLine();
  if (ImGui::Button("Cancel##export")) ImGui::CloseCurrentPopup();
  ImGui::EndPopup();
}

}  // namespace alloclab::gui
