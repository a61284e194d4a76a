#include "chart.hpp"

#include <algorithm>
#include <cmath>

#include "ui_registry.hpp"

namespace alloclab::gui {
namespace {

constexpr float kLeft = 78, kBottom = 34, kTop = 4, kRight = 12;
constexpr float kSwatch = 12, kSwatchGap = 6, kEntryGap = 18;  // a legend entry: [#] label
constexpr int kMaxHeaderRows = 3;  // beyond: "+N more" (the tooltips name every series)
constexpr float kLabelGap = 8;     // at least this much space between two category labels
constexpr float kCategoryTop = 8;  // category labels this far below the plot, under the y axis'
                                   // lowest label (which is centred on the plot's bottom edge)
const ImU32 kGrid = IM_COL32(255, 255, 255, 28);
const ImU32 kAxis = IM_COL32(200, 200, 200, 255);
const ImU32 kText = IM_COL32(220, 220, 220, 255);

// One item of the strip above the plot: the y label, a legend entry, or "+N more".
struct HeaderItem {
  std::string text;
  bool legend = false;     // part of the legend (not the y label)
  ImU32 color = 0;         // the swatch's; 0: text only
  std::string strategy{};  // a legend entry's strategy, highlighted by a click on the entry
  ImVec2 pos{};            // top-left, set by lay_out_header
  float width = 0;
};

// Flows `items` left to right into rows `width` pixels wide starting at `origin`; returns the
// number of rows.
int lay_out_header(std::vector<HeaderItem>& items, ImVec2 origin, float width) {
  const float line = ImGui::GetFontSize() + 4;
  float x = 0;
  int rows = items.empty() ? 0 : 1;
  for (HeaderItem& item : items) {
    item.width = ImGui::CalcTextSize(item.text.c_str()).x + (item.color ? kSwatch + kSwatchGap : 0);
    if (x > 0 && x + item.width > width) {
      x = 0;
      ++rows;
    }
    item.pos = ImVec2(origin.x + x, origin.y + line * static_cast<float>(rows - 1));
    x += item.width + kEntryGap;
  }
  return rows;
}

// `text` shortened to at most `width` pixels by cutting out a piece near its start: the end of a
// spec says what differs between the points of a sweep ("fi..max=16MiB"). Empty when not even
// one character of each end fits.
std::string shortened(const std::string& text, float width) {
  if (ImGui::CalcTextSize(text.c_str()).x <= width) return text;
  for (std::size_t keep = text.size() - 1; keep >= 2; --keep) {
    const std::size_t head = std::max<std::size_t>(1, keep / 4), tail = keep - head;
    const std::string candidate = text.substr(0, head) + ".." + text.substr(text.size() - tail);
    if (ImGui::CalcTextSize(candidate.c_str()).x <= width) return candidate;
  }
  return {};
}

double to_unit(const Axis& a, double v) {
  if (a.log) {
    v = std::max(v, a.lo);
    return (std::log(v) - std::log(a.lo)) / (std::log(a.hi) - std::log(a.lo));
  }
  return a.hi > a.lo ? (v - a.lo) / (a.hi - a.lo) : 0.0;
}

double from_unit(const Axis& a, double u) {
  if (a.log) return std::exp(std::log(a.lo) + u * (std::log(a.hi) - std::log(a.lo)));
  return a.lo + u * (a.hi - a.lo);
}

}  // namespace

namespace {
std::string& highlight() {
  static std::string strategy;  // the UI thread's only
  return strategy;
}
}  // namespace

const std::string& highlighted_strategy() {
  return highlight();
}

void toggle_highlight(const std::string& strategy) {
  highlight() = highlight() == strategy ? std::string() : strategy;
}

ImU32 strategy_color(int i, const std::string& name, float alpha) {
  const bool faded = !highlight().empty() && highlight() != name;
  return series_color(i, faded ? alpha * 0.2f : alpha);
}

ImU32 series_color(int i, float alpha) {
  // Okabe-Ito, then Tol's bright, cycled.
  static const ImU32 colors[] = {0x0072B2, 0xE69F00, 0x009E73, 0xCC79A7, 0x56B4E9,
                                 0xD55E00, 0xF0E442, 0xEE6677, 0x66CCEE, 0xAA3377};
  const ImU32 rgb = colors[static_cast<unsigned>(i) % (sizeof colors / sizeof colors[0])];
  const auto a = static_cast<ImU32>(std::clamp(alpha, 0.0f, 1.0f) * 255.0f);
  return IM_COL32((rgb >> 16) & 0xFF, (rgb >> 8) & 0xFF, rgb & 0xFF, a);
}

Chart::Chart(const char* id, ImVec2 size, Axis x, Axis y, std::vector<LegendEntry> legend)
    : id_(id), x_(std::move(x)), y_(std::move(y)) {
  if (x_.log && !(x_.lo > 0)) x_.lo = 1;
  if (y_.log && !(y_.lo > 0)) y_.lo = 1;
  if (!(x_.hi > x_.lo)) x_.hi = x_.log ? x_.lo * 10 : x_.lo + 1;
  if (!(y_.hi > y_.lo)) y_.hi = y_.log ? y_.lo * 10 : y_.lo + 1;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  if (size.x <= 0) size.x = std::max(avail.x, 200.0f);
  if (size.y <= 0) size.y = std::max(avail.y, 120.0f);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton(id, size);
  track_item(std::string("chart:") + id);
  hovered_ = ImGui::IsItemHovered();
  list_ = ImGui::GetWindowDrawList();

  // The strip above the plot: the y label first, then as many legend entries as fit in
  // kMaxHeaderRows rows, then "+N more" for the rest.
  const ImVec2 header_origin(origin.x + kLeft, origin.y + kTop);
  const float header_width = size.x - kLeft - kRight;
  std::vector<HeaderItem> items;
  int rows = 0;
  for (std::size_t shown = legend.size() + 1; shown-- > 0;) {
    items.clear();
    if (!y_.label.empty()) items.push_back({y_.label});
    // The swatch is opaque even for a faint series: it must be seen on the background.
    for (std::size_t i = 0; i < shown; ++i)
      items.push_back(
          {legend[i].label, true, legend[i].color | IM_COL32(0, 0, 0, 255), legend[i].strategy});
    if (shown < legend.size())
      items.push_back({"+" + std::to_string(legend.size() - shown) + " more", true});
    rows = lay_out_header(items, header_origin, header_width);
    if (rows <= kMaxHeaderRows) break;
  }
  const float line = ImGui::GetFontSize() + 4;
  const float header_height = rows > 0 ? line * static_cast<float>(rows) + 2 : 0;

  p0_ = ImVec2(origin.x + kLeft, origin.y + kTop + header_height);
  p1_ = ImVec2(origin.x + size.x - kRight, std::max(p0_.y + 20, origin.y + size.y - kBottom));
  list_->AddRectFilled(p0_, p1_, IM_COL32(24, 26, 30, 255));
  track_rect("chart:" + id_ + "/plot", p0_, p1_);

  bool any_entry = false;
  ImVec2 legend_min(p1_.x, p1_.y), legend_max(p0_.x, origin.y);
  for (const HeaderItem& item : items) {
    const ImVec2 end(item.pos.x + item.width, item.pos.y + line);
    float text_x = item.pos.x;
    if (item.color) {
      list_->AddRectFilled(ImVec2(item.pos.x, item.pos.y + 3),
                           ImVec2(item.pos.x + kSwatch, item.pos.y + line - 5), item.color);
      text_x += kSwatch + kSwatchGap;
    }
    if (item.legend) track_rect("chart:" + id_ + "/legend:" + item.text, item.pos, end);
    list_->AddText(ImVec2(text_x, item.pos.y), kText, item.text.c_str());
    if (!item.strategy.empty()) {
      if (ImGui::IsMouseClicked(ImGuiMouseButton_Left) &&
          ImGui::IsMouseHoveringRect(item.pos, end, false))
        toggle_highlight(item.strategy);
      if (item.strategy == highlighted_strategy())
        list_->AddLine(ImVec2(text_x, end.y - 3), ImVec2(item.pos.x + item.width, end.y - 3),
                       kText);
    }
    if (item.legend) {
      any_entry = true;
      legend_min = ImVec2(std::min(legend_min.x, item.pos.x), std::min(legend_min.y, item.pos.y));
      legend_max = ImVec2(std::max(legend_max.x, end.x), std::max(legend_max.y, end.y));
    }
  }
  if (any_entry) track_rect("chart:" + id_ + "/legend", legend_min, legend_max);
  if (!y_.label.empty()) track_text("chart:" + id_ + "/y", y_.label);
  if (!x_.label.empty()) track_text("chart:" + id_ + "/x", x_.label);

  const int y_max_ticks = std::max(2, static_cast<int>((p1_.y - p0_.y) / 40));
  const auto yt = y_.log ? log_ticks(y_.lo, y_.hi, y_max_ticks, y_.unit)
                         : linear_ticks(y_.lo, y_.hi, y_max_ticks, y_.unit);
  if (x_.categories.empty()) {
    const int x_max_ticks = std::max(2, static_cast<int>((p1_.x - p0_.x) / 90));
    const auto xt = x_.log ? log_ticks(x_.lo, x_.hi, x_max_ticks, x_.unit)
                           : linear_ticks(x_.lo, x_.hi, x_max_ticks, x_.unit);
    for (const Tick& t : xt) {
      const float px = px_x(t.value);
      list_->AddLine(ImVec2(px, p0_.y), ImVec2(px, p1_.y), kGrid);
      list_->AddLine(ImVec2(px, p1_.y), ImVec2(px, p1_.y + 4), kAxis);
      const ImVec2 ts = ImGui::CalcTextSize(t.label.c_str());
      list_->AddText(ImVec2(px - ts.x / 2, p1_.y + 5), kText, t.label.c_str());
    }
  } else {
    category_labels();
  }
  for (const Tick& t : yt) {
    const float py = px_y(t.value);
    list_->AddLine(ImVec2(p0_.x, py), ImVec2(p1_.x, py), kGrid);
    list_->AddLine(ImVec2(p0_.x - 4, py), ImVec2(p0_.x, py), kAxis);
    const ImVec2 ts = ImGui::CalcTextSize(t.label.c_str());
    list_->AddText(ImVec2(p0_.x - 6 - ts.x, py - ts.y / 2), kText, t.label.c_str());
  }
  list_->AddRect(p0_, p1_, kAxis);
  if (!x_.label.empty()) {
    const ImVec2 ts = ImGui::CalcTextSize(x_.label.c_str());
    const float top = p1_.y + (x_.categories.empty() ? 5 : kCategoryTop) + ts.y;
    list_->AddText(ImVec2((p0_.x + p1_.x - ts.x) / 2, top), kText, x_.label.c_str());
  }
  list_->PushClipRect(p0_, p1_, true);
}

// Each category's name centred under its slot, between tick marks at the slots' edges. Where
// names do not fit they are shortened, and where even short names would touch, every k-th
// category is labelled (the tooltips name each one).
void Chart::category_labels() {
  const std::size_t n = x_.categories.size();
  const float slot = px_x(x_.lo + 1) - px_x(x_.lo);
  const float least = ImGui::CalcTextSize("ab..yz").x + kLabelGap;
  const std::size_t every =
      slot >= least ? 1 : static_cast<std::size_t>(std::ceil(least / std::max(slot, 1.0f)));
  for (std::size_t i = 0; i <= n; ++i) {
    const float px = px_x(x_.lo + static_cast<double>(i));
    list_->AddLine(ImVec2(px, p1_.y), ImVec2(px, p1_.y + 4), kAxis);
  }
  for (std::size_t i = 0; i < n; i += every) {
    // Centred under its slot, at most as wide as the slots up to the next label, and inside the
    // chart (it may reach into the margins: the row sits below the y axis' lowest label).
    const float middle = px_x(x_.lo + static_cast<double>(i) + 0.5);
    const float room =
        std::min({slot * static_cast<float>(every) - kLabelGap, 2 * (middle - (p0_.x - kLeft + 2)),
                  2 * (p1_.x + kRight - middle)});
    const std::string text = shortened(x_.categories[i], room);
    if (text.empty()) continue;
    const ImVec2 ts = ImGui::CalcTextSize(text.c_str());
    const ImVec2 at(middle - ts.x / 2, p1_.y + kCategoryTop);
    list_->AddText(at, kText, text.c_str());
    track_rect("chart:" + id_ + "/x:" + x_.categories[i], at, ImVec2(at.x + ts.x, at.y + ts.y));
  }
}

Chart::~Chart() {
  list_->PopClipRect();
}

float Chart::px_x(double x) const {
  return p0_.x + static_cast<float>(to_unit(x_, x)) * (p1_.x - p0_.x);
}
float Chart::px_y(double y) const {
  return p1_.y - static_cast<float>(to_unit(y_, y)) * (p1_.y - p0_.y);
}
double Chart::x_at(float px) const {
  return from_unit(x_, (px - p0_.x) / std::max(1.0f, p1_.x - p0_.x));
}
double Chart::y_at(float py) const {
  return from_unit(y_, (p1_.y - py) / std::max(1.0f, p1_.y - p0_.y));
}
ImVec2 Chart::mouse() const {
  return ImGui::GetIO().MousePos;
}

namespace {

// What falls into one pixel column of a series: its envelope, and the extent and last value of
// the line through the bucket maxima.
struct PixelColumn {
  float x0 = 0, x1 = 0;
  float band_top = 0, band_bottom = 0;
  bool band = false;
  float line_top = 0, line_bottom = 0, line_last = 0;
};

}  // namespace

void Chart::lod_series(const LodPyramid& series, ImU32 color, bool step) {
  if (series.empty()) return;
  const auto width = static_cast<std::size_t>(std::max(1.0f, p1_.x - p0_.x));
  const std::vector<LodBucket> buckets = series.query(x_.lo, x_.hi, width);
  const ImU32 band = (color & 0x00FFFFFFu) | (IM_COL32(0, 0, 0, 45));
  if (!step) {  // sloped lines need anti-aliasing, so this keeps ImGui's lines
    ImVec2 prev{};
    for (std::size_t i = 0; i < buckets.size(); ++i) {
      const LodBucket& b = buckets[i];
      const float xa = px_x(b.x0), xb = std::max(px_x(b.x1), xa + 1.0f);
      const float ya = px_y(b.y_max), yb = px_y(b.y_min);
      if (b.count > 1 || b.y_max > b.y_min)
        list_->AddRectFilled(ImVec2(xa, ya), ImVec2(xb, yb + 1), band);
      if (i > 0) list_->AddLine(prev, ImVec2(xa, ya), color, 1.5f);
      prev = ImVec2(xb, ya);
    }
    return;
  }
  // A step line is made of horizontal and vertical pieces only, so it is drawn as axis-aligned
  // rectangles without anti-aliasing, and buckets sharing a pixel column become one band and
  // one line piece: a dense series then costs at most four quads per column, not anti-aliased
  // lines per bucket, whose many thin triangles made software renderers slow on big traces.
  std::vector<PixelColumn> columns;
  columns.reserve(std::min(buckets.size(), width + 2));
  for (const LodBucket& b : buckets) {
    const float xa = px_x(b.x0), xb = std::max(px_x(b.x1), xa + 1.0f);
    const float ya = px_y(b.y_max), yb = px_y(b.y_min);
    const bool has_band = b.count > 1 || b.y_max > b.y_min;
    if (!columns.empty() && std::floor(xa) <= std::floor(columns.back().x0)) {
      PixelColumn& c = columns.back();
      c.x1 = std::max(c.x1, xb);
      if (has_band) {
        c.band_top = c.band ? std::min(c.band_top, ya) : ya;
        c.band_bottom = c.band ? std::max(c.band_bottom, yb) : yb;
        c.band = true;
      }
      c.line_top = std::min(c.line_top, ya);
      c.line_bottom = std::max(c.line_bottom, ya);
      c.line_last = ya;
      continue;
    }
    if (!columns.empty() && !has_band && !columns.back().band &&
        columns.back().line_top == columns.back().line_bottom && columns.back().line_last == ya) {
      columns.back().x1 = xb;  // the value did not change: one longer piece draws the same
      continue;
    }
    columns.push_back(PixelColumn{xa, xb, ya, yb, has_band, ya, ya, ya});
  }
  // The envelope: software renderers shade pixels in 4x4 blocks, so a band drawn as one
  // 1 px wide quad per column costs about four times its pixels, and a dense series' band can
  // cover most of the plot. Runs of touching columns therefore share one wide rectangle for the
  // rows every one of them covers; only what a column has above or below it stays a thin quad.
  // A column's pieces and the shared rectangle do not overlap, so the blended colour is the same
  // as one quad per column gave; a gap of less than a pixel between touching columns is filled.
  struct Piece {
    ImVec2 a, b;
  };
  std::vector<Piece> bands;
  for (std::size_t i = 0; i < columns.size();) {
    if (!columns[i].band) {
      ++i;
      continue;
    }
    float top = columns[i].band_top, bottom = columns[i].band_bottom + 1;
    std::size_t j = i + 1;
    for (; j < columns.size() && columns[j].band && columns[j].x0 - columns[j - 1].x1 < 1.0f; ++j) {
      const float t = std::max(top, columns[j].band_top);
      const float b = std::min(bottom, columns[j].band_bottom + 1);
      // Stop where the shared part would lose half its height (or is too thin to be worth it).
      if (b - t < 4 || b - t < (bottom - top) / 2) break;
      top = t;
      bottom = b;
    }
    if (j == i + 1) {
      bands.push_back({ImVec2(columns[i].x0, top), ImVec2(columns[i].x1, bottom)});
      i = j;
      continue;
    }
    // Columns may overlap by a fraction of a pixel: the shared part spans them end to end.
    float x1 = columns[i].x1;
    for (std::size_t k = i; k < j; ++k) x1 = std::max(x1, columns[k].x1);
    bands.push_back({ImVec2(columns[i].x0, top), ImVec2(x1, bottom)});
    for (std::size_t k = i; k < j; ++k) {
      const PixelColumn& c = columns[k];
      if (c.band_top < top) bands.push_back({ImVec2(c.x0, c.band_top), ImVec2(c.x1, top)});
      if (c.band_bottom + 1 > bottom)
        bands.push_back({ImVec2(c.x0, bottom), ImVec2(c.x1, c.band_bottom + 1)});
    }
    i = j;
  }
  // The line: per column a vertical piece where the value moves, a horizontal piece where it
  // holds, and a connector across a gap between columns. Pieces that add no pixel are left out
  // (a connector over a gap narrower than the vertical piece's half width, a vertical piece
  // where the value neither moves nor jumps), and horizontal pieces at the same height that
  // touch become one, so a dense series whose value holds costs one quad, not three per column.
  constexpr float kHalf = 0.75f;  // half the line's 1.5 px thickness
  std::vector<Piece> lines;
  lines.reserve(columns.size() * 2);
  auto horizontal = [&](float x0, float x1, float y) {
    if (!lines.empty()) {
      Piece& last = lines.back();
      if (last.a.y == y - kHalf && last.b.y == y + kHalf && last.a.x <= x0 && x0 <= last.b.x) {
        last.b.x = std::max(last.b.x, x1);
        return;
      }
    }
    lines.push_back({ImVec2(x0, y - kHalf), ImVec2(x1, y + kHalf)});
  };
  for (std::size_t i = 0; i < columns.size(); ++i) {
    const PixelColumn& c = columns[i];
    // The previous value holds until this column, then the line rises or falls to this column's
    // values; a dense column's line covers all of them.
    float top = c.line_top, bottom = c.line_bottom;
    bool vertical = true;
    if (i > 0) {
      const PixelColumn& p = columns[i - 1];
      if (c.x0 - p.x1 > kHalf) horizontal(p.x1 - kHalf, c.x0 + kHalf, p.line_last);
      top = std::min(top, p.line_last);
      bottom = std::max(bottom, p.line_last);
      // Flat and joined: the horizontal pieces on either side already cover the joint.
      vertical = top != bottom || p.x1 < c.x0;
    }
    if (vertical)
      lines.push_back({ImVec2(c.x0 - kHalf, top - kHalf), ImVec2(c.x0 + kHalf, bottom + kHalf)});
    horizontal(c.x0, c.x1, c.line_last);
  }
  const std::size_t quads = bands.size() + lines.size();
  list_->PrimReserve(static_cast<int>(quads * 6), static_cast<int>(quads * 4));
  for (const Piece& p : bands) list_->PrimRect(p.a, p.b, band);
  for (const Piece& p : lines) list_->PrimRect(p.a, p.b, color);
}

void Chart::polyline(const std::vector<double>& xs, const std::vector<double>& ys, ImU32 color,
                     float thickness) {
  const std::size_t n = std::min(xs.size(), ys.size());
  for (std::size_t i = 1; i < n; ++i)
    list_->AddLine(ImVec2(px_x(xs[i - 1]), px_y(ys[i - 1])), ImVec2(px_x(xs[i]), px_y(ys[i])),
                   color, thickness);
  for (std::size_t i = 0; i < n; ++i) marker(xs[i], ys[i], color);
}

void Chart::rect(double x0, double y0, double x1, double y1, ImU32 color) {
  list_->AddRectFilled(ImVec2(px_x(x0), px_y(y1)), ImVec2(px_x(x1), px_y(y0)), color);
}

void Chart::shade_x(double x0, double x1, ImU32 color, const char* label) {
  const float a = px_x(x0), b = std::max(px_x(x1), a + 1.0f);
  list_->AddRectFilled(ImVec2(a, p0_.y), ImVec2(b, p1_.y), color);
  if (label && b - a > ImGui::CalcTextSize(label).x + 4)
    list_->AddText(ImVec2(a + 2, p1_.y - ImGui::GetFontSize() - 2), IM_COL32(180, 180, 180, 160),
                   label);
}

void Chart::vline(double x, ImU32 color, const char* label) {
  const float px = px_x(x);
  list_->AddLine(ImVec2(px, p0_.y), ImVec2(px, p1_.y), color, 1.5f);
  if (label) list_->AddText(ImVec2(px + 3, p0_.y + 2), color, label);
}

void Chart::marker(double x, double y, ImU32 color) {
  list_->AddCircleFilled(ImVec2(px_x(x), px_y(y)), 3.5f, color);
}

void Chart::tooltip(const std::vector<std::string>& lines) {
  ImGui::BeginTooltip();
  std::string text;
  for (const auto& l : lines) {
    ImGui::TextUnformatted(l.c_str());
    text += (text.empty() ? "" : "\n") + l;
  }
  ImGui::EndTooltip();
  track_text("tooltip", std::move(text));
}

bool Chart::zoom_pan(const Chart& chart, XRange& range, double full_lo, double full_hi) {
  if (!(full_hi > full_lo)) return false;
  if (range.empty()) range = {full_lo, full_hi};
  if (!chart.hovered()) return false;
  ImGuiIO& io = ImGui::GetIO();
  const XRange before = range;
  const double span = range.hi - range.lo;
  if (ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) {
    range = {full_lo, full_hi};
  } else if (io.MouseWheel != 0) {
    // Zoom around the value under the cursor, so that it stays under the cursor.
    const double at = chart.x_at(io.MousePos.x);
    const double factor = std::pow(0.8, io.MouseWheel);
    const double min_span = std::max((full_hi - full_lo) * 1e-7, 1.0);
    const double new_span = std::clamp(span * factor, min_span, full_hi - full_lo);
    const double u = (at - range.lo) / span;
    range.lo = at - u * new_span;
    range.hi = range.lo + new_span;
  } else if (ImGui::IsMouseDragging(ImGuiMouseButton_Left, 0)) {
    const float width = chart.plot_max().x - chart.plot_min().x;
    range.lo -= static_cast<double>(io.MouseDelta.x) / std::max(1.0f, width) * span;
    range.hi = range.lo + span;
  }
  const double s = range.hi - range.lo;
  if (range.lo < full_lo) range = {full_lo, full_lo + s};
  if (range.hi > full_hi) range = {std::max(full_lo, full_hi - s), full_hi};
  return range.lo != before.lo || range.hi != before.hi;
}

}  // namespace alloclab::gui
