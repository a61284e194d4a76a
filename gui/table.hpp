#pragma once
// A table as data (header, rows of cells), built by a view from the model, drawn sortable with
// the best value per column highlighted, and exported to CSV exactly as built (not as shown).
#include <iosfwd>
#include <string>
#include <vector>

namespace alloclab::gui {

enum class Better { none, higher, lower };

struct Cell {
  std::string csv;    // exact value: integers in full, ratios in full precision
  std::string shown;  // for display ("1.50 MiB"); empty: same as csv
  double sort = 0;    // numeric key (text columns sort by csv)
  bool numeric = true;
};

struct Column {
  std::string name;
  Better better = Better::none;
};

struct Table {
  std::vector<Column> columns;
  std::vector<std::vector<Cell>> rows;
  bool empty() const { return rows.empty(); }
};

Cell text_cell(std::string text);
Cell count_cell(unsigned long long value);
Cell bytes_cell(unsigned long long value);
Cell ratio_cell(double value, bool percent);
Cell ns_cell(double value);
Cell delta_cell(double delta, bool bytes, bool percent);

// RFC 4180: fields with a comma, quote or newline are quoted; text columns are always quoted
// (strategy specs contain commas).
void write_csv(std::ostream& out, const Table& table);

// For each column, which rows hold its best value: every one of them when several tie, none
// when all rows hold the same value or the column has no better direction.
std::vector<std::vector<bool>> best_cells(const Table& table);

// Draws the table with ImGui (sortable by any column). `id` is also its script name.
void draw_table(const char* id, const Table& table, float height = 0);

}  // namespace alloclab::gui
