#pragma once
// Tables on the terminal: every column as wide as its widest cell and two spaces between
// columns, so that no two cells run together whatever their values (a fixed printf width
// let "2.00 GiB" and "1022.00x" touch once a value filled its field).
#include <string>
#include <vector>

namespace alloclab {

class TextTable {
 public:
  enum class Align { left, right };
  struct Column {
    std::string title;
    Align align = Align::right;
  };

  // `indent` starts every line (e.g. "  " under a heading). A table whose titles are all empty
  // has no header line.
  explicit TextTable(std::vector<Column> columns, std::string indent = "");

  // Cells beyond the columns are an error; missing ones are blank.
  void add_row(std::vector<std::string> cells);
  // A line of its own under the last row, starting where column `column` starts (e.g. "^ 3
  // requests failed" under a strategy's row).
  void add_note(std::string text, std::size_t column = 0);

  // The table, one line per row, without trailing spaces.
  std::string str() const;
  // str() to standard output.
  void print() const;

 private:
  struct Line {
    std::vector<std::string> cells;
    bool note = false;
    std::size_t column = 0;
  };
  std::vector<Column> columns_;
  std::string indent_;
  std::vector<Line> lines_;
};

// printf into a string, for the texts printed beside tables: they keep printf's formats
// ("%.2f", "%-14s", "%.4g") byte for byte.
[[gnu::format(printf, 1, 2)]] std::string string_printf(const char* format, ...);

}  // namespace alloclab
