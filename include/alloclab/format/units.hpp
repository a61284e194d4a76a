#pragma once
// Numbers for people: byte counts, counts, durations, as every front end prints them.
#include <cstdint>
#include <string>

namespace alloclab {

// "1.50 MiB", "512 B".
std::string human_bytes(std::uint64_t bytes);
// "1,234,567".
std::string grouped(std::uint64_t value);
// "1 event", "1,234 events": the count, grouped, and the noun in the number it calls for
// (`plural` when adding an "s" is wrong).
std::string counted(std::uint64_t count, const std::string& noun, const std::string& plural = "");
// "12.3 ms", "4.0 s".
std::string human_duration(std::uint64_t ns);

}  // namespace alloclab
