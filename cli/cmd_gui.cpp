// `alloclab gui [ARGS...]`: runs the GUI program built beside this one (alloclab-gui), so the
// command line front end does not depend on the GUI's libraries.
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "alloclab/launch/record_files.hpp"
#include "commands.hpp"

namespace alloclab::cli {
namespace {

void run_gui(const std::vector<std::string>& args) {
  if (!ALLOCLAB_GUI_BUILT)
    throw std::runtime_error(
        "the GUI was not built: configure with -DALLOCLAB_GUI=ON (needs libimgui-dev, "
        "libglfw3-dev, "
        "libegl-dev, libstb-dev; scripts/setup installs them)");
  const std::string program = (launch::binary_dir() / "alloclab-gui").string();
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(program.c_str()));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv(program.c_str(), argv.data());
  throw std::runtime_error("cannot run " + program + ": " + std::strerror(errno) +
                           " (build it: cmake --build build --target alloclab-gui)");
}

}  // namespace

void add_gui_command(CLI::App& app) {
  CLI::App* sub = app.add_subcommand(
      "gui",
      "Open the GUI: alloclab gui [TRACE ...] [REPORT.json ...] [--headless --screenshot OUT.png "
      "--size WxH --view NAME --script FILE]; alloclab gui --help lists every option");
  // Every argument belongs to the GUI program, --help included.
  sub->prefix_command();
  sub->set_help_flag();
  sub->callback([sub] { run_gui(sub->remaining()); });
}

}  // namespace alloclab::cli
