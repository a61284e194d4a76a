#include "ticks.hpp"

#include <cmath>
#include <cstdio>

namespace alloclab::gui {
namespace {

// The display scale of a unit at magnitude `v`: bytes in powers of 1024, ns in powers of 1000.
double unit_scale(double v, Unit unit) {
  v = std::fabs(v);
  if (unit == Unit::bytes) {
    double scale = 1;
    while (v >= scale * 1024 && scale < 1024.0 * 1024 * 1024 * 1024 * 1024) scale *= 1024;
    return scale;
  }
  if (unit == Unit::ns) {
    double scale = 1;
    while (v >= scale * 1000 && scale < 1e9) scale *= 1000;
    return scale;
  }
  return 1;
}

const char* unit_suffix(double scale, Unit unit) {
  if (unit == Unit::bytes) {
    static const char* names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int k = 0;
    for (double s = scale; s >= 1024 && k < 5; s /= 1024) ++k;
    return names[k];
  }
  if (unit == Unit::ns) {
    if (scale >= 1e9) return "s";
    if (scale >= 1e6) return "ms";
    if (scale >= 1e3) return "us";
    return "ns";
  }
  return "";
}

std::string label_at(double value, double step_scaled, double scale, Unit unit) {
  char text[48];
  if (unit == Unit::percent) {
    const int decimals = step_scaled >= 0.01 ? 0 : step_scaled >= 0.001 ? 1 : 2;
    std::snprintf(text, sizeof text, "%.*f%%", decimals, value * 100);
    return text;
  }
  const double scaled = value / scale;
  int decimals = 0;
  for (double s = step_scaled; s < 1 && decimals < 6; s *= 10) ++decimals;
  const char* suffix = unit_suffix(scale, unit);
  if (*suffix)
    std::snprintf(text, sizeof text, "%.*f %s", decimals, scaled, suffix);
  else if (decimals == 0 && std::fabs(scaled) >= 1e4)
    return format_count(static_cast<unsigned long long>(std::llround(std::fabs(scaled))));
  else
    std::snprintf(text, sizeof text, "%.*f", decimals, scaled);
  return text;
}

}  // namespace

std::vector<Tick> linear_ticks(double lo, double hi, int max_ticks, Unit unit) {
  std::vector<Tick> ticks;
  if (!(hi > lo) || max_ticks < 1 || !std::isfinite(lo) || !std::isfinite(hi)) return ticks;
  const double scale =
      unit == Unit::percent ? 1 : unit_scale(std::max(std::fabs(lo), std::fabs(hi)), unit);
  const double span = (hi - lo) / scale;
  const double rough = span / max_ticks;
  const double power = std::pow(10.0, std::floor(std::log10(rough)));
  double step = power;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * power;
    if (step >= rough) break;
  }
  const double first = std::ceil(lo / scale / step) * step;
  for (int i = 0;; ++i) {
    const double v = first + i * step;
    if (v > hi / scale + step * 1e-9 || i > 4 * max_ticks) break;
    const double value = std::fabs(v) < step * 1e-9 ? 0 : v * scale;
    ticks.push_back({value, label_at(value, step, scale, unit)});
  }
  return ticks;
}

std::vector<Tick> log_ticks(double lo, double hi, int max_ticks, Unit unit) {
  std::vector<Tick> ticks;
  if (!(lo > 0) || !(hi > lo) || max_ticks < 1) return ticks;
  const double base = unit == Unit::bytes ? 2 : 10;
  const double k0 = std::ceil(std::log(lo) / std::log(base) - 1e-9);
  const double k1 = std::floor(std::log(hi) / std::log(base) + 1e-9);
  if (k1 < k0) return ticks;
  // Thin out exponents so that labels do not collide: every 2nd, 4th, ... one counted from the
  // lowest, so the range's lower end keeps its label.
  int every = 1;
  while ((k1 - k0) / every + 1 > max_ticks) every *= 2;
  for (double k = k0; k <= k1; k += 1) {
    const long long kk = std::llround(k);
    if ((kk - std::llround(k0)) % every != 0) continue;
    const double value = std::pow(base, k);
    const double scale = unit_scale(value, unit);
    ticks.push_back({value, label_at(value, 1, scale, unit)});
  }
  return ticks;
}

std::string format_count(unsigned long long value) {
  std::string digits = std::to_string(value), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string format_value(double value, Unit unit) {
  char text[48];
  switch (unit) {
    case Unit::percent:
      std::snprintf(text, sizeof text, "%.2f%%", value * 100);
      return text;
    case Unit::ratio:
      std::snprintf(text, sizeof text, "%.4g", value);
      return text;
    case Unit::count:
      if (value >= 0 && value == std::floor(value) && value < 1.8e19)
        return format_count(static_cast<unsigned long long>(value));
      std::snprintf(text, sizeof text, "%.4g", value);
      return text;
    case Unit::bytes:
      if (std::fabs(value) < 1024) {
        std::snprintf(text, sizeof text, "%.0f B", value);
        return text;
      }
      break;
    case Unit::ns:
      if (std::fabs(value) < 1000) {
        std::snprintf(text, sizeof text, "%.0f ns", value);
        return text;
      }
      break;
  }
  const double scale = unit_scale(value, unit);
  std::snprintf(text, sizeof text, "%.2f %s", value / scale, unit_suffix(scale, unit));
  return text;
}

}  // namespace alloclab::gui
