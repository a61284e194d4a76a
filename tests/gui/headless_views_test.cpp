// Every view rendered headless from the bundled traces and reports made from them: the PNG must
// not be blank and known regions must show the expected structure.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "gui_test_util.hpp"

namespace alloclab::test {
namespace {

constexpr int kW = 1000, kH = 700;
// The views area: right of the 300 px side panel, below the menu and tab bars.
constexpr int kX0 = 310, kY0 = 60;

bool plot_background(int r, int g, int b) {
  return r == 24 && g == 26 && b == 30;
}
// The plot background, possibly under the faint shading of runs.
bool shaded_plot_background(int r, int g, int b) {
  return r >= 24 && r <= 50 && g - r == 2 && b - r >= 4 && b - r <= 6;
}
auto near(int R, int G, int B, int tolerance = 12) {
  return [=](int r, int g, int b) {
    return std::abs(r - R) <= tolerance && std::abs(g - G) <= tolerance &&
           std::abs(b - B) <= tolerance;
  };
}

class HeadlessViews : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = scratch_dir("views").string();
    const std::string t = traces_dir();
    auto cli = [](const std::string& args) {
      const CliResult r = run_cli(args);
      ASSERT_EQ(r.status, 0) << args << "\n" << r.output;
    };
    cli("replay " + t + "/cnn-inference.alt -s exact -s best-fit -s fifo-shrink:max=1MiB --json " +
        dir_ + "/cnn.json");
    cli("replay " + t +
        "/transformer-varlen.alt -s exact -s best-fit -s fifo-shrink:max=1MiB --json " + dir_ +
        "/tf.json");
    cli("replay " + t + "/tiny.csv -s passthrough -s exact --upstream host-malloc --json " + dir_ +
        "/real.json");
    cli("sweep " + t + "/transformer-varlen.alt -s 'fifo-shrink:max={256KiB..64MiB:x2}' --json " +
        dir_ + "/sweep.json");
  }
  static Image render(const std::string& view, const std::string& inputs) {
    const std::string png = dir_ + "/" + view + ".png";
    const CliResult r =
        run_headless("--size 1000x700 --view " + view + " --screenshot " + png + " " + inputs);
    EXPECT_EQ(r.status, 0) << r.output;
    Image image = load_png(png);
    EXPECT_EQ(image.width, kW);
    EXPECT_EQ(image.height, kH);
    if (!image.empty()) {
      EXPECT_GT(distinct_colors(image, 0, 0, kW, kH), 20u) << view << ": blank";
    }
    return image;
  }
  static std::size_t in_view(const Image& image, auto match) {
    return count_pixels(image, kX0, kY0, kW, kH, match);
  }
  static inline std::string dir_;
  static inline CliResult last_;
};

