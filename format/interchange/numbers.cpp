// Strict number parsing for the text formats: a value is all digits or it is an error, so
// "12abc", "-5" and 2^64 are reported, never truncated or wrapped.
#include <charconv>
#include <system_error>

#include "alloclab/format/error.hpp"
#include "text_io.hpp"

namespace alloclab::interchange_detail {
namespace {

std::string shown(std::string_view text) {
  // Long garbage (a whole binary line) would drown the message.
  constexpr std::size_t limit = 40;
  if (text.size() <= limit) return std::string(text);
  return std::string(text.substr(0, limit)) + "...";
}

std::uint64_t parse_digits(std::string_view text, std::string_view digits, int base,
                           std::string_view column, const std::string& file, std::uint64_t line) {
  const std::string where = " in column " + std::string(column);
  if (text.starts_with('-'))
    throw_at_line(file, line, "negative number '" + shown(text) + "'" + where);
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value, base);
  if (ec == std::errc::result_out_of_range)
    throw_at_line(file, line, "number '" + shown(text) + "'" + where + " does not fit in 64 bits");
  if (digits.empty() || ec != std::errc{} || end != digits.data() + digits.size())
    throw_at_line(file, line,
                  "bad number '" + shown(text) + "'" + where +
                      (base == 16 ? " (expected hex digits after 0x)" : " (expected digits)"));
  return value;
}

}  // namespace

std::uint64_t parse_decimal(std::string_view text, std::string_view column, const std::string& file,
                            std::uint64_t line) {
  return parse_digits(text, text, 10, column, file, line);
}

std::uint64_t parse_hex_or_decimal(std::string_view text, std::string_view column,
                                   const std::string& file, std::uint64_t line) {
  if (text.starts_with("0x") || text.starts_with("0X"))
    return parse_digits(text, text.substr(2), 16, column, file, line);
  return parse_digits(text, text, 10, column, file, line);
}

std::string lowercase(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::string quoted_list(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) {
    if (!out.empty()) out += ", ";
    out += "'" + name + "'";
  }
  return out;
}

}  // namespace alloclab::interchange_detail
