#pragma once
// The function names of one module of a running program, as libdwfl's dwfl_module_addrname
// gives them, answered from tables sorted by address that are built once per module.
// dwfl_module_addrname reads the module's whole symbol table for every address it is asked
// about, which is what naming thousands of frames in a library with a large table cannot afford.
// Only built where elfutils' libdwfl is (ALLOCLAB_LIBDW).
#include <elfutils/libdwfl.h>

#include <cstdint>
#include <vector>

namespace alloclab::writer {

class ModuleSymbols {
 public:
  // Reads the symbol table of `module` (the one libdwfl would search: .symtab, .dynsym or
  // the separate debug file's, with addresses already relocated for the process).
  explicit ModuleSymbols(Dwfl_Module* module);

  // What dwfl_module_addrname(module, address) returns, nullptr where it returns none. The
  // names belong to `module`, so the table must not outlive it; `module` must be the one the
  // table was built from (its sections decide between labels without a size).
  const char* name(Dwfl_Module* module, std::uint64_t address) const;

  std::size_t symbol_count() const { return starts_.size(); }

 private:
  // Where a run of addresses begins, and the symbol with a size that names them when
  // libdwfl reads the global symbols first (`first_pass`) and, if those name nothing, the
  // local ones (`second_pass`); nullptr where no such symbol covers the run.
  struct Run {
    std::uint64_t start;
    const char* first_pass;
    const char* second_pass;
  };
  // A symbol without a size: libdwfl's fallback for assembly labels.
  struct Label {
    std::uint64_t value;
    std::uint64_t order;  // position in libdwfl's reading order (first pass, then second)
    bool first_pass;
    bool exact_only;      // special section (absolute...): names its own address only
    const void* section;  // the module's section holding `value` (nullptr: none)
    const char* name;
  };
  bool same_section(Dwfl_Module* module, const Label& label, std::uint64_t address,
                    const void*& address_section, bool& section_known) const;

  std::vector<Run> runs_;                // sorted by start
  std::vector<Label> labels_;            // sorted by value, then order
  std::vector<std::uint64_t> starts_;    // every eligible symbol's address, sorted...
  std::vector<std::uint64_t> max_ends_;  // ...and the furthest end among it and those before
  bool has_second_pass_ = false;
};

}  // namespace alloclab::writer
