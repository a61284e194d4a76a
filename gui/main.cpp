// alloclab-gui: the ImGui front end (`alloclab gui` runs this program).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "alloclab/cli/help_format.hpp"
#include "alloclab/format/output_files.hpp"
#include "runner.hpp"
#include "script.hpp"
#include "views.hpp"

int main(int argc, char** argv) {
  alloclab::gui::RunOptions o;
  std::string size = "1280x800";
  bool force = false;
  CLI::App app{"alloclab gui: compare allocation strategies visually"};
  app.name("alloclab gui");
  app.formatter(std::make_shared<alloclab::cli::HelpFormatter>());
  app.add_option("files", o.files,
                 "traces (.alt .csv .log, PyTorch snapshot .json) and reports (.json)");
  app.add_option("-s,--strategy", o.specs,
                 "strategy to add to the editor and replay on the first trace (repeatable)")
      ->type_name("SPEC");
  app.add_flag("--headless", o.headless, "render offscreen through EGL (no display needed)");
  app.add_option("--screenshot", o.screenshot,
                 "write a PNG of the window once everything has loaded")
      ->type_name("FILE");
  app.add_flag("-f,--force", force,
               "replace the files --screenshot and the --script write if they exist");
  app.add_option("--size", size, "window size WxH (default 1280x800)")->type_name("WxH");
  std::string views;  // every view's name, so that a new view is never left out
  for (const alloclab::gui::View view : alloclab::gui::all_views)
    views += std::string(views.empty() ? "" : ", ") + alloclab::gui::view_name(view);
  app.add_option("--view", o.view, "first view: " + views)->type_name("VIEW");
  app.add_option("--script", o.script,
                 "play the UI actions in this file (docs/cli.md: `alloclab gui`)")
      ->type_name("FILE");
  app.add_option("--frames", o.frames,
                 "window: quit after N frames once loaded; headless: render (and time) N frames "
                 "before the screenshot")
      ->type_name("N");
  app.add_flag("--frame-times", o.frame_times, "headless: print frame-time statistics");
  // A bad command line is bad input, status 2, like the rest of alloclab: one line, then the usage.
  const auto usage_error = [&app](const std::string& message) {
    std::fprintf(stderr, "alloclab gui: error: %s\n%sRun 'alloclab gui --help' for more.\n",
                 message.c_str(), CLI::Formatter().make_usage(&app, "alloclab gui").c_str());
    return 2;
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help is status 0, on stdout.
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    return usage_error(e.what());
  }
  if (o.headless && o.screenshot.empty() && o.script.empty() && !o.frame_times)
    return usage_error("--headless shows nothing: give --screenshot, --script or --frame-times");
  try {
    if (std::sscanf(size.c_str(), "%dx%d", &o.width, &o.height) != 2 || o.width < 200 ||
        o.height < 150 || o.width > 8192 || o.height > 8192)
      throw std::invalid_argument("--size '" + size +
                                  "': expected WxH, e.g. 1280x800 (200x150 to 8192x8192)");
    if (o.frames < 0) throw std::invalid_argument("--frames must be >= 0");
    // Before a window opens or a trace loads: the screenshot must not replace what is opened.
    alloclab::OutputPlan outputs(force);
    for (const std::string& file : o.files) outputs.input(file);
    outputs.input(o.script).output("--screenshot", o.screenshot);
    if (!o.script.empty()) {
      const alloclab::gui::ScriptPlayer script = alloclab::gui::ScriptPlayer::load(o.script);
      for (const std::string& file : script.inputs()) outputs.input(file);
      for (const auto& [name, file] : script.outputs()) outputs.output(name, file);
    }
    outputs.check();
    // The PNG is written in place: a link that --force replaces goes first, so that the file it
    // points to is never written.
    if (force && std::filesystem::is_symlink(o.screenshot)) std::filesystem::remove(o.screenshot);
    return o.headless ? alloclab::gui::run_headless(o) : alloclab::gui::run_window(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "alloclab gui: error: %s\n", e.what());
    return 2;
  }
}
