// The program's command line: `alloclab gui`, bad input, and the real GLFW window under Xvfb.
#include <gtest/gtest.h>

#include <cstdlib>

#include "gui_test_util.hpp"

namespace alloclab::test {
namespace {

TEST(GuiProgram, alloclab_gui_runs_the_gui_program) {
  const auto dir = scratch_dir("cli");
  const std::string png = (dir / "shot.png").string();
  const CliResult r = run_cli("gui --headless --size 640x480 --view trace --screenshot " + png +
                              " " + traces_dir() + "/tiny.csv");
  if (r.status == 2 && r.output.find("headless rendering:") != std::string::npos)
    GTEST_SKIP() << r.output;
  ASSERT_EQ(r.status, 0) << r.output;
  const Image image = load_png(png);
  EXPECT_EQ(image.width, 640);
  EXPECT_GT(distinct_colors(image, 0, 0, 640, 480), 20u);
  const CliResult help = run_cli("gui --help");
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.output.find("--screenshot"), std::string::npos) << help.output;
}

TEST(GuiProgram, bad_input_is_one_clear_line_and_status_2) {
  const std::string t = traces_dir() + "/tiny.csv";
  struct Case {
    std::string args, message;
  } cases[] = {
      {"/no/such/trace.alt --screenshot /dev/null", "/no/such/trace.alt"},
      {"--size 12x", "--size '12x'"},
      {"--view charts " + t, "unknown view 'charts'"},
      {"-s fifo-shrink:max=lots " + t, "strategy 'fifo-shrink:max=lots'"},
      {"--script /no/such/script.txt", "cannot read the script"},
      {"--no-such-option", "--no-such-option"},
  };
  for (const Case& c : cases) {
    const CliResult r = run_headless(c.args);
    EXPECT_EQ(r.status, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << c.args << "\n" << r.output;
  }
}

TEST(GuiProgram, real_glfw_window_under_xvfb) {
  if (std::system("command -v xvfb-run >/dev/null 2>&1") != 0)
    GTEST_SKIP()
        << "xvfb-run is not installed (apt-get install xvfb xauth): the GLFW window is not tested";
  const auto dir = scratch_dir("xvfb");
  const std::string png = (dir / "window.png").string();
  const CliResult r = run_shell("xvfb-run -a -s '-screen 0 1280x800x24' " + gui_program() +
                                " --size 900x600 --frames 10 --view memory --screenshot " + png +
                                " " + traces_dir() + "/cnn-inference.alt -s exact -s per-run-pool");
  ASSERT_EQ(r.status, 0) << r.output;
  const Image image = load_png(png);
  EXPECT_EQ(image.width, 900);
  EXPECT_GT(distinct_colors(image, 0, 0, image.width, image.height), 40u);
}

}  // namespace
}  // namespace alloclab::test
