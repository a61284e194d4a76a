// Where charts put their labels and legends, read from the UI registry after a frame drawn
// in-process (no window, no GL: ImGui builds the frame without rendering it). Nothing may sit over
// the data: the legend is outside the plot area, and a category axis names its bars, under them,
// without two names touching.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>

#include <imgui.h>

#include "gui/chart.hpp"
#include "gui/model.hpp"
#include "gui/ui_registry.hpp"
#include "gui/views.hpp"
#include "gui_test_util.hpp"

namespace alloclab::gui {
namespace {

bool overlap(const ItemRect& a, const ItemRect& b) {
  return a.min.x < b.max.x && b.min.x < a.max.x && a.min.y < b.max.y && b.min.y < a.max.y;
}

bool inside(const ItemRect& inner, const ItemRect& outer) {
  return inner.min.x >= outer.min.x && inner.max.x <= outer.max.x && inner.min.y >= outer.min.y &&
         inner.max.y <= outer.max.y;
}

std::string describe(const ItemRect& r) {
  return "(" + std::to_string(r.min.x) + ", " + std::to_string(r.min.y) + ")-(" +
         std::to_string(r.max.x) + ", " + std::to_string(r.max.y) + ")";
}

class ChartLayout : public ::testing::Test {
 protected:
  void SetUp() override {
    ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;
    io.DeltaTime = 1.0f / 60;
    unsigned char* pixels = nullptr;
    int width = 0, height = 0;
    io.Fonts->GetTexDataAsRGBA32(&pixels, &width, &height);  // builds the default font
  }
  void TearDown() override { ImGui::DestroyContext(); }

  // One frame of `draw` in a window filling a display of `size`; the registry then holds the
  // frame's items.
  static void frame(const std::function<void()>& draw, ImVec2 size = ImVec2(1000, 700)) {
    ImGui::GetIO().DisplaySize = size;
    ImGui::NewFrame();
    begin_registry_frame();
    ImGui::SetNextWindowPos(ImVec2(0, 0));
    ImGui::SetNextWindowSize(size);
    ImGui::Begin("views", nullptr, ImGuiWindowFlags_NoDecoration);
    draw();
    ImGui::End();
    ImGui::Render();
  }

  static ItemRect item(const std::string& name) {
    const std::optional<ItemRect> found = find_item(name);
    EXPECT_TRUE(found) << "no '" << name << "' among " << registered_names();
    return found.value_or(ItemRect{});
  }

