// The program's command line: `alloclab gui`, bad input, and the real GLFW window under Xvfb.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "gui/views.hpp"
#include "gui_test_util.hpp"

namespace alloclab::test {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

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
  // --view lists every view (it once left out the newer ones).
  for (const gui::View view : gui::all_views)
    EXPECT_NE(help.output.find(gui::view_name(view)), std::string::npos) << gui::view_name(view);
}

// The GUI opens what the CLI reads: a PyTorch snapshot's pickle, and refuses a hostile one.
TEST(GuiProgram, opens_a_snapshot_pickle_and_refuses_one_that_would_run_code) {
  const auto dir = scratch_dir("pickle");
  const std::string data = std::string(ALLOCLAB_TEST_DATA) + "/interchange/";
  const std::string png = (dir / "shot.png").string();
  const CliResult r = run_headless("--size 640x480 --view memory --screenshot " + png + " " + data +
                                   "snapshot_torch.p4.pickle");
  ALLOCLAB_SKIP_WITHOUT_RENDERING(r);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(load_png(png).width, 640);
  const std::string hostile = data + "hostile_os_system.p2.pickle";
  const CliResult refused =
      run_headless("--screenshot " + (dir / "no.png").string() + " " + hostile);
  EXPECT_EQ(refused.status, 2) << refused.output;
  EXPECT_NE(refused.output.find(hostile + ": byte 66: opcode GLOBAL"), std::string::npos)
      << refused.output;
}

// A script's screenshot and export-csv are outputs like --screenshot: checked before anything
// runs, never replacing an existing file without --force or any file the session reads.
TEST(GuiProgram, a_script_never_replaces_an_input_or_an_existing_file_without_force) {
  const auto dir = scratch_dir("script-outputs");
  const std::string trace = (dir / "t.csv").string(), png = (dir / "shot.png").string();
  const std::string csv = (dir / "table.csv").string(), script = (dir / "s.txt").string();
  std::filesystem::copy_file(traces_dir() + "/tiny.csv", trace);
  std::ofstream(png) << "precious";
  std::ofstream(csv) << "precious";
  const std::string original = read_file(trace);
  struct Case {
    std::string lines, message;
  } cases[] = {
      {"open " + trace + "\nwait\nscreenshot " + png,
       png + ": already exists; pass --force to replace it"},
      {"open " + trace + "\nwait\nexport-csv " + csv,
       csv + ": already exists; pass --force to replace it"},
      {"open " + trace + "\nwait\nexport-csv " + trace, "would replace the input"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.lines);
    std::ofstream(script) << c.lines;
    const CliResult r = run_shell(gui_program() + " --headless --script " + script);
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("headless rendering"), std::string::npos) << "rendered first";
    EXPECT_EQ(read_file(trace), original);
    EXPECT_EQ(read_file(png), "precious");
    EXPECT_EQ(read_file(csv), "precious");
  }
  std::ofstream(script) << "open " << trace << "\nwait\ntype spec exact\nclick Add\nclick Run\n"
                        << "wait\nexport-csv " << csv << "\n";
  const CliResult forced = run_headless("--force --size 800x600 --script " + script);
  ALLOCLAB_SKIP_WITHOUT_RENDERING(forced);
  ASSERT_EQ(forced.status, 0) << forced.output;
  EXPECT_NE(read_file(csv), "precious");
}

