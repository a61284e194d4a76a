#pragma once
// What `alloclab record` can tell from a program's ELF file before it runs it: whether the
// dynamic loader (which loads the tracer through LD_PRELOAD) runs in it at all, and whether
// something else takes malloc before the tracer can.
#include <string>
#include <vector>

namespace alloclab::launch {

struct ProgramProbe {
  bool elf = false;      // a 64-bit little-endian ELF file whose program headers could be read
  bool foreign = false;  // an ELF file of another class or byte order (a 32-bit program)
  bool dynamic = false;  // has an interpreter (PT_INTERP): LD_PRELOAD applies
  std::vector<std::string> needed;   // DT_NEEDED libraries, in order
  std::vector<std::string> defines;  // allocation functions its dynamic symbol table defines
};

// Never throws: a file that is unreadable, foreign or damaged in its headers gives elf false;
// damage further on leaves out what it hides (needed libraries, defined functions).
ProgramProbe probe_program(const std::string& path);

// The sanitizer runtime among `needed` (libasan.so.8, libtsan.so.2, ...), or empty.
std::string sanitizer_runtime(const std::vector<std::string>& needed);

}  // namespace alloclab::launch
