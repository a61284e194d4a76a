// A scripted session through the UI (open a trace, add two strategies, run, open the memory
// view, export CSV) whose exported numbers must equal `alloclab replay --json`.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "gui_test_util.hpp"

namespace alloclab::test {
namespace {

TEST(ScriptedSession, exported_numbers_equal_the_cli_report) {
  const auto dir = scratch_dir("session");
  const std::string trace = traces_dir() + "/transformer-varlen.alt";
  const std::string script = (dir / "session.txt").string();
  std::ofstream(script) << "open " << trace << "\nwait\n"
                        << "type spec exact\nclick Add\n"
                        << "type spec \"fifo-shrink:max=1MiB,match=best-fit\"\nclick Add\n"
                        << "click Run\nwait\n"
                        << "view memory\nframes 2\nmouse-on chart:memory\nwheel 2\nframes 2\n"
                        << "export-csv " << (dir / "memory.csv").string() << "\n"
                        << "view overview\nframes 2\nexport-csv " << (dir / "overview.csv").string()
                        << "\n"
                        << "screenshot " << (dir / "session.png").string() << "\n";
  const CliResult gui = run_headless("--size 1000x700 --script " + script);
  ALLOCLAB_SKIP_WITHOUT_RENDERING(gui);
  ASSERT_EQ(gui.status, 0) << gui.output;

  const std::string json = (dir / "cli.json").string();
  const CliResult cli = run_cli("replay " + trace +
                                " -s exact -s fifo-shrink:max=1MiB,match=best-fit --json " + json);
  ASSERT_EQ(cli.status, 0) << cli.output;
  std::ifstream in(json);
  const nlohmann::json report = nlohmann::json::parse(in);

  const auto memory = read_csv((dir / "memory.csv").string());
  const auto overview = read_csv((dir / "overview.csv").string());
  ASSERT_EQ(memory.size(), 2u);
  ASSERT_EQ(overview.size(), 2u);
  for (const nlohmann::json& r : report["results"]) {
    const std::string spec = r["strategy"];
    ASSERT_TRUE(memory.count(spec)) << spec;
    for (const char* key : {"peak_live_bytes", "peak_reserved_bytes", "final_cached_bytes"})
      EXPECT_EQ(memory.at(spec).at(key), std::to_string(r[key].get<std::uint64_t>()))
          << spec << " " << key;
    for (const char* key : {"requests", "hits", "misses", "upstream_allocs", "upstream_frees",
                            "evictions", "peak_live_bytes", "peak_reserved_bytes",
                            "final_cached_bytes", "slack_bytes", "failed_requests"})
      EXPECT_EQ(overview.at(spec).at(key), std::to_string(r[key].get<std::uint64_t>()))
          << spec << " " << key;
    EXPECT_DOUBLE_EQ(std::stod(overview.at(spec).at("hit_rate")), r["hit_rate"].get<double>());
  }
  EXPECT_FALSE(load_png((dir / "session.png").string()).empty());
}

TEST(ScriptedSession, a_script_that_clicks_a_missing_widget_fails_naming_the_line) {
  const auto dir = scratch_dir("bad-script");
  const std::string script = (dir / "bad.txt").string();
  std::ofstream(script) << "frames 1\nclick \"No such button\"\n";
  const CliResult r = run_headless("--size 800x600 --script " + script);
  ALLOCLAB_SKIP_WITHOUT_RENDERING(r);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("bad.txt:2: no widget named 'No such button'"), std::string::npos)
      << r.output;
}

TEST(ScriptedSession, expect_text_reads_the_tooltip_and_fails_naming_what_it_shows) {
  const auto dir = scratch_dir("expect-text");
  const std::string script = (dir / "s.txt").string();
  // The memory chart's tooltip names the time first, then the live bytes.
  std::ofstream(script) << "open " << traces_dir() << "/tiny.csv\nwait\nview memory\n"
                        << "mouse-on chart:memory\nframes 2\n"
                        << "expect-text tooltip \"live: \"\n"
                        << "expect-text tooltip \"no such line\"\n";
  const CliResult r = run_headless("--size 800x600 --script " + script);
  ALLOCLAB_SKIP_WITHOUT_RENDERING(r);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("s.txt:7: 'tooltip' shows 't = "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("which lacks 'no such line'"), std::string::npos) << r.output;
}

TEST(ScriptedSession, an_invalid_spec_typed_in_the_editor_is_not_added) {
  const auto dir = scratch_dir("bad-spec");
  const std::string script = (dir / "s.txt").string();
  std::ofstream(script) << "open " << traces_dir()
                        << "/tiny.csv\nwait\ntype spec fifo-shrink:max=lots\nclick Add\n"
                        << "click Run\nwait\nexport-csv " << (dir / "o.csv").string() << "\n";
  const CliResult r = run_headless("--size 800x600 --script " + script);
  ALLOCLAB_SKIP_WITHOUT_RENDERING(r);
  // Nothing was replayed, so the overview has no table to export.
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("shows no table"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace alloclab::test
