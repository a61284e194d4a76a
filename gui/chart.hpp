#pragma once
// The chart module every view draws with: a plot area with axes, unit-aware ticks (linear or
// log) or named categories, grid, legend, tooltips, zoom/pan on x, and series drawn from a LOD
// pyramid. Immediate mode like the rest of the UI: build a Chart, draw into it, let it go.
//
// Nothing is drawn over the data but the data: the y axis' label and the legend sit in a strip
// above the plot area, the tick or category labels below it. Each chart records where those
// are in the UI registry (see Chart's constructor), so that tests can check the layout.
#include <string>
#include <vector>

#include <imgui.h>

#include "lod.hpp"
#include "ticks.hpp"

namespace alloclab::gui {

struct Axis {
  double lo = 0, hi = 1;
  bool log = false;  // lo must be > 0
  Unit unit = Unit::count;
  std::string label;
  // A category axis (x only): [i, i + 1) is categories[i], labelled by its name under its middle
  // instead of numbered ticks. Names that do not fit their slot are shortened in the middle
  // ("fifo-..16MiB", both ends tell specs apart); when even that does not fit, only every k-th
  // category is labelled.
  std::vector<std::string> categories{};
};

struct LegendEntry {
  std::string label;
  ImU32 color = 0;
  std::string strategy{};  // the strategy it stands for: a click on the entry highlights it
};

// A visible x range that the mouse zooms (wheel, around the cursor) and pans (drag); a
// double click resets it. Empty (lo == hi) means "everything".
struct XRange {
  double lo = 0, hi = 0;
  bool empty() const { return !(hi > lo); }
};

// The i-th color of a fixed, colour-blind friendly palette.
ImU32 series_color(int i, float alpha = 1.0f);

// The strategy the user picked, by its spec (a legend entry or a side-panel chip clicked): every
// view draws it as usual and the other strategies faded. Empty: none.
const std::string& highlighted_strategy();
// Highlights `strategy`, or nothing when it already is.
void toggle_highlight(const std::string& strategy);
// series_color(i, alpha) for strategy `name`, faded while another strategy is highlighted.
ImU32 strategy_color(int i, const std::string& name, float alpha = 1.0f);

class Chart {
 public:
  // Reserves `size` in the window (size.x <= 0: the available width) and draws the frame,
  // grid, ticks, axis labels and the legend (above the plot area, wrapped into rows). `id`
  // names the chart for scripts ("chart:ID"); the UI registry also gets "chart:ID/plot" (the
  // plot area), "chart:ID/legend" (all the legend's entries) and "chart:ID/legend:LABEL", and
  // "chart:ID/x:NAME" for each category label drawn; the axes' labels are its texts "chart:ID/x"
  // and "chart:ID/y".
  Chart(const char* id, ImVec2 size, Axis x, Axis y, std::vector<LegendEntry> legend = {});
  ~Chart();
  Chart(const Chart&) = delete;
  Chart& operator=(const Chart&) = delete;

  float px_x(double x) const;
  float px_y(double y) const;
  double x_at(float px) const;
  double y_at(float py) const;
  bool hovered() const { return hovered_; }
  ImVec2 mouse() const;
  const Axis& x_axis() const { return x_; }
  const Axis& y_axis() const { return y_; }
  ImVec2 plot_min() const { return p0_; }
  ImVec2 plot_max() const { return p1_; }
  ImDrawList* draw_list() const { return list_; }

  // Min/max envelope (filled, faint) and a line through the bucket midpoints; `step`: the value
  // holds until the next sample (memory over time).
  void lod_series(const LodPyramid& series, ImU32 color, bool step = true);
  void polyline(const std::vector<double>& xs, const std::vector<double>& ys, ImU32 color,
                float thickness = 2.0f);
  void rect(double x0, double y0, double x1, double y1, ImU32 color);
  // A full-height band from x0 to x1 (runs), with an optional label at the top.
  void shade_x(double x0, double x1, ImU32 color, const char* label = nullptr);
  void vline(double x, ImU32 color, const char* label = nullptr);
  void marker(double x, double y, ImU32 color);
  // A tooltip at the mouse, one line each (call only when hovered()).
  static void tooltip(const std::vector<std::string>& lines);

  // Wheel zoom around the cursor and drag pan of `range` within [full_lo, full_hi]; returns
  // true when the range changed.
  static bool zoom_pan(const Chart& chart, XRange& range, double full_lo, double full_hi);

 private:
  void category_labels();

  std::string id_;
  Axis x_, y_;
  ImVec2 p0_, p1_;
  ImDrawList* list_ = nullptr;
  bool hovered_ = false;
};

}  // namespace alloclab::gui
