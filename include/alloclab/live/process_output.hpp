#pragma once
// What the live libraries write from inside the program: their reports and a fatal message,
// with the system calls only (they may run from a destructor, late in the program's exit).
#include <string>

namespace alloclab::live {

// Writes `text` to a new file at `path` (replacing one there). False when it could not be
// written.
bool write_text_file(const std::string& path, const std::string& text);

// "alloclab run: WHAT DETAIL" on the program's standard error, then _exit(2): the library cannot
// go on (a strategy that cannot start, or that broke its promise).
[[noreturn]] void die(const char* what, const char* detail);

}  // namespace alloclab::live
