#include "table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <optional>
#include <ostream>

#include <imgui.h>

#include "alloclab/format/units.hpp"

#include "ticks.hpp"
#include "ui_registry.hpp"

namespace alloclab::gui {

Cell text_cell(std::string text) {
  return Cell{std::move(text), {}, 0, false};
}
Cell count_cell(unsigned long long value) {
  return Cell{std::to_string(value), grouped(value), static_cast<double>(value), true};
}
Cell bytes_cell(unsigned long long value) {
  return Cell{std::to_string(value), format_value(static_cast<double>(value), Unit::bytes),
              static_cast<double>(value), true};
}
Cell ratio_cell(double value, bool percent) {
  char exact[40];
  std::snprintf(exact, sizeof exact, "%.17g", value);
  return Cell{exact,
              percent ? format_value(value, Unit::percent) : format_value(value, Unit::ratio),
              value, true};
}
Cell ns_cell(double value) {
  char exact[40];
  std::snprintf(exact, sizeof exact, "%.0f", value);
  return Cell{exact, format_value(value, Unit::ns), value, true};
}
Cell delta_cell(double delta, bool bytes, bool percent) {
  char exact[40];
  std::snprintf(exact, sizeof exact, percent ? "%.17g" : "%.0f", delta);
  std::string shown = percent ? format_value(std::fabs(delta), Unit::percent)
                      : bytes ? format_value(std::fabs(delta), Unit::bytes)
                              : format_value(std::fabs(delta), Unit::count);
  shown = (delta > 0 ? "+" : delta < 0 ? "-" : "") + shown;
  if (percent) shown += " pts";
  return Cell{exact, shown, delta, true};
}

void write_csv(std::ostream& out, const Table& table) {
  auto field = [&](const std::string& text, bool quote) {
    if (quote || text.find_first_of(",\"\n") != std::string::npos) {
      out << '"';
      for (char c : text) out << (c == '"' ? std::string("\"\"") : std::string(1, c));
      out << '"';
    } else {
      out << text;
    }
  };
  for (std::size_t c = 0; c < table.columns.size(); ++c) {
    if (c) out << ',';
    field(table.columns[c].name, false);
  }
  out << '\n';
  for (const auto& row : table.rows) {
    for (std::size_t c = 0; c < row.size(); ++c) {
      if (c) out << ',';
      field(row[c].csv, !row[c].numeric);
    }
    out << '\n';
  }
}

std::vector<std::vector<bool>> best_cells(const Table& table) {
  std::vector<std::vector<bool>> best(table.columns.size(),
                                      std::vector<bool>(table.rows.size(), false));
  for (std::size_t c = 0; c < table.columns.size(); ++c) {
    const Better better = table.columns[c].better;
    if (better == Better::none || table.rows.size() < 2) continue;
    std::optional<double> top, bottom;
    for (const auto& row : table.rows) {
      if (c >= row.size()) continue;
      const double v = row[c].sort;
      top = top ? std::max(*top, v) : v;
      bottom = bottom ? std::min(*bottom, v) : v;
    }
    if (!top || *top == *bottom) continue;  // all equal: nothing stands out
    const double wanted = better == Better::higher ? *top : *bottom;
    // Every row that holds it: with ties, marking one would single it out for nothing.
    for (std::size_t r = 0; r < table.rows.size(); ++r)
      best[c][r] = c < table.rows[r].size() && table.rows[r][c].sort == wanted;
  }
  return best;
}

void draw_table(const char* id, const Table& table, float height) {
  const int ncols = static_cast<int>(table.columns.size());
  if (ncols == 0) return;
  const ImGuiTableFlags flags = ImGuiTableFlags_Sortable | ImGuiTableFlags_RowBg |
                                ImGuiTableFlags_Borders | ImGuiTableFlags_Resizable |
                                ImGuiTableFlags_ScrollY | ImGuiTableFlags_ScrollX |
                                ImGuiTableFlags_SizingFixedFit;
  if (!ImGui::BeginTable(id, ncols, flags, ImVec2(0, height))) return;
  ImGui::TableSetupScrollFreeze(1, 1);
  for (int c = 0; c < ncols; ++c)
    ImGui::TableSetupColumn(table.columns[static_cast<std::size_t>(c)].name.c_str(),
                            c == 0 ? ImGuiTableColumnFlags_NoHide : ImGuiTableColumnFlags_None);
  ImGui::TableHeadersRow();
  std::vector<std::size_t> order(table.rows.size());
  std::iota(order.begin(), order.end(), 0);
  if (ImGuiTableSortSpecs* specs = ImGui::TableGetSortSpecs(); specs && specs->SpecsCount > 0) {
    const int c = specs->Specs[0].ColumnIndex;
    const bool descending = specs->Specs[0].SortDirection == ImGuiSortDirection_Descending;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      const Cell& x = table.rows[a][static_cast<std::size_t>(c)];
      const Cell& y = table.rows[b][static_cast<std::size_t>(c)];
      const bool less = x.numeric ? x.sort < y.sort : x.csv < y.csv;
      const bool greater = x.numeric ? x.sort > y.sort : x.csv > y.csv;
      return descending ? greater : less;
    });
  }
  const std::vector<std::vector<bool>> best = best_cells(table);
  // Only the rows in view are submitted: a sweep's table has thousands.
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(order.size()));
  while (clipper.Step())
    for (int row = clipper.DisplayStart; row < clipper.DisplayEnd; ++row) {
      const std::size_t r = order[static_cast<std::size_t>(row)];
      ImGui::TableNextRow();
      for (int c = 0; c < ncols; ++c) {
        ImGui::TableSetColumnIndex(c);
        const auto cu = static_cast<std::size_t>(c);
        if (cu >= table.rows[r].size()) continue;
        const Cell& cell = table.rows[r][cu];
        if (best[cu][r])
          ImGui::TableSetBgColor(ImGuiTableBgTarget_CellBg, IM_COL32(40, 140, 70, 170));
        ImGui::TextUnformatted(cell.shown.empty() ? cell.csv.c_str() : cell.shown.c_str());
      }
    }
  ImGui::EndTable();
  track_item(std::string("table:") + id);
}

}  // namespace alloclab::gui
