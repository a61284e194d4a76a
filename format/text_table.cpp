#include "alloclab/format/text_table.hpp"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <stdexcept>

namespace alloclab {
namespace {

constexpr std::size_t kGap = 2;  // spaces between two columns

}  // namespace

TextTable::TextTable(std::vector<Column> columns, std::string indent)
    : columns_(std::move(columns)), indent_(std::move(indent)) {}

void TextTable::add_row(std::vector<std::string> cells) {
  if (cells.size() > columns_.size())
    throw std::logic_error("TextTable: a row of " + std::to_string(cells.size()) +
                           " cells in a table of " + std::to_string(columns_.size()) + " columns");
  cells.resize(columns_.size());
  lines_.push_back(Line{std::move(cells), false, 0});
}

void TextTable::add_note(std::string text, std::size_t column) {
  lines_.push_back(Line{{std::move(text)}, true, std::min(column, columns_.size() - 1)});
}

std::string TextTable::str() const {
  std::vector<std::size_t> width(columns_.size());
  for (std::size_t c = 0; c < columns_.size(); ++c) width[c] = columns_[c].title.size();
  for (const Line& line : lines_)
    if (!line.note)
      for (std::size_t c = 0; c < columns_.size(); ++c)
        width[c] = std::max(width[c], line.cells[c].size());

  std::string out;
  auto emit = [&](const std::vector<std::string>& cells) {
    std::string text = indent_;
    for (std::size_t c = 0; c < columns_.size(); ++c) {
      if (c > 0) text.append(kGap, ' ');
      const std::string& cell = cells[c];
      const std::size_t pad = width[c] - cell.size();
      if (columns_[c].align == Align::right) text.append(pad, ' ');
      text += cell;
      if (columns_[c].align == Align::left) text.append(pad, ' ');
    }
    text.erase(text.find_last_not_of(' ') + 1);
    out += text + '\n';
  };
  std::vector<std::string> titles;
  bool header = false;
  for (const Column& column : columns_) {
    titles.push_back(column.title);
    header = header || !column.title.empty();
  }
  if (header) emit(titles);
  for (const Line& line : lines_) {
    if (!line.note) {
      emit(line.cells);
      continue;
    }
    std::size_t at = indent_.size();
    for (std::size_t c = 0; c < line.column; ++c) at += width[c] + kGap;
    out += std::string(at, ' ') + line.cells[0] + '\n';
  }
  return out;
}

void TextTable::print() const {
  const std::string text = str();
  std::fwrite(text.data(), 1, text.size(), stdout);
}

std::string string_printf(const char* format, ...) {
  std::va_list args;
  va_start(args, format);
  std::va_list again;
  va_copy(again, args);
  const int size = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  std::string text(size > 0 ? static_cast<std::size_t>(size) : 0, '\0');
  if (size > 0) std::vsnprintf(text.data(), text.size() + 1, format, again);
  va_end(again);
  return text;
}

}  // namespace alloclab
