#pragma once
// Errors carry where (file and place) and what, so a front end can print one clear line.
#include <cstdint>
#include <stdexcept>
#include <string>

namespace alloclab {

// Thrown by every reader on input it cannot accept. what() is the full one-line message,
// e.g. "trace.csv:12: unknown action 'allocc' (expected alloc, free, run_begin, run_end, mark)".
class InputError : public std::runtime_error {
 public:
  explicit InputError(std::string message) : std::runtime_error(std::move(message)) {}
};

// "file:line: what" for text formats.
[[noreturn]] void throw_at_line(const std::string& file, std::uint64_t line,
                                const std::string& what);
// "file@offset, chunk N: what" for binary formats (chunk < 0 means the header).
[[noreturn]] void throw_at_offset(const std::string& file, std::uint64_t offset, std::int64_t chunk,
                                  const std::string& what);

}  // namespace alloclab
