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

// Throws InputError "PATH: is a directory" when `path` names one (through links). Opening a
// directory for reading succeeds, and the reads that follow fail with messages that name
// nothing (std::bad_alloc, "basic_filebuf::underflow error"), so every reader asks first. A
// path that does not exist passes: opening it says so.
void refuse_directory(const std::string& path);

// True when `path` names something other than a regular file or a directory: a pipe, a
// character device, a socket. Such input can be read only once, in order, and has no size.
bool is_stream_input(const std::string& path);

}  // namespace alloclab
