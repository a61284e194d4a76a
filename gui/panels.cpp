// The side panel (open files, strategy editor, background jobs, messages), the file dialog and
// the export popup.
#include <algorithm>
#include <filesystem>
#include <system_error>

#include <imgui.h>
#include <imgui_stdlib.h>

#include "app.hpp"
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

void App::side_panel() {
  files_section();
  ImGui::Separator();
  strategy_section();
  ImGui::Separator();
  jobs_section();
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
  if (named_button("Run")) spec_message_ = run_replay();
  ImGui::SameLine();
  ImGui::TextDisabled("simulated replay of the selected trace");
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
