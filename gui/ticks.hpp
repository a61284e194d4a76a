#pragma once
// Axis arithmetic for the chart module, as pure functions: unit-aware "nice" tick positions on
// linear and log scales, and value labels ("1.5 MiB", "12 us", "87.5%").
#include <string>
#include <vector>

namespace alloclab::gui {

enum class Unit { count, bytes, ns, percent, ratio };

struct Tick {
  double value = 0;
  std::string label;
};

// Ticks inside [lo, hi] at a step of 1, 2 or 5 times a power of ten of the unit's display scale
// (bytes step in KiB/MiB/GiB..., ns in us/ms/s), at most about `max_ticks` of them.
std::vector<Tick> linear_ticks(double lo, double hi, int max_ticks, Unit unit);
// Ticks at powers of ten (powers of two, thinned, for bytes) inside [lo, hi]; lo > 0.
std::vector<Tick> log_ticks(double lo, double hi, int max_ticks, Unit unit);

// A value for a label or tooltip: "1.50 MiB", "512 B", "12.30 us", "4.00 s", "87.50%" (percent
// takes a fraction: 0.875), "1,234,567". Units and separators are those of
// alloclab/format/units.hpp (grouped() for exact counts).
std::string format_value(double value, Unit unit);
// For tooltips: format_value, then the exact whole number of base units for bytes and ns
// ("28.92 MiB (30,326,784 bytes)", "1.23 ms (1,234,567 ns)"); format_value alone for the
// others and where it shows whole units ("512 B").
std::string format_exact(double value, Unit unit);

}  // namespace alloclab::gui
