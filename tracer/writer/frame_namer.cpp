#include "frame_namer.hpp"

#include <cxxabi.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#ifdef ALLOCLAB_LIBDW
#include <elfutils/libdwfl.h>

#include <unordered_map>

#include "module_symbols.hpp"
#endif

namespace alloclab::writer {
namespace {

std::string demangled(const char* name) {
  int status = 0;
  char* text = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || !text) return name;
  std::string result = text;
  std::free(text);
  return result;
}

bool parse_hex(std::string_view text, std::uint64_t& value) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
  return error == std::errc() && end == text.data() + text.size();
}

// The next space-separated field of `line`, which loses it and the spaces after it.
std::string_view take_field(std::string_view& line) {
  const std::size_t end = std::min(line.find(' '), line.size());
  const std::string_view field = line.substr(0, end);
  line.remove_prefix(end);
  while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
  return field;
}

}  // namespace

std::vector<MappedFile> parse_maps(std::string_view text) {
  std::vector<MappedFile> files;
  while (!text.empty()) {
    const std::size_t newline = std::min(text.find('\n'), text.size());
    std::string_view line = text.substr(0, newline);
    text.remove_prefix(std::min(newline + 1, text.size()));
    // "start-end perms offset dev inode path", the path absent for anonymous memory.
    const std::string_view range = take_field(line);
    const std::size_t dash = range.find('-');
    MappedFile file;
    if (dash == std::string_view::npos || !parse_hex(range.substr(0, dash), file.start) ||
        !parse_hex(range.substr(dash + 1), file.end))
      continue;
    for (int field = 0; field < 4; ++field) take_field(line);
    if (line.empty() || line.front() == '[') continue;  // [heap], [stack], [vdso]...
    file.path = std::string(line);
    files.push_back(std::move(file));
  }
  return files;
}

#ifdef ALLOCLAB_LIBDW
struct FrameNamer::Symbols {
  Symbols() {
    callbacks.find_elf = dwfl_linux_proc_find_elf;
    callbacks.find_debuginfo = dwfl_standard_find_debuginfo;
    callbacks.debuginfo_path = &debuginfo_path;
    dwfl = dwfl_begin(&callbacks);
  }
  ~Symbols() {
    tables.clear();  // their names belong to the modules
    if (dwfl) dwfl_end(dwfl);
  }

  // The function that names `address` in `module`, from the module's table (built on first
  // use).
  const char* function(Dwfl_Module* module, std::uint64_t address) {
    auto [table, added] = tables.try_emplace(module);
    if (added) {
      table->second.place = place_of(module);
      table->second.symbols = std::make_unique<ModuleSymbols>(module);
    }
    return table->second.symbols->name(module, address);
  }

  // After the modules were reported again: libdwfl has freed those that are gone, and a new
  // module may have the address of a freed one, so a table is kept only for a module that is
  // still there with the same file at the same place.
  void forget_gone_modules() {
    Tables kept;
    const auto keep = [](Dwfl_Module* module, void**, const char*, Dwarf_Addr, void* arg) {
      auto& [old_tables, new_tables] = *static_cast<std::pair<Tables*, Tables*>*>(arg);
      const auto table = old_tables->find(module);
      if (table != old_tables->end() && table->second.place == place_of(module))
        new_tables->insert(old_tables->extract(table));
      return static_cast<int>(DWARF_CB_OK);
    };
    std::pair<Tables*, Tables*> both{&tables, &kept};
    dwfl_getmodules(dwfl, keep, &both, 0);
    tables = std::move(kept);
  }

  struct Place {
    std::string name;
    Dwarf_Addr start = 0;
    Dwarf_Addr end = 0;
    bool operator==(const Place&) const = default;
  };
  static Place place_of(Dwfl_Module* module) {
    Place place;
    if (const char* name = dwfl_module_info(module, nullptr, &place.start, &place.end, nullptr,
                                            nullptr, nullptr, nullptr))
      place.name = name;
    return place;
  }
  struct Table {
    Place place;
    std::unique_ptr<ModuleSymbols> symbols;
  };
  using Tables = std::unordered_map<Dwfl_Module*, Table>;

  char* debuginfo_path = nullptr;
  Dwfl_Callbacks callbacks{};
  Dwfl* dwfl = nullptr;
  Tables tables;
};
#else
struct FrameNamer::Symbols {};
#endif

FrameNamer::FrameNamer(int pid) : pid_(pid) {
#ifdef ALLOCLAB_LIBDW
  symbols_ = std::make_unique<Symbols>();
#endif
  refresh();
}

FrameNamer::FrameNamer(const SavedMaps& maps) : pid_(0), may_refresh_(false) {
  files_ = parse_maps(maps.text);
#ifdef ALLOCLAB_LIBDW
  symbols_ = std::make_unique<Symbols>();
  std::string text = maps.text;  // fmemopen wants a writable buffer, even to read
  if (symbols_->dwfl && !text.empty())
    if (FILE* file = fmemopen(text.data(), text.size(), "r")) {
      dwfl_report_begin(symbols_->dwfl);
      dwfl_linux_proc_maps_report(symbols_->dwfl, file);
      dwfl_report_end(symbols_->dwfl, nullptr, nullptr);
      std::fclose(file);
    }
#endif
}

FrameNamer::~FrameNamer() = default;

bool FrameNamer::refresh() {
  if (pid_ <= 0) return false;  // saved maps: nothing to read again
  std::ifstream maps("/proc/" + std::to_string(pid_) + "/maps");
  std::ostringstream text;
  text << maps.rdbuf();
  // A program that has ended keeps the names it had: nothing is reported, nothing forgotten.
  if (!maps || text.str().empty()) return false;
  files_ = parse_maps(text.str());
#ifdef ALLOCLAB_LIBDW
  if (symbols_->dwfl) {
    dwfl_report_begin(symbols_->dwfl);
    dwfl_linux_proc_report(symbols_->dwfl, pid_);
    dwfl_report_end(symbols_->dwfl, nullptr, nullptr);
    symbols_->forget_gone_modules();
  }
#endif
  return true;
}

const MappedFile* FrameNamer::file_of(std::uint64_t address) const {
  for (const MappedFile& file : files_)
    if (address >= file.start && address < file.end) return &file;
  return nullptr;
}

FrameName FrameNamer::name(std::uint64_t return_address) {
  // A return address points just past its call: look up the call itself, which is inside the
  // calling function even when the call is the function's last instruction.
  const std::uint64_t call = return_address - 1;
  const MappedFile* file = file_of(call);
  if (!file && may_refresh_) {
    may_refresh_ = false;
    if (refresh()) file = file_of(call);
  }
  FrameName name;
  if (file) name.module = file->path;
#ifdef ALLOCLAB_LIBDW
  if (file && symbols_->dwfl)
    if (Dwfl_Module* module = dwfl_addrmodule(symbols_->dwfl, call)) {
      if (const char* symbol = symbols_->function(module, call)) name.function = demangled(symbol);
      // The line table of the object's DWARF (found by libdwfl's standard search: the object
      // itself, a .debug file beside it or under the debug directories, by build id).
      if (Dwfl_Line* line = dwfl_module_getsrc(module, call)) {
        int number = 0;
        if (const char* source = dwfl_lineinfo(line, nullptr, &number, nullptr, nullptr, nullptr);
            source && number > 0) {
          name.file = source;
          name.line = static_cast<std::uint32_t>(number);
        }
      }
    }
#endif
  return name;
}

}  // namespace alloclab::writer