TEST(GuiProgram, bad_input_is_one_clear_line_and_status_2) {
  // Headless needs something to show: a screenshot, a new file for each case.
  const auto dir = scratch_dir("bad-input");
  const auto t = [&](const std::string& shot) {
    return traces_dir() + "/tiny.csv --screenshot " + (dir / shot).string();
  };
  struct Case {
    std::string args, message;
  } cases[] = {
      {"/no/such/trace.alt " + t("1.png"), "/no/such/trace.alt"},
      {"--size 12x " + t("2.png"), "--size '12x'"},
      {"--view charts " + t("3.png"), "unknown view 'charts'"},
      {"-s fifo-shrink:max=lots " + t("4.png"), "strategy 'fifo-shrink:max=lots'"},
      {"--script /no/such/script.txt", "cannot read the script"},
      {"--no-such-option", "--no-such-option"},
  };
  for (const Case& c : cases) {
    const CliResult r = run_headless(c.args);
    EXPECT_EQ(r.status, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << c.args << "\n" << r.output;
  }
}

// --screenshot overwrote any file, the trace it shows included. The rule of every alloclab output
// holds, checked before a window opens or a trace loads, by `alloclab gui` and the program alike.
TEST(GuiProgram, a_screenshot_never_replaces_an_input_or_an_existing_file_without_force) {
  const auto dir = scratch_dir("outputs");
  const std::string trace = (dir / "t.csv").string(), png = (dir / "shot.png").string();
  std::filesystem::copy_file(traces_dir() + "/tiny.csv", trace);
  std::filesystem::create_symlink(trace, dir / "link.png");
  std::ofstream(png) << "precious";
  const std::string original = read_file(trace);
  struct Case {
    std::string args, message;
  } cases[] = {
      {"--screenshot " + trace + " " + trace, trace + ": --screenshot would replace the input"},
      {"--force --screenshot " + (dir / "link.png").string() + " " + trace,
       "would replace the input " + trace},
      {"--screenshot " + png + " " + trace, png + ": already exists; pass --force to replace it"},
      {"--screenshot " + (dir / "absent/shot.png").string() + " " + trace, "does not exist"},
  };
  for (const Case& c : cases)
    for (const std::string& program :
         {gui_program() + " --headless", std::string(ALLOCLAB_CLI) + " gui --headless"}) {
      SCOPED_TRACE(program + " " + c.args);
      const CliResult r = run_shell(program + " " + c.args);
      EXPECT_EQ(r.status, 2) << r.output;
      EXPECT_EQ(r.output.rfind("alloclab gui: error: ", 0), 0u) << r.output;
      EXPECT_NE(r.output.find(c.message), std::string::npos) << r.output;
      EXPECT_EQ(r.output.find("headless rendering"), std::string::npos) << "rendered first";
      EXPECT_EQ(read_file(trace), original);
      EXPECT_EQ(read_file(png), "precious");
    }
  const CliResult forced = run_headless("--force --size 320x240 --screenshot " + png + " " + trace);
  ALLOCLAB_SKIP_WITHOUT_RENDERING(forced);
  ASSERT_EQ(forced.status, 0) << forced.output;
  EXPECT_EQ(load_png(png).width, 320);
  // A link is replaced itself, never written through.
  std::ofstream(dir / "other.txt") << "precious";
  std::filesystem::create_symlink(dir / "other.txt", dir / "other.png");
  const std::string other = (dir / "other.png").string();
  ASSERT_EQ(run_headless("-f --size 320x240 --screenshot " + other + " " + trace).status, 0);
  EXPECT_FALSE(std::filesystem::is_symlink(other));
  EXPECT_EQ(load_png(other).width, 320);
  EXPECT_EQ(read_file((dir / "other.txt").string()), "precious");
}

// `--headless` alone rendered nothing, wrote nothing and said nothing, with status 0.
TEST(GuiProgram, headless_without_an_output_is_a_usage_error) {
  for (const std::string& program : {gui_program(), std::string(ALLOCLAB_CLI) + " gui"}) {
    const CliResult r = run_shell(program + " --headless " + traces_dir() + "/tiny.csv");
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_EQ(r.output.rfind("alloclab gui: error: --headless shows nothing: give --screenshot, "
                             "--script or --frame-times\nUsage: alloclab gui [OPTIONS]",
                             0),
              0u)
        << r.output;
  }
}

// A bad command line is one line, then the usage, as for every alloclab command.
TEST(GuiProgram, a_usage_error_is_one_line_then_the_usage) {
  const CliResult r = run_shell(gui_program() + " --size");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_EQ(r.output.rfind("alloclab gui: error: ", 0), 0u) << r.output;
  EXPECT_NE(r.output.find("\nUsage: alloclab gui [OPTIONS]"), std::string::npos) << r.output;
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
