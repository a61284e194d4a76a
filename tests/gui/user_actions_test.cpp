// What a user does with the mouse that the other tests do not reach: drop files on the window,
// cancel a running replay, File > Open through the dialog, and the File menu's exports. Each
// goes through the code the user's action runs (the drop handler the GLFW callback calls, the
// menu, the dialog's field and button, the Cancel button), driven by `--script`.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "gui_test_util.hpp"
#include "tests/real_size.hpp"

namespace alloclab::test {
namespace {

nlohmann::json cli_report(const std::string& trace, const std::string& specs,
                          const std::string& json) {
  const CliResult cli = run_cli("replay " + trace + " " + specs + " --json " + json);
  EXPECT_EQ(cli.status, 0) << cli.output;
  std::ifstream in(json);
  return nlohmann::json::parse(in);
}

// Every counter of the Overview table equals the report's.
void expect_overview_equals(const std::string& csv, const nlohmann::json& report) {
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), report["results"].size()) << csv;
  for (const nlohmann::json& r : report["results"]) {
    const std::string spec = r["strategy"];
    ASSERT_TRUE(rows.count(spec)) << spec;
    for (const char* key : {"requests", "hits", "misses", "upstream_allocs", "upstream_frees",
                            "evictions", "peak_live_bytes", "peak_reserved_bytes",
                            "final_cached_bytes", "slack_bytes", "failed_requests"})
      EXPECT_EQ(rows.at(spec).at(key), std::to_string(r[key].get<std::uint64_t>()))
          << spec << " " << key;
    EXPECT_DOUBLE_EQ(std::stod(rows.at(spec).at("hit_rate")), r["hit_rate"].get<double>());
  }
}

// The plot background, possibly under the faint shading of runs.
bool plot_background(int r, int g, int b) {
  return r >= 24 && r <= 50 && g - r == 2 && b - r >= 4 && b - r <= 6;
}
auto near(int R, int G, int B, int tolerance = 4) {
  return [=](int r, int g, int b) {
    return std::abs(r - R) <= tolerance && std::abs(g - G) <= tolerance &&
           std::abs(b - B) <= tolerance;
  };
}

TEST(UserActions, dropped_trace_and_report_open) {
  const auto dir = scratch_dir("drop");
  const std::string trace = traces_dir() + "/cnn-inference.alt";
  const std::string json = (dir / "cnn.json").string();
  const nlohmann::json report = cli_report(trace, "-s exact -s best-fit", json);
  const std::string script = (dir / "drop.txt").string();
  // One drop with two files, as a file manager sends them.
  std::ofstream(script) << "drop " << trace << " " << json << "\nwait\n"
                        << "mouse-on trace:cnn-inference.alt\nmouse-on report:0\n"
                        << "view overview\nframes 2\nexport-csv " << (dir / "o.csv").string()
                        << "\n";
  const CliResult gui = run_headless("--size 1000x700 --script " + script);
  ALLOCLAB_SKIP_WITHOUT_RENDERING(gui);
  ASSERT_EQ(gui.status, 0) << gui.output;
  expect_overview_equals((dir / "o.csv").string(), report);
}

TEST(UserActions, cancel_stops_a_running_replay_and_the_ui_keeps_drawing) {
  const auto dir = scratch_dir("cancel");
  // Big enough that 24 strategies take seconds to replay (tens of millions of simulated
  // operations): the click on Cancel, a few frames after Run, lands while it runs.
  const std::string trace = (dir / "big.alt").string();
  const CliResult gen = run_cli("generate --shape transformer --events " +
                                std::to_string(test::real_size(4000000)) + " -o " + trace);
  ASSERT_EQ(gen.status, 0) << gen.output;
  std::string specs;
  for (int i = 0; i < 4; ++i)
    for (const char* s : {"exact", "best-fit", "fifo-shrink:max=64MiB", "per-run-pool", "pytorch",
                          "fifo-shrink:max=64MiB,match=best-fit"})
      specs += std::string(" -s ") + s;
  const std::string script = (dir / "cancel.txt").string();
  const std::string png = (dir / "after.png").string();
  // -s without a file only fills the strategy editor; the replay starts from Run.
  std::ofstream(script) << "open " << trace << "\nwait\nclick Run\nclick Cancel\nwait\n"
                        << "expect-message cancelled\n"
                        << "expect-missing report:0\nexpect-missing Cancel\n"
                        << "view memory\nframes 30\nscreenshot " << png << "\n";
  const CliResult gui = run_headless("--size 1000x700 --script " + script + specs);
  ALLOCLAB_SKIP_WITHOUT_RENDERING(gui);
  ASSERT_EQ(gui.status, 0) << gui.output;
  // Frames after the cancel: the window still draws (the trace's live bytes, no report).
  const Image image = load_png(png);
  ASSERT_EQ(image.width, 1000);
  EXPECT_GT(distinct_colors(image, 0, 0, 1000, 700), 20u) << "blank";
  EXPECT_GT(count_pixels(image, 310, 60, 1000, 700, near(235, 235, 235)), 200u)
      << "no live-bytes line";
  EXPECT_EQ(count_pixels(image, 310, 60, 1000, 700, near(0x00, 0x72, 0xB2)), 0u)
      << "a reserved-bytes line of a cancelled replay";
}

