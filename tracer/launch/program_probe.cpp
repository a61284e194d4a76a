#include "alloclab/launch/program_probe.hpp"

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace alloclab::launch {
namespace {

// Limits that keep a damaged file from asking for absurd reads.
constexpr std::size_t max_headers = 4096;
constexpr std::size_t max_table_bytes = 64u << 20;

class File {
 public:
  explicit File(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {}
  ~File() {
    if (fd_ >= 0) ::close(fd_);
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  bool read(std::uint64_t offset, void* into, std::size_t size) const {
    if (fd_ < 0) return false;
    auto* bytes = static_cast<char*>(into);
    while (size > 0) {
      const ssize_t got = ::pread(fd_, bytes, size, static_cast<off_t>(offset));
      if (got <= 0) return false;
      bytes += got;
      offset += static_cast<std::uint64_t>(got);
      size -= static_cast<std::size_t>(got);
    }
    return true;
  }

  template <typename T>
  bool read_table(std::uint64_t offset, std::uint64_t count, std::vector<T>& into) const {
    if (count > max_table_bytes / sizeof(T)) return false;
    into.resize(count);
    return read(offset, into.data(), count * sizeof(T));
  }

 private:
  int fd_;
};

std::string string_at(const std::vector<char>& table, std::uint64_t offset) {
  if (offset >= table.size()) return {};
  const char* start = table.data() + offset;
  return std::string(start, strnlen(start, table.size() - offset));
}

// The file offset of virtual address `address`, through the loadable segments.
bool file_offset(const std::vector<Elf64_Phdr>& segments, std::uint64_t address,
                 std::uint64_t& offset) {
  for (const Elf64_Phdr& p : segments)
    if (p.p_type == PT_LOAD && address >= p.p_vaddr && address - p.p_vaddr < p.p_filesz) {
      offset = address - p.p_vaddr + p.p_offset;
      return true;
    }
  return false;
}

void read_needed(const File& file, const std::vector<Elf64_Phdr>& segments, ProgramProbe& probe) {
  const auto dynamic = std::find_if(segments.begin(), segments.end(),
                                    [](const Elf64_Phdr& p) { return p.p_type == PT_DYNAMIC; });
  if (dynamic == segments.end()) return;
  std::vector<Elf64_Dyn> entries;
  if (!file.read_table(dynamic->p_offset, dynamic->p_filesz / sizeof(Elf64_Dyn), entries)) return;
  std::uint64_t strtab = 0, strsz = 0;
  std::vector<std::uint64_t> needed;
  for (const Elf64_Dyn& d : entries) {
    if (d.d_tag == DT_NULL) break;
    if (d.d_tag == DT_STRTAB) strtab = d.d_un.d_ptr;
    if (d.d_tag == DT_STRSZ) strsz = d.d_un.d_val;
    if (d.d_tag == DT_NEEDED) needed.push_back(d.d_un.d_val);
  }
  std::uint64_t offset = 0;
  std::vector<char> strings;
  if (!file_offset(segments, strtab, offset) || !file.read_table(offset, strsz, strings)) return;
  for (const std::uint64_t name : needed) probe.needed.push_back(string_at(strings, name));
}

void read_defined_allocators(const File& file, const Elf64_Ehdr& header, ProgramProbe& probe) {
  static constexpr std::array<std::string_view, 7> allocators = {
      "malloc", "free", "calloc", "realloc", "posix_memalign", "aligned_alloc", "memalign"};
  if (header.e_shentsize != sizeof(Elf64_Shdr) || header.e_shnum > max_headers) return;
  std::vector<Elf64_Shdr> sections;
  if (!file.read_table(header.e_shoff, header.e_shnum, sections)) return;
  for (const Elf64_Shdr& section : sections) {
    if (section.sh_type != SHT_DYNSYM || section.sh_link >= sections.size()) continue;
    std::vector<Elf64_Sym> symbols;
    std::vector<char> names;
    const Elf64_Shdr& strings = sections[section.sh_link];
    if (!file.read_table(section.sh_offset, section.sh_size / sizeof(Elf64_Sym), symbols) ||
        !file.read_table(strings.sh_offset, strings.sh_size, names))
      return;
    for (const Elf64_Sym& symbol : symbols) {
      const unsigned type = ELF64_ST_TYPE(symbol.st_info);
      if (symbol.st_shndx == SHN_UNDEF || (type != STT_FUNC && type != STT_GNU_IFUNC)) continue;
      const std::string name = string_at(names, symbol.st_name);
      if (std::find(allocators.begin(), allocators.end(), name) != allocators.end() &&
          std::find(probe.defines.begin(), probe.defines.end(), name) == probe.defines.end())
        probe.defines.push_back(name);
    }
  }
  // In the order of `allocators`, whatever the symbol table's.
  std::sort(probe.defines.begin(), probe.defines.end(), [](const auto& a, const auto& b) {
    return std::find(allocators.begin(), allocators.end(), a) <
           std::find(allocators.begin(), allocators.end(), b);
  });
}

}  // namespace

ProgramProbe probe_program(const std::string& path) {
  ProgramProbe probe;
  const File file(path);
  Elf64_Ehdr header{};
  if (!file.read(0, &header, sizeof header) || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0)
    return probe;
  if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB) {
    probe.foreign = true;
    return probe;
  }
  std::vector<Elf64_Phdr> segments;
  if (header.e_phentsize != sizeof(Elf64_Phdr) || header.e_phnum > max_headers ||
      !file.read_table(header.e_phoff, header.e_phnum, segments))
    return probe;
  probe.elf = true;
  probe.dynamic = std::any_of(segments.begin(), segments.end(),
                              [](const Elf64_Phdr& p) { return p.p_type == PT_INTERP; });
  read_needed(file, segments, probe);
  read_defined_allocators(file, header, probe);
  return probe;
}

std::string sanitizer_runtime(const std::vector<std::string>& needed) {
  for (const std::string& library : needed)
    for (const std::string_view runtime :
         {"libasan.so", "libhwasan.so", "libtsan.so", "libmsan.so", "liblsan.so",
          "libclang_rt.asan", "libclang_rt.hwasan", "libclang_rt.tsan", "libclang_rt.msan"})
      if (library.starts_with(runtime)) return library;
  return {};
}

}  // namespace alloclab::launch
