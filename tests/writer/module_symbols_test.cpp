#include "tracer/writer/module_symbols.hpp"

#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "tests/real_size.hpp"

// Symbols in this test program that make each of libdwfl's choices somewhere: a global, a
// weak and a local function at one address; a global function with a local one nested inside;
// labels without a size, local and global, after a gap; a global label at the same address
// as a local sized function.
asm(R"(
  .pushsection .text
  .p2align 4
  .type alloclab_symtest_local_alias, @function
alloclab_symtest_local_alias:
  .globl alloclab_symtest_global
  .type alloclab_symtest_global, @function
alloclab_symtest_global:
  .weak alloclab_symtest_weak
  .type alloclab_symtest_weak, @function
alloclab_symtest_weak:
  .fill 32, 1, 0x90
  .size alloclab_symtest_local_alias, 32
  .size alloclab_symtest_global, 32
  .size alloclab_symtest_weak, 24
  .globl alloclab_symtest_outer
  .type alloclab_symtest_outer, @function
alloclab_symtest_outer:
  .fill 16, 1, 0x90
  .type alloclab_symtest_inner, @function
alloclab_symtest_inner:
  .fill 16, 1, 0x90
  .size alloclab_symtest_inner, 16
  .fill 32, 1, 0x90
  .size alloclab_symtest_outer, 64
  .fill 16, 1, 0x90
alloclab_symtest_label:
  .fill 16, 1, 0x90
  .globl alloclab_symtest_global_label
alloclab_symtest_global_label:
  .fill 16, 1, 0x90
  .type alloclab_symtest_local_sized, @function
alloclab_symtest_local_sized:
  .globl alloclab_symtest_label_on_local
alloclab_symtest_label_on_local:
  .fill 16, 1, 0x90
  .size alloclab_symtest_local_sized, 16
  .type alloclab_symtest_end, @function
alloclab_symtest_end:
  .fill 16, 1, 0x90
  .size alloclab_symtest_end, 16
  .popsection
)");
extern "C" void alloclab_symtest_global();
extern "C" void alloclab_symtest_end();