  // The category labels of chart `id` lie under the plot, each under the middle of its own
  // slot, and no two touch. Returns how many were drawn.
  static std::size_t expect_category_labels(const std::string& id,
                                            const std::vector<std::string>& names) {
    const ItemRect plot = item("chart:" + id + "/plot");
    const ItemRect chart = item("chart:" + id);
    const float slot = (plot.max.x - plot.min.x) / static_cast<float>(names.size());
    std::vector<ItemRect> drawn;
    for (std::size_t i = 0; i < names.size(); ++i) {
      const std::optional<ItemRect> label = find_item("chart:" + id + "/x:" + names[i]);
      if (!label) continue;
      SCOPED_TRACE(names[i] + " at " + describe(*label));
      EXPECT_GE(label->min.y, plot.max.y);
      EXPECT_TRUE(inside(*label, chart));
      const float middle = (label->min.x + label->max.x) / 2;
      EXPECT_NEAR(middle, plot.min.x + slot * (static_cast<float>(i) + 0.5f), 1.0f);
      for (const ItemRect& other : drawn) EXPECT_FALSE(overlap(*label, other));
      drawn.push_back(*label);
    }
    return drawn.size();
  }
};

// n distinct specs that differ only at their end, as a sweep's points do.
std::vector<std::string> strategies(int n, const std::string& stem) {
  std::vector<std::string> names;
  for (int i = 1; i <= n; ++i) names.push_back(stem + std::to_string(i * 64) + "MiB");
  return names;
}

TEST_F(ChartLayout, a_category_axis_names_every_bar_under_its_slot) {
  const std::vector<std::string> names = {"exact",        "best-fit", "fifo-shrink:max=16MiB",
                                          "per-run-pool", "pytorch",  "passthrough",
                                          "rten"};
  frame(
      [&] {
        Chart chart("bars", ImVec2(0, 300), Axis{0, 7, false, Unit::count, "", names},
                    Axis{0, 1, false, Unit::percent, "hit rate"});
      },
      ImVec2(1400, 400));
  EXPECT_EQ(expect_category_labels("bars", names), names.size());
  // Room enough: each name is shown whole, so its label is as wide as the name.
  for (const std::string& name : names) {
    const ItemRect label = item("chart:bars/x:" + name);
    EXPECT_FLOAT_EQ(label.max.x - label.min.x, ImGui::CalcTextSize(name.c_str()).x) << name;
  }
}

TEST_F(ChartLayout, crowded_category_names_are_shortened_or_thinned_and_never_touch) {
  for (const int n : {12, 24, 60}) {
    SCOPED_TRACE(std::to_string(n) + " categories");
    const std::vector<std::string> names = strategies(n, "fifo-shrink:match=best-fit,max=");
    frame(
        [&] {
          Chart chart("crowded", ImVec2(0, 300),
                      Axis{0, static_cast<double>(n), false, Unit::count, "", names},
                      Axis{0, 1, false, Unit::percent, "hit rate"});
        },
        ImVec2(500, 400));
    const std::size_t drawn = expect_category_labels("crowded", names);
    EXPECT_GE(drawn, static_cast<std::size_t>(n) / 8) << "too few names left";
    EXPECT_TRUE(find_item("chart:crowded/x:" + names[0])) << "the first bar has no name";
  }
}

TEST_F(ChartLayout, the_legend_sits_outside_the_plot_area) {
  std::vector<LegendEntry> legend;
  for (const char* name : {"live", "reserved: exact", "reserved: best-fit"})
    legend.push_back({name, series_color(static_cast<int>(legend.size()))});
  frame([&] {
    Chart chart("lines", ImVec2(0, 300), Axis{0, 100, false, Unit::ns, "time"},
                Axis{0, 1e6, false, Unit::bytes, "bytes"}, legend);
  });
  const ItemRect plot = item("chart:lines/plot");
  const ItemRect box = item("chart:lines/legend");
  EXPECT_FALSE(overlap(box, plot)) << describe(box) << " over " << describe(plot);
  EXPECT_TRUE(inside(box, item("chart:lines")));
  for (const LegendEntry& e : legend)
    EXPECT_TRUE(inside(item("chart:lines/legend:" + e.label), box));
}

TEST_F(ChartLayout, a_long_legend_wraps_in_a_few_rows_and_says_how_many_more) {
  std::vector<LegendEntry> legend;
  for (const std::string& name : strategies(40, "fifo-shrink:max="))
    legend.push_back({name, series_color(static_cast<int>(legend.size()))});
  frame([&] {
    Chart chart("many", ImVec2(0, 400), Axis{0, 100, false, Unit::ns, "time"},
                Axis{0, 1e6, false, Unit::bytes, "bytes"}, legend);
  });
  const ItemRect plot = item("chart:many/plot");
  const ItemRect box = item("chart:many/legend");
  EXPECT_FALSE(overlap(box, plot));
  EXPECT_LE(box.max.y - box.min.y, 3 * (ImGui::GetFontSize() + 4) + 1) << describe(box);
  EXPECT_GT(plot.max.y - plot.min.y, 200) << "the legend took the plot's room";
  std::size_t shown = 0;
  while (shown < legend.size() && find_item("chart:many/legend:" + legend[shown].label)) ++shown;
  EXPECT_GT(shown, 0u);
  EXPECT_LT(shown, legend.size());
  EXPECT_TRUE(
      inside(item("chart:many/legend:+" + std::to_string(legend.size() - shown) + " more"), box));
}

std::shared_ptr<ReportDoc> golden_report(const std::string& name) {
  std::ifstream in(test::golden(name));
  nlohmann::json report = {
      {"schema_version", 1}, {"mode", "sim"}, {"results", nlohmann::json::parse(in)}};
  return report_from_json(std::move(report), name);
}

// The Hit rate view's two charts and the Diff view's chart label their x axis with the strategy
// names (they were numbered 0..6), and their legends stay off the bars.
TEST_F(ChartLayout, hit_rate_and_diff_charts_name_their_bars) {
  Model model;
  model.add_report(golden_report("transformer-varlen.alt.json"));
  model.add_report(golden_report("transformer-varlen.alt.json"));
  model.current_report = 0;
  model.diff_a = 0;
  model.diff_b = 1;
  std::vector<std::string> names;
  for (const StrategyResult& r : model.reports[0]->results) names.push_back(r.strategy);
  ASSERT_EQ(names.size(), 13u);

  ViewState state;
  frame([&] { draw_hit_rate(model, state); });
  for (const char* id : {"hit-rate", "upstream-calls"}) {
    SCOPED_TRACE(id);
    EXPECT_EQ(expect_category_labels(id, names), names.size());
    EXPECT_FALSE(overlap(item(std::string("chart:") + id + "/legend"),
                         item(std::string("chart:") + id + "/plot")));
  }
  frame([&] { draw_diff(model, state); });
  EXPECT_EQ(expect_category_labels("diff-reserved", names), names.size());
  EXPECT_FALSE(overlap(item("chart:diff-reserved/legend"), item("chart:diff-reserved/plot")));
}

// The memory view's legend covered the reserved line of `exact` (drawn near the plot's top).
TEST_F(ChartLayout, the_memory_views_legend_covers_no_line) {
  const auto dir = test::scratch_dir("chart-layout");
  const std::string json = (dir / "cnn.json").string();
  const test::CliResult cli = test::run_cli(
      "replay " + test::traces_dir() + "/cnn-inference.alt -s exact -s best-fit --json " + json);
  ASSERT_EQ(cli.status, 0) << cli.output;
  std::ifstream in(json);
  Model model;
  model.add_report(report_from_json(nlohmann::json::parse(in), "cnn.json"));
  model.current_report = 0;
  ViewState state;
  frame([&] { draw_memory(model, state); });
  const ItemRect plot = item("chart:memory/plot");
  EXPECT_FALSE(overlap(item("chart:memory/legend"), plot));
  for (const char* entry : {"live", "reserved: exact", "reserved: best-fit"})
    EXPECT_FALSE(overlap(item(std::string("chart:memory/legend:") + entry), plot)) << entry;
}

StrategyResult rated(const std::string& spec, std::uint64_t requests, std::uint64_t misses,
                     std::uint64_t reserved) {
  StrategyResult r;
  r.strategy = spec;
  r.metrics.requests = requests;
  r.metrics.misses = misses;
  r.metrics.hits = requests - misses;
  r.metrics.upstream_allocs = misses;
  r.metrics.peak_reserved_bytes = reserved;
  return r;
}

// Hit rates of 97% to 99.99% made five bars of the same height: then the first chart is the
// miss rate on a log axis; lower hit rates keep the hit-rate axis; the switch overrides both.
TEST_F(ChartLayout, hit_rates_above_90_percent_are_shown_as_miss_rates_on_a_log_axis) {
  auto doc = std::make_shared<ReportDoc>();
  doc->results = {rated("exact", 100000, 3000, 1 << 20), rated("best-fit", 100000, 100, 2 << 20),
                  rated("fifo-shrink:max=1MiB", 100000, 10, 3 << 20)};
  Model model;
  model.add_report(doc);
  model.current_report = 0;
  ViewState state;
  frame([&] { draw_hit_rate(model, state); });
  EXPECT_NE(find_text("chart:hit-rate/y").value_or("").find("miss rate"), std::string::npos)
      << find_text("chart:hit-rate/y").value_or("(no label)");
  EXPECT_TRUE(find_item("hit-rate:scale:hit"));
  state.miss_rate = 0;
  frame([&] { draw_hit_rate(model, state); });
  EXPECT_EQ(find_text("chart:hit-rate/y").value_or(""), "hit rate");
  doc->results.push_back(rated("passthrough", 100000, 100000, 0));
  state.miss_rate = -1;
  frame([&] { draw_hit_rate(model, state); });
  EXPECT_EQ(find_text("chart:hit-rate/y").value_or(""), "hit rate");
}

// The Sweep view's hit-rate chart follows the same rule.
TEST_F(ChartLayout, a_sweep_above_90_percent_plots_its_miss_rate_on_a_log_axis) {
  auto doc = std::make_shared<ReportDoc>();
  doc->json = {{"sweep", {{"templates", {"fifo-shrink:max={1MiB..4MiB:x2}"}}}}};
  for (std::uint64_t mib : {1, 2, 4})
    doc->results.push_back(
        rated("fifo-shrink:max=" + std::to_string(mib) + "MiB", 100000, 400 / mib, mib << 20));
  Model model;
  model.add_report(doc);
  model.current_report = 0;
  ViewState state;
  frame([&] { draw_sweep(model, state); });
  EXPECT_NE(find_text("chart:sweep-hit-rate/y").value_or("").find("miss rate"), std::string::npos)
      << find_text("chart:sweep-hit-rate/y").value_or("(no label)");
  state.miss_rate = 0;
  frame([&] { draw_sweep(model, state); });
  EXPECT_EQ(find_text("chart:sweep-hit-rate/y").value_or(""), "hit rate");
}

// The trade-off chart: every point inside the plot, its label beside it, the legend above.
TEST_F(ChartLayout, trade_off_points_lie_in_the_plot_and_the_legend_beside_it) {
  auto doc = std::make_shared<ReportDoc>();
  doc->name = "report.json";
  for (std::uint64_t k = 0; k < 12; ++k)
    doc->results.push_back(rated("fifo-shrink:max=" + std::to_string(1u << k) + "MiB", 100000,
                                 4096u >> k, std::uint64_t{1} << (k + 20)));
  doc->results.push_back(rated("exact", 100000, 0, 8ull << 30));  // 0 calls on the log axis
  Model model;
  model.add_report(doc);
  model.current_report = 0;
  ViewState state;
  frame([&] { draw_tradeoff(model, state); });
  const ItemRect plot = item("chart:tradeoff/plot");
  EXPECT_FALSE(overlap(item("chart:tradeoff/legend"), plot));
  for (const StrategyResult& r : doc->results) {
    const ItemRect point = item("chart:tradeoff/point:" + r.strategy);
    const ImVec2 middle((point.min.x + point.max.x) / 2, (point.min.y + point.max.y) / 2);
    EXPECT_TRUE(middle.x >= plot.min.x && middle.x <= plot.max.x && middle.y >= plot.min.y &&
                middle.y <= plot.max.y)
        << r.strategy << " at " << describe(point) << ", plot " << describe(plot);
  }
  EXPECT_NE(find_text("chart:tradeoff/y").value_or("").find("0 on the lower edge"),
            std::string::npos);
  // Peaks from 1 MiB to 8 GiB: a log x axis, and its label says so.
  EXPECT_EQ(find_text("chart:tradeoff/x").value_or(""), "peak reserved bytes (log scale)");
  // The table lists every point; all are on the frontier (each doubling halves the calls).
  ASSERT_EQ(state.table.rows.size(), doc->results.size());
  for (const auto& row : state.table.rows) EXPECT_EQ(row[4].csv, "yes") << row[0].csv;
}

// A 1,000-point sweep must stay cheap for a software rasterizer: anti-aliased circles cost
// 38,000 triangles a frame. Every point is still there to hover.
TEST_F(ChartLayout, a_thousand_point_sweep_draws_few_triangles) {
  auto doc = std::make_shared<ReportDoc>();
  doc->name = "sweep.json";
  for (std::uint64_t k = 1; k <= 1000; ++k)
    doc->results.push_back(rated("fifo-shrink:max=" + std::to_string(64 * k) + "KiB", 100000,
                                 100000 / (k + 10) + (k % 7) * 50, (64 * k) << 10));
  Model model;
  model.add_report(doc);
  model.current_report = 0;
  ViewState state;
  frame([&] { draw_tradeoff(model, state); }, ImVec2(1280, 800));
  const ImDrawData* data = ImGui::GetDrawData();
  ASSERT_NE(data, nullptr);
  EXPECT_LT(data->TotalIdxCount / 3, 15000) << "triangles";
  for (const StrategyResult& r : doc->results)
    ASSERT_TRUE(find_item("chart:tradeoff/point:" + r.strategy)) << r.strategy;
}

}  // namespace
}  // namespace alloclab::gui
