// record's look at a program's ELF file (include/alloclab/launch/program_probe.hpp): what it finds
// in a real executable, and that damaged or foreign files give "unknown", never a crash or a claim.
#include "alloclab/launch/program_probe.hpp"

#include <gtest/gtest.h>

#include <elf.h>

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace alloclab::launch {
namespace {

// A file in the temporary directory, removed when the object dies.
class ScratchFile {
 public:
  explicit ScratchFile(const std::string& name)
      : path_((std::filesystem::temp_directory_path() /
               ("alloclab-probe-" + std::to_string(::getpid()) + "-" + name))
                  .string()) {}
  ~ScratchFile() { std::filesystem::remove(path_); }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::vector<char> bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes(std::filesystem::file_size(path));
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return bytes;
}

// A copy of a small test program, changed by `change`.
ProgramProbe probe_changed_copy(const std::function<void(std::vector<char>&)>& change) {
  std::vector<char> bytes = bytes_of(PROBE_SUBJECT);
  change(bytes);
  const ScratchFile copy("probe.elf");
  std::ofstream(copy.path(), std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return probe_program(copy.path());
}

Elf64_Ehdr& header_of(std::vector<char>& bytes) {
  return *reinterpret_cast<Elf64_Ehdr*>(bytes.data());
}

TEST(ProgramProbe, a_dynamic_executable_names_its_libraries) {
  const ProgramProbe probe = probe_program(ALLOCLAB_CLI);
  EXPECT_TRUE(probe.elf);
  EXPECT_TRUE(probe.dynamic);
  EXPECT_NE(std::find(probe.needed.begin(), probe.needed.end(), "libc.so.6"), probe.needed.end());
  EXPECT_TRUE(probe.defines.empty());
}

TEST(ProgramProbe, a_script_or_a_missing_file_is_not_elf) {
  const ScratchFile script("script.sh");
  std::ofstream(script.path()) << "#!/bin/sh\necho hi\n";
  EXPECT_FALSE(probe_program(script.path()).elf);
  EXPECT_FALSE(probe_program("/nonexistent/program").elf);
}

TEST(ProgramProbe, damaged_headers_give_unknown_not_a_claim) {
  // Cut inside the program headers: not "statically linked" (no PT_INTERP seen), unknown.
  EXPECT_FALSE(probe_changed_copy([](std::vector<char>& b) { b.resize(100); }).elf);
  EXPECT_FALSE(probe_changed_copy([](std::vector<char>& b) { b.resize(10); }).elf);
  EXPECT_FALSE(probe_changed_copy([](std::vector<char>& b) { header_of(b).e_phnum = 0xFFFF; }).elf);
  EXPECT_FALSE(
      probe_changed_copy([](std::vector<char>& b) { header_of(b).e_phoff = ~0ull >> 1; }).elf);
}

TEST(ProgramProbe, a_program_of_another_class_is_foreign) {
  const ProgramProbe bits32 =
      probe_changed_copy([](std::vector<char>& b) { header_of(b).e_ident[EI_CLASS] = ELFCLASS32; });
  EXPECT_FALSE(bits32.elf);
  EXPECT_TRUE(bits32.foreign);
  const ProgramProbe big_endian =
      probe_changed_copy([](std::vector<char>& b) { header_of(b).e_ident[EI_DATA] = ELFDATA2MSB; });
  EXPECT_TRUE(big_endian.foreign);
  EXPECT_FALSE(probe_program(PROBE_SUBJECT).foreign);
}

TEST(ProgramProbe, damage_past_the_program_headers_leaves_out_what_it_hides) {
  // Section headers beyond the end: the defined functions cannot be read; the rest can.
  const ProgramProbe no_sections =
      probe_changed_copy([](std::vector<char>& b) { header_of(b).e_shoff = b.size() + 4096; });
  EXPECT_TRUE(no_sections.elf);
  EXPECT_TRUE(no_sections.dynamic);
  EXPECT_FALSE(no_sections.needed.empty());
  EXPECT_TRUE(no_sections.defines.empty());
  // Every dynamic entry's value scrambled: no library names, no crash.
  const ProgramProbe scrambled = probe_changed_copy([](std::vector<char>& b) {
    const Elf64_Ehdr& h = header_of(b);
    for (std::size_t k = 0; k < h.e_phnum; ++k) {
      Elf64_Phdr phdr;
      std::memcpy(&phdr, b.data() + h.e_phoff + k * sizeof phdr, sizeof phdr);
      if (phdr.p_type != PT_DYNAMIC) continue;
      for (std::size_t at = phdr.p_offset; at + sizeof(Elf64_Dyn) <= phdr.p_offset + phdr.p_filesz;
           at += sizeof(Elf64_Dyn)) {
        Elf64_Dyn entry;
        std::memcpy(&entry, b.data() + at, sizeof entry);
        entry.d_un.d_val = ~entry.d_un.d_val;
        std::memcpy(b.data() + at, &entry, sizeof entry);
      }
    }
  });
  EXPECT_TRUE(scrambled.elf);
  EXPECT_TRUE(scrambled.dynamic);
  EXPECT_TRUE(scrambled.needed.empty());
}

TEST(ProgramProbe, sanitizer_runtimes_are_named) {
  EXPECT_EQ(sanitizer_runtime({"libasan.so.8", "libc.so.6"}), "libasan.so.8");
  EXPECT_EQ(sanitizer_runtime({"libstdc++.so.6", "libtsan.so.2"}), "libtsan.so.2");
  EXPECT_EQ(sanitizer_runtime({"libclang_rt.asan-x86_64.so"}), "libclang_rt.asan-x86_64.so");
  EXPECT_EQ(sanitizer_runtime({"libm.so.6", "libc.so.6"}), "");
  EXPECT_EQ(sanitizer_runtime({}), "");
}

}  // namespace
}  // namespace alloclab::launch
