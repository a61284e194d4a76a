#include "alloclab/format/units.hpp"

#include <cstdio>

namespace alloclab {

std::string human_bytes(std::uint64_t bytes) {
  static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 6) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.2f %s", value, units[unit]);
  return text;
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
  char text[32];
  const double v = static_cast<double>(ns);
  if (ns < 1'000)
    std::snprintf(text, sizeof text, "%llu ns", static_cast<unsigned long long>(ns));
  else if (ns < 1'000'000)
    std::snprintf(text, sizeof text, "%.1f us", v / 1e3);
  else if (ns < 1'000'000'000)
    std::snprintf(text, sizeof text, "%.1f ms", v / 1e6);
  else
    std::snprintf(text, sizeof text, "%.2f s", v / 1e9);
  return text;
}

}  // namespace alloclab
