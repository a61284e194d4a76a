#include "ticks.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>

#include "alloclab/format/units.hpp"

namespace alloclab::gui {
namespace {

// The unit an axis or value of `unit` is shown in at magnitude `v` (units.hpp picks it for
// bytes and ns; the others have none).
DisplayUnit display_unit(double v, Unit unit) {
  if (unit == Unit::bytes) return byte_unit(v);
  if (unit == Unit::ns) return duration_unit(v);
  return {"", 1};
}

std::string label_at(double value, double step_scaled, DisplayUnit display, Unit unit) {
  char text[48];
  if (unit == Unit::percent) {
    // As many decimals as the step needs (0.1% steps: one), so that ticks stay apart.
    int decimals = 0;
    for (double s = step_scaled * 100; s < 1 - 1e-9 && decimals < 6; s *= 10) ++decimals;
    std::snprintf(text, sizeof text, "%.*f%%", decimals, value * 100);
    return text;
  }
  int decimals = 0;
  for (double s = step_scaled; s < 1 && decimals < 6; s *= 10) ++decimals;
  if (*display.symbol) return in_unit(value, display, decimals);
  const double scaled = value / display.size;
  if (decimals == 0 && std::fabs(scaled) >= 1e4)
    return grouped(static_cast<std::uint64_t>(std::llround(std::fabs(scaled))));
  std::snprintf(text, sizeof text, "%.*f", decimals, scaled);
  return text;
}

}  // namespace

std::vector<Tick> linear_ticks(double lo, double hi, int max_ticks, Unit unit) {
  std::vector<Tick> ticks;
  if (!(hi > lo) || max_ticks < 1 || !std::isfinite(lo) || !std::isfinite(hi)) return ticks;
  const DisplayUnit display = display_unit(std::max(std::fabs(lo), std::fabs(hi)), unit);
  const double scale = display.size;
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
    ticks.push_back({value, label_at(value, step, display, unit)});
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
    // A percentage below 1% needs its decimals (a miss rate of 0.01%); other units scale.
    const double step = unit == Unit::percent ? value : 1;
    ticks.push_back({value, label_at(value, step, display_unit(value, unit), unit)});
  }
  return ticks;
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
        return grouped(static_cast<std::uint64_t>(value));
      std::snprintf(text, sizeof text, "%.4g", value);
      return text;
    case Unit::bytes:
    case Unit::ns:
      break;
  }
  // Whole base units below the first step up (512 B, 800 ns), two decimals above it.
  const DisplayUnit display = display_unit(value, unit);
  return in_unit(value, display, display.size == 1 ? 0 : 2);
}

std::string format_exact(double value, Unit unit) {
  // Below the first step up ("512 B", "800 ns") the value is already shown whole.
  if ((unit != Unit::bytes && unit != Unit::ns) || !(value >= 0) || value >= 1.8e19 ||
      display_unit(value, unit).size == 1)
    return format_value(value, unit);
  const std::string exact = grouped(static_cast<std::uint64_t>(std::llround(value)));
  return format_value(value, unit) + " (" + exact + (unit == Unit::bytes ? " bytes)" : " ns)");
}

}  // namespace alloclab::gui
