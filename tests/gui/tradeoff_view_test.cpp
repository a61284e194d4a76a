// The Trade-off view driven by scripts as a user drives it: hover a strategy's point (on the
// Overview and in the view), switch the y axis, overlay a second report, find advise's
// recommendation; the tooltips must give the report's exact numbers, as must those of the other
// views' bars and curves.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "alloclab/format/units.hpp"
#include "gui_test_util.hpp"

namespace alloclab::test {
namespace {

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

const nlohmann::json& result_of(const nlohmann::json& report, const std::string& spec) {
  for (const nlohmann::json& r : report["results"])
    if (r["strategy"] == spec) return r;
  ADD_FAILURE() << "no result " << spec;
  static const nlohmann::json none = nlohmann::json::object();
  return none;
}

std::string exact(const nlohmann::json& r, const char* key) {
  return grouped(r[key].get<std::uint64_t>());
}

TEST(TradeoffView, hovering_a_point_gives_its_exact_bytes_calls_and_misses) {
  const auto dir = scratch_dir("tradeoff");
  const std::string json = (dir / "tf.json").string();
  const CliResult cli =
      run_cli("replay " + traces_dir() +
              "/transformer-varlen.alt -s exact -s best-fit -s fifo-shrink:max=1MiB "
              "-s passthrough --json " +
              json);
  ASSERT_EQ(cli.status, 0) << cli.output;
  const nlohmann::json report = read_json(json);
  const nlohmann::json& exact_r = result_of(report, "exact");
  const nlohmann::json& fifo = result_of(report, "fifo-shrink:max=1MiB");
  const std::string csv = (dir / "tradeoff.csv").string();
  const std::string script = (dir / "s.txt").string();
  std::ofstream(script) << "open " << json
                        << "\nwait\n"
                        // The Overview shows the chart under its table.
                        << "mouse-on chart:tradeoff/point:exact\nframes 2\n"
                        << "expect-text tooltip \"(" << exact(exact_r, "peak_reserved_bytes")
                        << " bytes)\"\n"
                        << "view tradeoff\nframes 2\n"
                        << "mouse-on chart:tradeoff/point:fifo-shrink:max=1MiB\nframes 2\n"
                        << "expect-text tooltip \"peak reserved \"\n"
                        << "expect-text tooltip \"(" << exact(fifo, "peak_reserved_bytes")
                        << " bytes)\"\n"
                        << "expect-text tooltip \"upstream calls "
                        << grouped(fifo["upstream_allocs"].get<std::uint64_t>() +
                                   fifo["upstream_frees"].get<std::uint64_t>())
                        << " (" << exact(fifo, "upstream_allocs") << " allocs + "
                        << exact(fifo, "upstream_frees") << " frees)\"\n"
                        << "click tradeoff:y:misses\nframes 2\n"
                        << "mouse-on chart:tradeoff/point:fifo-shrink:max=1MiB\nframes 2\n"
                        << "expect-text chart:tradeoff/y \"misses (log scale\"\n"
                        << "expect-text tooltip \"misses " << exact(fifo, "misses") << " of "
                        << exact(fifo, "requests") << " requests\"\n"
                        << "export-csv " << csv << "\n";
  const CliResult gui = run_headless("--size 1000x700 --script " + script);
  ALLOCLAB_SKIP_WITHOUT_RENDERING(gui);
  ASSERT_EQ(gui.status, 0) << gui.output;
  // The exported points are the report's numbers, y as switched.
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 4u);
  for (const nlohmann::json& r : report["results"]) {
    const std::string spec = r["strategy"];
    ASSERT_TRUE(rows.count(spec)) << spec;
    EXPECT_EQ(rows.at(spec).at("peak_reserved_bytes"),
              std::to_string(r["peak_reserved_bytes"].get<std::uint64_t>()));
    EXPECT_EQ(rows.at(spec).at("misses"), std::to_string(r["misses"].get<std::uint64_t>()));
  }
  // passthrough reserves least and exact misses least: both are on the frontier.
  EXPECT_EQ(rows.at("passthrough").at("pareto_frontier"), "yes");
}

TEST(TradeoffView, a_second_report_is_drawn_over_the_first_with_its_own_markers) {
  const auto dir = scratch_dir("tradeoff-compare");
  const std::string a = (dir / "cnn.json").string(), b = (dir / "tf.json").string();
  for (const auto& [trace, out] :
       {std::pair{"cnn-inference.alt", a}, {"transformer-varlen.alt", b}}) {
    const CliResult cli =
        run_cli("replay " + traces_dir() + "/" + trace + " -s exact -s best-fit --json " + out);
    ASSERT_EQ(cli.status, 0) << cli.output;
  }
  const nlohmann::json cnn = read_json(a);
  const std::string script = (dir / "s.txt").string();
  // tf.json opens last, so it is the current report; cnn.json (report 0) is compared with it.
  std::ofstream(script) << "open " << a << "\nwait\nopen " << b << "\nwait\n"
                        << "view tradeoff\nframes 2\n"
                        << "click tradeoff:compare\nframes 1\nclick tradeoff:compare:0\nframes 2\n"
                        << "mouse-on chart:tradeoff/point:b:best-fit\nframes 2\n"
                        << "expect-text tooltip \"report " << a << "\"\n"
                        << "expect-text tooltip \"("
                        << exact(result_of(cnn, "best-fit"), "peak_reserved_bytes")
                        << " bytes)\"\n";
  const CliResult gui = run_headless("--size 1000x700 --script " + script);
  ALLOCLAB_SKIP_WITHOUT_RENDERING(gui);
  EXPECT_EQ(gui.status, 0) << gui.output;
}

TEST(TradeoffView, advises_recommendation_is_marked_and_named_in_its_tooltip) {
  const auto dir = scratch_dir("tradeoff-advise");
  const std::string json = (dir / "advice.json").string();
  const CliResult cli =
      run_cli("advise " + traces_dir() + "/transformer-varlen.alt --json " + json);
  ASSERT_EQ(cli.status, 0) << cli.output;
  const nlohmann::json advice = read_json(json);
  ASSERT_TRUE(advice["advice"][0]["recommended"].is_object()) << advice["advice"][0].dump();
  const std::string spec = advice["advice"][0]["recommended"]["strategy"];
  const std::string script = (dir / "s.txt").string();
  std::ofstream(script) << "open " << json << "\nwait\nview tradeoff\nframes 2\n"
                        << "mouse-on \"chart:tradeoff/point:" << spec << "\"\nframes 2\n"
                        << "expect-text tooltip \"" << spec << "\"\n"
                        << "expect-text tooltip \"recommended by advise\"\n";
  const CliResult gui = run_headless("--size 1000x700 --script " + script);
  ALLOCLAB_SKIP_WITHOUT_RENDERING(gui);
  EXPECT_EQ(gui.status, 0) << gui.output;
}

// Bars and curves of the other views name exact values too: the hit-rate bar its hits and misses,
// the Diff bar its bytes, the latency CDF each strategy's count of calls.
TEST(ChartTooltips, bars_and_curves_give_exact_values) {
  const auto dir = scratch_dir("chart-tooltips");
  const std::string sim = (dir / "sim.json").string(), real = (dir / "real.json").string();
  for (const std::string& args :
       {"-s passthrough -s exact --json " + sim,
        "-s passthrough -s exact --upstream host-malloc --json " + real}) {
    const CliResult cli = run_cli("replay " + traces_dir() + "/tiny.csv " + args);
    ASSERT_EQ(cli.status, 0) << cli.output;
  }
  const nlohmann::json a = read_json(sim), b = read_json(real);
  const nlohmann::json& exact_a = result_of(a, "exact");
  const nlohmann::json& exact_b = result_of(b, "exact");
  const std::string script = (dir / "s.txt").string();
  // real.json opens last: it is the current report, and B of the Diff.
  std::ofstream(script)
      << "open " << sim << "\nwait\nopen " << real << "\nwait\n"
      << "view hit-rate\nframes 2\nmouse-on chart:hit-rate/x:exact\nframes 2\n"
      << "expect-text tooltip \"hits " << exact(exact_b, "hits") << ", misses "
      << exact(exact_b, "misses") << " of " << exact(exact_b, "requests") << " requests\"\n"
      << "view diff\nframes 2\nmouse-on chart:diff-reserved/x:exact\nframes 2\n"
      << "expect-text tooltip \"A: \"\n"
      << "expect-text tooltip \"(" << exact_a["peak_reserved_bytes"].get<std::uint64_t>()
      << " bytes)\"\n"
      << "view latency\nframes 2\nmouse-on chart:latency-cdf\nframes 2\n"
      << "expect-text tooltip \"exact: \"\n"
      << "expect-text tooltip \" of "
      << grouped(exact_b["latency"]["strategy_allocate"]["count"].get<std::uint64_t>())
      << " calls <= x\"\n";
  const CliResult gui = run_headless("--size 1000x700 --script " + script);
  ALLOCLAB_SKIP_WITHOUT_RENDERING(gui);
  EXPECT_EQ(gui.status, 0) << gui.output;
}

}  // namespace
}  // namespace alloclab::test