TEST_F(HeadlessViews, memory_view_draws_live_and_reserved_bytes_over_time) {
  const Image image =
      render("memory", traces_dir() + "/cnn-inference.alt -s exact -s fifo-shrink:max=1MiB");
  ALLOCLAB_SKIP_WITHOUT_RENDERING(last_);
  ASSERT_FALSE(image.empty());
  EXPECT_GT(in_view(image, shaded_plot_background), 50'000u);
  EXPECT_GT(in_view(image, near(235, 235, 235, 4)), 200u) << "no live-bytes line";
  EXPECT_GT(in_view(image, near(0x00, 0x72, 0xB2, 4)), 200u)
      << "no reserved line of the first strategy";
  EXPECT_GT(in_view(image, near(0xE6, 0x9F, 0x00, 4)), 200u)
      << "no reserved line of the second strategy";
  // The side panel lists the strategies and the trace: text, not a flat colour.
  EXPECT_GT(distinct_colors(image, 0, 30, 300, 400), 10u);
}

TEST_F(HeadlessViews, overview_highlights_the_best_value_per_column) {
  const Image image = render("overview", dir_ + "/cnn.json");
  ALLOCLAB_SKIP_WITHOUT_RENDERING(last_);
  ASSERT_FALSE(image.empty());
  const auto green = [](int r, int g, int b) { return g > r + 50 && g > b + 30; };
  EXPECT_GT(in_view(image, green), 500u) << "no highlighted cells";
}

TEST_F(HeadlessViews, tradeoff_view_draws_each_strategy_as_a_point) {
  const Image image = render("tradeoff", dir_ + "/tf.json");
  ALLOCLAB_SKIP_WITHOUT_RENDERING(last_);
  ASSERT_FALSE(image.empty());
  EXPECT_GT(in_view(image, plot_background), 50'000u);
  // Frontier points are opaque discs of the first series colour (a few dozen pixels each).
  EXPECT_GT(in_view(image, near(0x00, 0x72, 0xB2, 4)), 40u) << "no points";
}

TEST_F(HeadlessViews, hit_rate_view_draws_one_bar_per_strategy) {
  const Image image = render("hit-rate", dir_ + "/cnn.json");
  ALLOCLAB_SKIP_WITHOUT_RENDERING(last_);
  ASSERT_FALSE(image.empty());
  EXPECT_GT(in_view(image, plot_background), 50'000u);
  for (auto color :
       {near(0x00, 0x72, 0xB2, 2), near(0xE6, 0x9F, 0x00, 2), near(0x00, 0x9E, 0x73, 2)})
    EXPECT_GT(in_view(image, color), 300u);
}

TEST_F(HeadlessViews, latency_view_draws_distributions_of_a_real_replay) {
  const Image image = render("latency", dir_ + "/real.json");
  ALLOCLAB_SKIP_WITHOUT_RENDERING(last_);
  ASSERT_FALSE(image.empty());
  EXPECT_GT(in_view(image, plot_background), 50'000u);
  EXPECT_GT(in_view(image, near(0x00, 0x72, 0xB2, 4)), 100u);
}

// Columns of the view holding a pixel that `match` accepts.
template <typename F>
int columns_with(const Image& image, int y0, int y1, F match) {
  int n = 0;
  for (int x = kX0; x < kW; ++x) n += count_pixels(image, x, y0, x + 1, y1, match) > 0;
  return n;
}

TEST_F(HeadlessViews, latency_histogram_draws_the_reports_buckets) {
  // One strategy whose strategy_allocate calls are half 2-3 ns and half ~1 ms: the bars must be
  // two narrow groups on the log axis, nothing in between (percentile bars would span it).
  std::ifstream in(dir_ + "/real.json");
  nlohmann::json report = nlohmann::json::parse(in);
  report["results"].erase(1);
  nlohmann::json& l = report["results"][0]["latency"]["strategy_allocate"];
  const std::uint64_t n = l["count"].get<std::uint64_t>();
  ASSERT_GE(n, 2u);
  ASSERT_FALSE(l["histogram"].empty()) << "a real replay writes its histogram";
  l["histogram"] = {{3, n / 2}, {1048575, n - n / 2}};  // [3, 3] and [983040, 1048575]
  l["max_ns"] = 1'000'000;
  std::ofstream(dir_ + "/two-peaks.json") << report.dump();
  const Image image = render("latency", dir_ + "/two-peaks.json");
  ALLOCLAB_SKIP_WITHOUT_RENDERING(last_);
  ASSERT_FALSE(image.empty());
  // series_color(0) at 45% over the plot background.
  const int bars = columns_with(image, kY0, kH, near(13, 66, 97, 8));
  EXPECT_GT(bars, 4) << "no histogram bars";
  EXPECT_LT(bars, 80) << "bars between the two buckets";
}

TEST_F(HeadlessViews, trace_view_draws_size_and_lifetime_histograms) {
  const Image image = render("trace", traces_dir() + "/transformer-varlen.alt");
  ALLOCLAB_SKIP_WITHOUT_RENDERING(last_);
  ASSERT_FALSE(image.empty());
  EXPECT_GT(count_pixels(image, kX0, kY0, kX0 + 330, kH / 2 + 60, near(0x56, 0xB4, 0xE9, 2)), 300u)
      << "sizes";
  EXPECT_GT(count_pixels(image, kX0 + 350, kY0, kW, kH / 2 + 60, near(0x56, 0xB4, 0xE9, 2)), 300u)
      << "lifetimes";
}

TEST_F(HeadlessViews, sweep_view_plots_against_the_swept_parameter) {
  const Image image = render("sweep", dir_ + "/sweep.json");
  ALLOCLAB_SKIP_WITHOUT_RENDERING(last_);
  ASSERT_FALSE(image.empty());
  EXPECT_GT(in_view(image, plot_background), 50'000u);
  EXPECT_GT(in_view(image, near(0x00, 0x72, 0xB2, 4)), 200u);
}

TEST_F(HeadlessViews, diff_view_compares_two_reports) {
  const Image image = render("diff", dir_ + "/cnn.json " + dir_ + "/tf.json");
  ALLOCLAB_SKIP_WITHOUT_RENDERING(last_);
  ASSERT_FALSE(image.empty());
  EXPECT_GT(in_view(image, plot_background), 30'000u);
  EXPECT_GT(in_view(image, near(0x00, 0x72, 0xB2, 2)), 300u);
}

TEST_F(HeadlessViews, empty_views_say_what_to_open) {
  const Image image = render("memory", "");
  ALLOCLAB_SKIP_WITHOUT_RENDERING(last_);
  ASSERT_FALSE(image.empty());
  EXPECT_EQ(in_view(image, plot_background), 0u);
  EXPECT_GT(count_pixels(image, kX0, 45, kW, 120, [](int r, int, int) { return r > 100; }), 100u)
      << "no hint text";
}

}  // namespace
}  // namespace alloclab::test