namespace alloclab::writer {
namespace {

struct Process {
  Process() {
    callbacks.find_elf = dwfl_linux_proc_find_elf;
    callbacks.find_debuginfo = dwfl_standard_find_debuginfo;
    callbacks.debuginfo_path = &debuginfo_path;
    dwfl = dwfl_begin(&callbacks);
    dwfl_report_begin(dwfl);
    dwfl_linux_proc_report(dwfl, getpid());
    dwfl_report_end(dwfl, nullptr, nullptr);
  }
  ~Process() { dwfl_end(dwfl); }
  char* debuginfo_path = nullptr;
  Dwfl_Callbacks callbacks{};
  Dwfl* dwfl = nullptr;
};

std::string text(const char* name) {
  return name ? name : "(none)";
}

// Compares the table's answers with dwfl_module_addrname's for `addresses` of `module`.
void expect_same_names(Dwfl_Module* module, const ModuleSymbols& table,
                       const std::vector<std::uint64_t>& addresses) {
  int wrong = 0;
  for (const std::uint64_t address : addresses) {
    const std::string expected = text(dwfl_module_addrname(module, address));
    const std::string got = text(table.name(module, address));
    if (expected != got && ++wrong <= 10)
      ADD_FAILURE() << std::hex << "0x" << address << ": libdwfl names " << expected
                    << ", the table " << got;
  }
  EXPECT_EQ(wrong, 0) << "of " << addresses.size() << " addresses";
}

// Every `stride`th byte of the module's executable sections, and around the start and the end
// of `limit` of its symbols spread over its table (dwfl_module_addrname reads the whole table
// for each address, so checking around every symbol would make the test slow).
std::vector<std::uint64_t> addresses_of(Dwfl_Module* module, std::uint64_t stride, int limit) {
  std::vector<std::uint64_t> addresses;
  GElf_Addr bias = 0;
  Elf* elf = dwfl_module_getelf(module, &bias);
  EXPECT_NE(elf, nullptr);
  if (!elf) return addresses;
  for (Elf_Scn* section = elf_nextscn(elf, nullptr); section; section = elf_nextscn(elf, section)) {
    GElf_Shdr header;
    if (!gelf_getshdr(section, &header) || !(header.sh_flags & SHF_EXECINSTR)) continue;
    for (std::uint64_t offset = 0; offset < header.sh_size; offset += stride)
      addresses.push_back(header.sh_addr + bias + offset);
  }
  const int count = dwfl_module_getsymtab(module);
  const int step = std::max(1, count / limit);
  for (int i = 1; i < count; i += step) {
    GElf_Sym symbol;
    GElf_Addr value = 0;
    if (!dwfl_module_getsym_info(module, i, &symbol, &value, nullptr, nullptr, nullptr) ||
        symbol.st_shndx == SHN_UNDEF || value == 0)
      continue;
    for (const std::uint64_t address :
         {value - 1, value, value + 1, value + symbol.st_size - 1, value + symbol.st_size})
      addresses.push_back(address);
  }
  return addresses;
}

TEST(ModuleSymbols, names_the_symbols_libdwfl_names_across_libc) {
  Process process;
  Dwfl_Module* libc = dwfl_addrmodule(process.dwfl, reinterpret_cast<std::uint64_t>(&strlen));
  ASSERT_NE(libc, nullptr);
  const ModuleSymbols table(libc);
  EXPECT_GT(table.symbol_count(), 1000u);
  const std::vector<std::uint64_t> addresses = addresses_of(libc, 97, 1000);
  EXPECT_GT(addresses.size(), 10000u);
  expect_same_names(libc, table, addresses);

  // libc's table has names that share an address with another binding (weak aliases of
  // global functions): the comparison above covers libdwfl's choice between them.
  int shared = 0;
  std::set<std::pair<std::uint64_t, int>> seen;
  for (int i = 1; i < dwfl_module_getsymtab(libc); ++i) {
    GElf_Sym symbol;
    GElf_Addr value = 0;
    if (dwfl_module_getsym_info(libc, i, &symbol, &value, nullptr, nullptr, nullptr) &&
        GELF_ST_TYPE(symbol.st_info) == STT_FUNC && symbol.st_size != 0)
      seen.emplace(value, GELF_ST_BIND(symbol.st_info));
  }
  for (const auto& [value, binding] : seen)
    if (binding == STB_WEAK && seen.contains({value, STB_GLOBAL})) ++shared;
  EXPECT_GT(shared, 10);
}

TEST(ModuleSymbols, names_the_symbols_libdwfl_names_across_this_program) {
  Process process;
  Dwfl_Module* program =
      dwfl_addrmodule(process.dwfl, reinterpret_cast<std::uint64_t>(&alloclab_symtest_global));
  ASSERT_NE(program, nullptr);
  const ModuleSymbols table(program);
  // Under AddressSanitizer this program's text and table are several times larger, and
  // libdwfl reads the whole table for each address: a quarter of the addresses there.
  const std::vector<std::uint64_t> addresses =
      addresses_of(program, test::kAddressSanitized ? 4 * 97 : 97, 1000);
  EXPECT_GT(addresses.size(), test::real_size(5000));
  expect_same_names(program, table, addresses);
}

TEST(ModuleSymbols, picks_among_aliases_nested_symbols_and_labels_as_libdwfl_does) {
  Process process;
  const auto start = reinterpret_cast<std::uint64_t>(&alloclab_symtest_global);
  const auto end = reinterpret_cast<std::uint64_t>(&alloclab_symtest_end) + 24;
  Dwfl_Module* program = dwfl_addrmodule(process.dwfl, start);
  ASSERT_NE(program, nullptr);
  const ModuleSymbols table(program);
  std::vector<std::uint64_t> addresses;
  std::set<std::string> names;
  for (std::uint64_t address = start - 8; address < end; ++address) {
    addresses.push_back(address);
    names.insert(text(dwfl_module_addrname(program, address)));
  }
  expect_same_names(program, table, addresses);
  // The bytes above make libdwfl choose a global over a weak and a local alias, an outer
  // global function over a local one inside it, and labels without a size.
  for (const char* name :
       {"alloclab_symtest_global", "alloclab_symtest_outer", "alloclab_symtest_label",
        "alloclab_symtest_global_label", "alloclab_symtest_label_on_local", "alloclab_symtest_end"})
    EXPECT_TRUE(names.contains(name)) << name;
  EXPECT_FALSE(names.contains("alloclab_symtest_weak"));
  EXPECT_FALSE(names.contains("alloclab_symtest_local_alias"));
}

}  // namespace
}  // namespace alloclab::writer
