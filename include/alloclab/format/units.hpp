#pragma once
// Numbers for people: byte counts, counts, durations, as every front end prints them. Each
// concept has one implementation here; the front ends differ only in the precision they ask for.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace alloclab {

// The unit a quantity is shown in: its symbol and how many base units (bytes, ns) it holds.
struct DisplayUnit {
  const char* symbol;
  double size;
  // By the symbol's text: equal literals need not share one address across files.
  bool operator==(const DisplayUnit& other) const {
    return std::string_view(symbol) == other.symbol && size == other.size;
  }
};
// The largest of B, KiB, MiB, ..., EiB (powers of 1024) that the magnitude of `bytes` reaches.
DisplayUnit byte_unit(double bytes);
// The largest of ns, us, ms, s (powers of 1000) that the magnitude of `ns` reaches.
DisplayUnit duration_unit(double ns);
// `value` (in base units) expressed in `unit` with `decimals` decimals: "1.50 MiB", "12 us".
std::string in_unit(double value, DisplayUnit unit, int decimals);

// "1.50 MiB", "512 B": two decimals in the unit byte_unit picks.
std::string human_bytes(std::uint64_t bytes);
// "48.0 MiB", "112 MiB", "3.00 MiB", "512 B": three significant digits, for sentences.
std::string short_bytes(std::uint64_t bytes);
// "64MiB", "1536KiB", "1000", "0": the largest of KiB, MiB, GiB, TiB that divides `bytes`
// exactly, without a space, as spec strings spell sizes (parse_size in
// alloclab/strategies/params.hpp reads it back).
std::string size_spec(std::uint64_t bytes);
// "16 MiB", "4 GiB", "1000 bytes": the same exact unit as size_spec, for messages.
std::string exact_bytes(std::uint64_t bytes);

// "1,234,567".
std::string grouped(std::uint64_t value);
// "1 event", "1,234 events": the count, grouped, and the noun in the number it calls for
// (`plural` when adding an "s" is wrong).
std::string counted(std::uint64_t count, const std::string& noun, const std::string& plural = "");

// "12.3 ms", "4.00 s", "512 ns": one decimal in us and ms, two in s.
std::string human_duration(std::uint64_t ns);

// "1.5s", "250ms", "40us", "1200ns", "0" as nanoseconds (a number, decimals allowed, and a unit
// of ns, us, ms or s; only 0 may go without one). nullopt for anything else, and for a value
// beyond 2^64 - 1 ns.
std::optional<std::uint64_t> parse_duration(std::string_view text);

}  // namespace alloclab
