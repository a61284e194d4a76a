#include "module_symbols.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <set>
#include <type_traits>
#include <utility>

namespace alloclab::writer {
namespace {

// libdwfl prefers GLOBAL to WEAK to LOCAL, and any of them to other bindings (GNU_UNIQUE...).
int binding_rank(const GElf_Sym& symbol) {
  switch (GELF_ST_BIND(symbol.st_info)) {
    case STB_GLOBAL:
      return 3;
    case STB_WEAK:
      return 2;
    case STB_LOCAL:
      return 1;
    default:
      return 0;
  }
}

struct Sized {
  std::uint64_t value;
  std::uint64_t end;
  std::uint64_t size;
  int rank;
  bool first_pass;
  const char* name;
};

// The symbol libdwfl keeps, of `best` so far and the next one it reads, `next`, both
// covering the address (dwfl_module_addrsym.c's try_sym_value for symbols with a size). The
// choice depends on the order the symbols are read in, which is why the covering symbols are
// always offered in symbol-table order.
const Sized* better(const Sized* best, const Sized& next) {
  if (!best || best->value < next.value || best->rank < next.rank) return &next;
  // Starting at the same address, the shorter one is closer to the address's own function,
  // unless it would replace a global by a local.
  if (best->value == next.value && best->size > next.size && best->rank <= next.rank) return &next;
  return best;
}

const char* winner(const std::vector<Sized>& symbols, const std::set<std::size_t>& covering) {
  const Sized* best = nullptr;
  for (const std::size_t i : covering) best = better(best, symbols[i]);
  return best ? best->name : nullptr;
}

}  // namespace

ModuleSymbols::ModuleSymbols(Dwfl_Module* module) {
  const int count = dwfl_module_getsymtab(module);
  const int first_global = dwfl_module_getsymtab_first_global(module);
  if (count <= 0 || first_global < 0) return;
  // libdwfl reads the global symbols [first_pass_begin, count) first and the local ones
  // [1, first_global) only when the globals named nothing (entry 0 is the null symbol). With a
  // table whose locals are not told apart (first_global 0) everything is read in one pass.
  const int first_pass_begin = first_global == 0 ? 1 : first_global;
  has_second_pass_ = first_global > 1;

  std::vector<Sized> sized;                                      // in symbol-table order
  std::vector<std::pair<std::uint64_t, std::uint64_t>> extents;  // every eligible symbol
  const auto read = [&](int index, bool first_pass, std::uint64_t order) {
    GElf_Sym symbol;
    GElf_Addr value = 0;
    GElf_Word section_index = 0;
    const char* name =
        dwfl_module_getsym_info(module, index, &symbol, &value, &section_index, nullptr, nullptr);
    // The symbols libdwfl considers for an address: named, defined, and not a section, file
    // or thread-local symbol. Data symbols count too: one that covers an address hides a
    // label before it. `value` is the function's entry; where the architecture has function
    // descriptors (ppc64 ELFv1) libdwfl also matches the descriptor's own address, which is
    // data and never holds a return address, so it is left out here.
    if (!name || name[0] == '\0' || symbol.st_shndx == SHN_UNDEF) return;
    const int type = GELF_ST_TYPE(symbol.st_info);
    if (type == STT_SECTION || type == STT_FILE || type == STT_TLS) return;
    const std::uint64_t end = symbol.st_size > std::numeric_limits<std::uint64_t>::max() - value
                                  ? std::numeric_limits<std::uint64_t>::max()
                                  : value + symbol.st_size;
    extents.emplace_back(value, end);
    if (symbol.st_size != 0) {
      sized.push_back({value, end, symbol.st_size, binding_rank(symbol), first_pass, name});
      return;
    }
    // A label names an address of its own section only (libdwfl's same_section, which for
    // dwfl_module_addrname compares the module's sections holding both addresses, as found by
    // the lookup dwfl_module_address_section also uses; that call loads the module's DWARF,
    // which naming a frame's file and line does anyway).
    Label label{value, order, first_pass, section_index >= SHN_LORESERVE, nullptr, name};
    if (!label.exact_only) {
      Dwarf_Addr relative = value;
      Dwarf_Addr bias = 0;
      label.section = dwfl_module_address_section(module, &relative, &bias);
    }
    labels_.push_back(label);
  };
  std::uint64_t order = 0;
  for (int i = first_pass_begin; i < count; ++i) read(i, true, order++);
  if (has_second_pass_)
    for (int i = 1; i < first_global; ++i) read(i, false, order++);

  std::sort(extents.begin(), extents.end());
  starts_.reserve(extents.size());
  max_ends_.reserve(extents.size());
  for (const auto& [value, end] : extents) {
    starts_.push_back(value);
    max_ends_.push_back(max_ends_.empty() ? end : std::max(max_ends_.back(), end));
  }
  std::sort(labels_.begin(), labels_.end(), [](const Label& a, const Label& b) {
    return a.value != b.value ? a.value < b.value : a.order < b.order;
  });

  // Between two consecutive starts or ends of sized symbols the set of symbols covering an
  // address does not change, and neither does libdwfl's choice among them: one sweep over
  // those points gives each run of addresses its answer, so a lookup is one binary search
  // however the symbols nest or overlap.
  std::vector<std::size_t> by_start(sized.size());
  std::iota(by_start.begin(), by_start.end(), std::size_t{0});
  std::vector<std::size_t> by_end = by_start;
  std::stable_sort(by_start.begin(), by_start.end(),
                   [&](std::size_t a, std::size_t b) { return sized[a].value < sized[b].value; });
  std::stable_sort(by_end.begin(), by_end.end(),
                   [&](std::size_t a, std::size_t b) { return sized[a].end < sized[b].end; });
  std::set<std::size_t> covering[2];  // by pass, in symbol-table order
  constexpr std::uint64_t none = std::numeric_limits<std::uint64_t>::max();
  std::size_t next_start = 0;
  std::size_t next_end = 0;
  while (next_start < sized.size() || next_end < sized.size()) {
    const std::uint64_t point =
        std::min(next_start < sized.size() ? sized[by_start[next_start]].value : none,
                 next_end < sized.size() ? sized[by_end[next_end]].end : none);
    for (; next_end < sized.size() && sized[by_end[next_end]].end == point; ++next_end) {
      const std::size_t i = by_end[next_end];
      covering[sized[i].first_pass ? 0 : 1].erase(i);
    }
    for (; next_start < sized.size() && sized[by_start[next_start]].value == point; ++next_start) {
      const std::size_t i = by_start[next_start];
      covering[sized[i].first_pass ? 0 : 1].insert(i);
    }
    const Run run{point, winner(sized, covering[0]), winner(sized, covering[1])};
    if (runs_.empty() || runs_.back().first_pass != run.first_pass ||
        runs_.back().second_pass != run.second_pass)
      runs_.push_back(run);
  }
}

bool ModuleSymbols::same_section(Dwfl_Module* module, const Label& label, std::uint64_t address,
                                 const void*& address_section, bool& section_known) const {
  if (label.exact_only) return label.value == address;
  if (!section_known) {
    Dwarf_Addr relative = address;
    Dwarf_Addr bias = 0;
    address_section = dwfl_module_address_section(module, &relative, &bias);
    section_known = true;
  }
  return label.section == address_section;
}

const char* ModuleSymbols::name(Dwfl_Module* module, std::uint64_t address) const {
  const auto after =
      std::upper_bound(runs_.begin(), runs_.end(), address,
                       [](std::uint64_t value, const Run& run) { return value < run.start; });
  const Run* covering = after == runs_.begin() ? nullptr : &*(after - 1);
  if (covering && covering->first_pass) return covering->first_pass;

  const void* address_section = nullptr;
  bool section_known = false;
  const auto labels_at = [&](std::uint64_t value) {
    return std::equal_range(labels_.begin(), labels_.end(), value,
                            [](const auto& a, const auto& b) {
                              if constexpr (std::is_same_v<std::decay_t<decltype(a)>, Label>)
                                return a.value < b;
                              else
                                return a < b.value;
                            });
  };
  if (has_second_pass_) {
    // A first-pass label at the address itself ends libdwfl's search before the locals.
    const auto [begin, end] = labels_at(address);
    for (auto label = end; label != begin;) {
      --label;
      if (label->first_pass &&
          same_section(module, *label, address, address_section, section_known))
        return label->name;
    }
    if (covering && covering->second_pass) return covering->second_pass;
  }

  // No symbol with a size covers the address. libdwfl then names it after a label of its
  // section that no symbol starting at or before the address reaches past: the label must sit
  // at the furthest such reach, and of several there the last one read wins.
  const std::size_t before = static_cast<std::size_t>(
      std::upper_bound(starts_.begin(), starts_.end(), address) - starts_.begin());
  if (before == 0) return nullptr;
  const std::uint64_t reach = max_ends_[before - 1];
  if (reach > address) return nullptr;
  const auto [begin, end] = labels_at(reach);
  for (auto label = end; label != begin;) {
    --label;
    if (same_section(module, *label, address, address_section, section_known)) return label->name;
  }
  return nullptr;
}

}  // namespace alloclab::writer
