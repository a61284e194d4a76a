#include "alloclab/format/units.hpp"

#include <cmath>
#include <cstdio>

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

}  // namespace alloclab
