#pragma once
// The application: model + view state + the whole-window UI. One App::frame() per frame, the
// same in the GLFW window and in headless rendering; backends only feed input and present.
#include <optional>
#include <string>
#include <vector>

#include <imgui.h>

#include "model.hpp"
#include "views.hpp"

namespace alloclab::gui {

// Validates a spec with the strategy registry: "" when it is valid, else the registry's message.
std::string validate_spec(const std::string& spec);
// Presets offered by the strategy editor (valid specs).
const std::vector<std::string>& spec_presets();
// A hint for a partly typed spec: the strategy's summary and accepted keys, or the known names.
std::string spec_hint(const std::string& spec);

// The colour the backends clear the frame to before drawing: the style's window background as
// it looks over the clear colour used before (0.1, 0.1, 0.12). The main window draws no
// background of its own: a full-window blended quad costs a software renderer a million shaded
// pixels per frame, and the clear colour shows the same.
ImVec4 clear_color();

class App {
 public:
  App();
  // Draws the whole UI for one frame into a window covering `display`.
  void frame(ImVec2 display);

  void open_paths(const std::vector<std::string>& paths);
  // Files dropped on the window: what the GLFW drop callback calls (and the script's `drop`).
  void drop_files(int count, const char* const* paths);
  // Selects a view from the next frame on.
  void show_view(View view) { requested_view_ = view; }
  // Writes the current view's table; throws std::runtime_error when there is none or the file
  // cannot be written.
  void export_csv(const std::string& path) const;
  // Asks the backend to write the next rendered frame to `path` (PNG).
  void request_png(const std::string& path) { png_requests.push_back(path); }
  // Adds a strategy spec to the editor's list; returns the validation message ("" when added).
  std::string add_spec(const std::string& spec);
  // Starts a replay of the current trace against the editor's specs (a message when it cannot).
  std::string run_replay();
  // Background work is going on: loads and replays, and the segments view's replays.
  bool busy() const { return model.busy() || segments_busy(state) || flame_busy(state); }

  Model model;
  ViewState state;
  std::vector<std::string> specs;         // the strategy editor's list
  std::vector<std::string> png_requests;  // taken by the backend after rendering
  bool quit_requested = false;

 private:
  void menu_bar();
  void side_panel();
  void files_section();
  void selection_section();
  void strategy_chips(ReportDoc& report);
  void strategy_section();
  void jobs_section();
  void file_dialog();
  void export_popup();
  void views_area();

  std::optional<View> requested_view_;
  std::string spec_input_;
  std::string spec_message_;
  int preset_ = 0;
  bool dialog_open_ = false;
  std::string dialog_dir_;
  std::string dialog_path_;
  bool export_open_ = false;
  bool export_png_ = false;
  std::string export_path_;
};

}  // namespace alloclab::gui