TEST(UserActions, file_open_dialog_opens_the_typed_path) {
  const auto dir = scratch_dir("dialog");
  const std::string trace = traces_dir() + "/transformer-varlen.alt";
  const std::string json = (dir / "tf.json").string();
  const nlohmann::json report = cli_report(trace, "-s exact -s fifo-shrink:max=1MiB", json);
  const std::string script = (dir / "open.txt").string();
  std::ofstream(script) << "click menu:File\nclick \"File > Open...\"\n"
                        << "type path " << json << "\nclick Open\nwait\n"
                        << "expect-missing path\nmouse-on report:0\n"
                        << "view overview\nframes 2\nexport-csv " << (dir / "o.csv").string()
                        << "\n";
  const CliResult gui = run_headless("--size 1000x700 --script " + script);
  ALLOCLAB_SKIP_WITHOUT_RENDERING(gui);
  ASSERT_EQ(gui.status, 0) << gui.output;
  expect_overview_equals((dir / "o.csv").string(), report);
}

TEST(UserActions, file_menu_exports_the_view_to_png_and_the_table_to_csv) {
  const auto dir = scratch_dir("menu-export");
  const std::string trace = traces_dir() + "/cnn-inference.alt";
  const std::string specs = "-s exact -s fifo-shrink:max=1MiB";
  const nlohmann::json report = cli_report(trace, specs, (dir / "cli.json").string());
  const std::string png = (dir / "memory.png").string();
  const std::string csv = (dir / "overview.csv").string();
  const std::string script = (dir / "export.txt").string();
  std::ofstream(script) << "wait\nview memory\nframes 2\n"
                        << "click menu:File\nclick \"File > Export view to PNG...\"\n"
                        << "type export-path " << png << "\nclick Write\nframes 2\n"
                        << "expect-message \"wrote " << png << "\"\n"
                        << "view overview\nframes 2\n"
                        << "click menu:File\nclick \"File > Export table to CSV...\"\n"
                        << "type export-path " << csv << "\nclick Write\nframes 2\n"
                        << "expect-message \"wrote " << csv << "\"\n";
  const CliResult gui =
      run_headless("--size 1000x700 --script " + script + " " + trace + " " + specs);
  ALLOCLAB_SKIP_WITHOUT_RENDERING(gui);
  ASSERT_EQ(gui.status, 0) << gui.output;

  // The PNG is the memory view, not the export dialog over it: the plot's own background and
  // every series' colour.
  const Image image = load_png(png);
  ASSERT_FALSE(image.empty()) << png;
  EXPECT_EQ(image.width, 1000);
  EXPECT_EQ(image.height, 700);
  EXPECT_GT(distinct_colors(image, 0, 0, 1000, 700), 20u) << "blank";
  EXPECT_GT(count_pixels(image, 310, 60, 1000, 700, plot_background), 50'000u);
  EXPECT_GT(count_pixels(image, 310, 60, 1000, 700, near(235, 235, 235)), 200u) << "live bytes";
  EXPECT_GT(count_pixels(image, 310, 60, 1000, 700, near(0x00, 0x72, 0xB2)), 200u)
      << "reserved bytes of the first strategy";
  EXPECT_GT(count_pixels(image, 310, 60, 1000, 700, near(0xE6, 0x9F, 0x00)), 200u)
      << "reserved bytes of the second strategy";

  expect_overview_equals(csv, report);
}

}  // namespace
}  // namespace alloclab::test
