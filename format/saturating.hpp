#pragma once
// Byte totals of a summary stop at 2^64 - 1 instead of wrapping around to a small, wrong number:
// a trace may hold absurd sizes (a failed request for SIZE_MAX bytes, two "live" blocks of
// 2^64 - 1 bytes in a hand-made file), and every total follows this one rule.
#include <cstdint>
#include <limits>

namespace alloclab::detail {

inline constexpr std::uint64_t max_bytes = std::numeric_limits<std::uint64_t>::max();

inline void add_saturating(std::uint64_t& total, std::uint64_t bytes) {
  total = bytes > max_bytes - total ? max_bytes : total + bytes;
}

inline std::uint64_t multiply_saturating(std::uint64_t a, std::uint64_t b) {
  return a != 0 && b > max_bytes / a ? max_bytes : a * b;
}

// A running sum that must also go down (live bytes): kept exact in 128 bits, read saturated.
__extension__ using WideBytes = unsigned __int128;
inline std::uint64_t saturated(WideBytes bytes) {
  return bytes > max_bytes ? max_bytes : static_cast<std::uint64_t>(bytes);
}

}  // namespace alloclab::detail
