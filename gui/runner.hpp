#pragma once
// The two ways to run the same App: in a GLFW window, or headless through EGL (screenshots,
// scripted sessions, frame timing).
#include <string>
#include <vector>

namespace alloclab::gui {

struct RunOptions {
  std::vector<std::string> files;  // traces and reports to open
  std::vector<std::string> specs;  // strategies to add (and replay on the first trace)
  bool headless = false;
  std::string screenshot;  // PNG written once everything has loaded (and the script ran)
  int width = 1280, height = 800;
  std::string view;          // view to show first
  std::string script;        // script file (script.hpp)
  int frames = 0;            // window: quit after this many frames (0: run until closed); headless:
                             // frames rendered (and timed) before the screenshot
  bool frame_times = false;  // headless: print frame-time statistics of those frames
};

// Exit status: 0 success, 1 a script action failed, 2 bad input or no way to render.
int run_headless(const RunOptions& options);
int run_window(const RunOptions& options);

}  // namespace alloclab::gui
