#pragma once
// Scripted UI sessions for tests and demos: a text file of actions that drive the UI through the
// same input a user gives (mouse moves and clicks on named widgets, typed characters), plus a
// few direct actions (open a file, pick a view, export). One action per line; `#` starts a
// comment; arguments with spaces go in double quotes.
//
//   open PATH            open a trace or report (directly; File > Open is `click menu:File`,
//                        `click "File > Open..."`, `type path PATH`, `click Open`)
//   drop PATH...         drop one or more files on the window (what the GLFW drop callback does)
//   view NAME            select a view: overview, tradeoff, hit-rate, latency, memory, runs,
//                        segments, flame, trace, sweep, diff
//   click NAME           click the widget named NAME (a button label, "tab:memory", "spec", ...)
//   type NAME TEXT       click the text field NAME, then type TEXT into it
//   wait                 wait until every background job (load, replay) has finished
//   frames N             render N frames
//   mouse X Y            move the mouse to (X, Y) in pixels
//   mouse-on NAME        move the mouse to the centre of widget NAME (hover tooltips)
//   wheel N              turn the mouse wheel N notches (positive: zoom in)
//   export-csv PATH      write the current view's table (directly; the menu's export is
//                        `click menu:File`, `click "File > Export table to CSV..."`,
//                        `type export-path PATH`, `click Write`)
//   screenshot PATH      write the next rendered frame as PNG
//   expect-message TEXT  wait (up to 600 frames) until a side-panel message contains TEXT
//   expect-missing NAME  fail if the widget NAME is on screen (e.g. `report:0`, `Cancel`)
//   expect-text NAME TEXT  wait (up to 600 frames) until the text NAME shows (a view's line,
//                        `tooltip`) contains TEXT
#include <string>
#include <vector>

#include <imgui.h>

namespace alloclab::gui {

class App;

struct ScriptAction {
  std::string verb;
  std::vector<std::string> args;
  int line = 0;
};

// Throws std::runtime_error "FILE:LINE: ..." on an unknown verb or a wrong argument count.
std::vector<ScriptAction> parse_script(const std::string& text, const std::string& name);

class ScriptPlayer {
 public:
  ScriptPlayer() = default;
  ScriptPlayer(std::vector<ScriptAction> actions, std::string name)
      : actions_(std::move(actions)), name_(std::move(name)) {}
  static ScriptPlayer load(const std::string& path);

  // The files the script reads (`open`, `drop`) and writes (`export-csv`, `screenshot`), each
  // written one named "SCRIPT:LINE verb": checked, as the command line's, before anything runs.
  struct Output {
    std::string name;
    std::string path;
  };
  std::vector<std::string> inputs() const;
  std::vector<Output> outputs() const;

  // Call once per frame after the platform backend's NewFrame and before ImGui::NewFrame: sets
  // this frame's mouse and keyboard input, or performs a direct action.
  void before_frame(App& app, ImGuiIO& io);
  bool finished() const { return next_ >= actions_.size() || !error_.empty(); }
  // Non-empty when an action failed ("script.txt:4: no widget named 'Runn' ...").
  const std::string& error() const { return error_; }

 private:
  bool click_step(const std::string& widget, ImGuiIO& io);
  void fail(const ScriptAction& action, const std::string& what);
  void advance() {
    ++next_;
    step_ = 0;
    wait_frames_ = 0;
  }

  std::vector<ScriptAction> actions_;
  std::string name_;
  std::size_t next_ = 0;
  int step_ = 0;
  int wait_frames_ = 0;
  ImVec2 mouse_{-1, -1};
  std::string error_;
};

}  // namespace alloclab::gui
