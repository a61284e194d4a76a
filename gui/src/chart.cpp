#include "chart.hpp"

#include <algorithm>
#include <cmath>

#include "ui_registry.hpp"

namespace alloclab::gui {
namespace {

constexpr float kLeft = 78, kBottom = 34, kTop = 8, kRight = 12;
const ImU32 kGrid = IM_COL32(255, 255, 255, 28);
const ImU32 kAxis = IM_COL32(200, 200, 200, 255);
const ImU32 kText = IM_COL32(220, 220, 220, 255);

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

ImU32 series_color(int i, float alpha) {
  // Okabe-Ito, then Tol's bright, cycled.
  static const ImU32 colors[] = {0x0072B2, 0xE69F00, 0x009E73, 0xCC79A7, 0x56B4E9,
                                 0xD55E00, 0xF0E442, 0xEE6677, 0x66CCEE, 0xAA3377};
  const ImU32 rgb = colors[static_cast<unsigned>(i) % (sizeof colors / sizeof colors[0])];
  const auto a = static_cast<ImU32>(std::clamp(alpha, 0.0f, 1.0f) * 255.0f);
  return IM_COL32((rgb >> 16) & 0xFF, (rgb >> 8) & 0xFF, rgb & 0xFF, a);
}

Chart::Chart(const char* id, ImVec2 size, Axis x, Axis y)
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
  p0_ = ImVec2(origin.x + kLeft, origin.y + kTop);
  p1_ = ImVec2(origin.x + size.x - kRight, origin.y + size.y - kBottom);
  list_->AddRectFilled(p0_, p1_, IM_COL32(24, 26, 30, 255));

  const int x_max_ticks = std::max(2, static_cast<int>((p1_.x - p0_.x) / 90));
  const int y_max_ticks = std::max(2, static_cast<int>((p1_.y - p0_.y) / 40));
  const auto xt = x_.log ? log_ticks(x_.lo, x_.hi, x_max_ticks, x_.unit)
                         : linear_ticks(x_.lo, x_.hi, x_max_ticks, x_.unit);
  const auto yt = y_.log ? log_ticks(y_.lo, y_.hi, y_max_ticks, y_.unit)
                         : linear_ticks(y_.lo, y_.hi, y_max_ticks, y_.unit);
  for (const Tick& t : xt) {
    const float px = px_x(t.value);
    list_->AddLine(ImVec2(px, p0_.y), ImVec2(px, p1_.y), kGrid);
    list_->AddLine(ImVec2(px, p1_.y), ImVec2(px, p1_.y + 4), kAxis);
    const ImVec2 ts = ImGui::CalcTextSize(t.label.c_str());
    list_->AddText(ImVec2(px - ts.x / 2, p1_.y + 5), kText, t.label.c_str());
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
    list_->AddText(ImVec2((p0_.x + p1_.x - ts.x) / 2, p1_.y + 5 + ts.y), kText, x_.label.c_str());
  }
  list_->PushClipRect(p0_, p1_, true);
}

Chart::~Chart() {
  list_->PopClipRect();
  if (!y_.label.empty()) {
    // The y label sits in the top-left corner, inside the plot, over the data.
    const ImVec2 pos(p0_.x + 6, p0_.y + 4);
    const ImVec2 ts = ImGui::CalcTextSize(y_.label.c_str());
    list_->AddRectFilled(pos, ImVec2(pos.x + ts.x + 6, pos.y + ts.y + 2),
                         IM_COL32(24, 26, 30, 200));
    list_->AddText(ImVec2(pos.x + 3, pos.y + 1), kText, y_.label.c_str());
  }
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
struct Column {
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
  std::vector<Column> columns;
  columns.reserve(std::min(buckets.size(), width + 2));
  for (const LodBucket& b : buckets) {
    const float xa = px_x(b.x0), xb = std::max(px_x(b.x1), xa + 1.0f);
    const float ya = px_y(b.y_max), yb = px_y(b.y_min);
    const bool has_band = b.count > 1 || b.y_max > b.y_min;
    if (!columns.empty() && std::floor(xa) <= std::floor(columns.back().x0)) {
      Column& c = columns.back();
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
    columns.push_back(Column{xa, xb, ya, yb, has_band, ya, ya, ya});
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
      const Column& c = columns[k];
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
    const Column& c = columns[i];
    // The previous value holds until this column, then the line rises or falls to this column's
    // values; a dense column's line covers all of them.
    float top = c.line_top, bottom = c.line_bottom;
    bool vertical = true;
    if (i > 0) {
      const Column& p = columns[i - 1];
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

void Chart::legend(const std::vector<LegendEntry>& entries) {
  float w = 0;
  for (const auto& e : entries) w = std::max(w, ImGui::CalcTextSize(e.label.c_str()).x);
  const float line = ImGui::GetFontSize() + 4;
  const ImVec2 a(p1_.x - w - 34, p0_.y + 6);
  const ImVec2 b(p1_.x - 6, a.y + line * static_cast<float>(entries.size()) + 6);
  list_->AddRectFilled(a, b, IM_COL32(16, 18, 22, 220));
  list_->AddRect(a, b, IM_COL32(120, 120, 120, 200));
  float y = a.y + 4;
  for (const auto& e : entries) {
    list_->AddRectFilled(ImVec2(a.x + 6, y + 3), ImVec2(a.x + 18, y + line - 5), e.color);
    list_->AddText(ImVec2(a.x + 24, y), kText, e.label.c_str());
    y += line;
  }
}

void Chart::tooltip(const std::vector<std::string>& lines) {
  ImGui::BeginTooltip();
  for (const auto& l : lines) ImGui::TextUnformatted(l.c_str());
  ImGui::EndTooltip();
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
