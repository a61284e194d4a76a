#include "alloclab/format/units.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string_view>

namespace alloclab {
namespace {

// `bytes` as a whole number of the largest binary unit that divides it; symbol "" when none
// does (0 included).
struct ExactSize {
  std::uint64_t count;
  const char* symbol;
};

ExactSize exact_size(std::uint64_t bytes) {
  static constexpr struct {
    const char* symbol;
    unsigned shift;
  } units[] = {{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}};
  if (bytes != 0)
    for (const auto& unit : units)
      if (bytes % (std::uint64_t{1} << unit.shift) == 0) return {bytes >> unit.shift, unit.symbol};
  return {bytes, ""};
}

}  // namespace

DisplayUnit byte_unit(double bytes) {
  static constexpr const char* symbols[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  const double magnitude = std::fabs(bytes);
  // Powers of two: every product is exact, so the comparisons are too.
  double size = 1;
  int k = 0;
  while (k < 6 && magnitude >= size * 1024) {
    size *= 1024;
    ++k;
  }
  return {symbols[k], size};
}

DisplayUnit duration_unit(double ns) {
  const double magnitude = std::fabs(ns);
  if (magnitude >= 1e9) return {"s", 1e9};
  if (magnitude >= 1e6) return {"ms", 1e6};
  if (magnitude >= 1e3) return {"us", 1e3};
  return {"ns", 1};
}

std::string in_unit(double value, DisplayUnit unit, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f %s", decimals, value / unit.size, unit.symbol);
  return text;
}

std::string human_bytes(std::uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  const auto value = static_cast<double>(bytes);
  return in_unit(value, byte_unit(value), 2);
}

std::string short_bytes(std::uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  const auto value = static_cast<double>(bytes);
  const DisplayUnit unit = byte_unit(value);
  const double scaled = value / unit.size;
  // Three significant digits; a value that rounds up to the next power of ten gets one decimal
  // less (99.96 -> "100", not "100.0"), and 1023.9 stays in its unit ("1024 KiB").
  const int decimals = scaled >= 99.95 ? 0 : scaled >= 9.995 ? 1 : 2;
  return in_unit(value, unit, decimals);
}

std::string size_spec(std::uint64_t bytes) {
  const ExactSize exact = exact_size(bytes);
  return std::to_string(exact.count) + exact.symbol;
}

std::string exact_bytes(std::uint64_t bytes) {
  const ExactSize exact = exact_size(bytes);
  return std::to_string(exact.count) + " " + (*exact.symbol ? exact.symbol : "bytes");
}

std::string grouped(std::uint64_t value) {
  std::string digits = std::to_string(value);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string counted(std::uint64_t count, const std::string& noun, const std::string& plural) {
  if (count == 1) return "1 " + noun;
  return grouped(count) + " " + (plural.empty() ? noun + "s" : plural);
}

std::string human_duration(std::uint64_t ns) {
  if (ns < 1'000) return std::to_string(ns) + " ns";
  const auto value = static_cast<double>(ns);
  const DisplayUnit unit = duration_unit(value);
  return in_unit(value, unit, unit.size >= 1e9 ? 2 : 1);
}

std::optional<std::uint64_t> parse_duration(std::string_view text) {
  if (text == "0") return 0;
  // Digits with at most one '.', then the unit; read as an integer count of its smallest step
  // so that "1.5s" is exactly 1500000000 ns.
  std::size_t i = 0;
  std::uint64_t digits = 0, scale = 1;
  bool point = false, any = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '.' && !point) {
      point = true;
      continue;
    }
    if (c < '0' || c > '9') break;
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (digits > (UINT64_MAX - digit) / 10) return std::nullopt;
    digits = digits * 10 + digit;
    if (point) scale *= 10;
    any = true;
  }
  if (!any) return std::nullopt;
  const std::string_view unit = text.substr(i);
  std::uint64_t ns_per_unit = 0;
  if (unit == "ns")
    ns_per_unit = 1;
  else if (unit == "us")
    ns_per_unit = 1'000;
  else if (unit == "ms")
    ns_per_unit = 1'000'000;
  else if (unit == "s")
    ns_per_unit = 1'000'000'000;
  else
    return std::nullopt;
  if (scale > ns_per_unit) {
    // Finer than a nanosecond: the digits past it must be zeros ("1.0000000001s" is not a time
    // alloclab can count).
    const std::uint64_t drop = scale / ns_per_unit;
    if (digits % drop != 0) return std::nullopt;
    return digits / drop;
  }
  const std::uint64_t factor = ns_per_unit / scale;
  if (digits > UINT64_MAX / factor) return std::nullopt;
  return digits * factor;
}

}  // namespace alloclab
