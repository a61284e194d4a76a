// `alloclab record` on programs the tracer cannot see into: it refuses those that would not run
// with it (built with a sanitizer) and warns about those whose allocations it would miss
// (statically linked, defining malloc themselves). The programs are in tests/preload/linkage.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "record_test_util.hpp"

namespace alloclab::test {
namespace {

TEST(RecordLinkage, a_program_built_with_address_sanitizer_is_refused_before_it_runs) {
  ALLOCLAB_SKIP_UNDER_ASAN();
#ifndef LINKAGE_ASAN_HELLO
  GTEST_SKIP() << "this compiler cannot build with -fsanitize=address";
#else
  ScratchDir dir;
  const std::string trace = dir.file("t.alt");
  const std::string ran = dir.file("ran");
  const Recorded r = record(trace, std::string(LINKAGE_ASAN_HELLO) + " " + ran);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("refusing to trace " + std::string(LINKAGE_ASAN_HELLO) +
                          ": it is built with a sanitizer (libasan.so"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(std::filesystem::exists(ran)) << "the program must not have run";
  EXPECT_FALSE(std::filesystem::exists(trace));
#endif
}

TEST(RecordLinkage, a_statically_linked_program_runs_with_a_warning) {
  ALLOCLAB_SKIP_UNDER_ASAN();
#ifndef LINKAGE_STATIC_HELLO
  GTEST_SKIP() << "this toolchain cannot link statically (no libc.a)";
#else
  ScratchDir dir;
  const std::string trace = dir.file("t.alt");
  const std::string ran = dir.file("ran");
  const Recorded r = record(trace, std::string(LINKAGE_STATIC_HELLO) + " " + ran);
  EXPECT_NE(
      r.output.find("warning: " + std::string(LINKAGE_STATIC_HELLO) + " is statically linked"),
      std::string::npos)
      << r.output;
  EXPECT_TRUE(std::filesystem::exists(ran)) << "the program ran";
  // Nothing could be traced: record says so in its exit status, as for any missing trace.
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_FALSE(std::filesystem::exists(trace));
#endif
}

TEST(RecordLinkage, a_program_that_defines_malloc_runs_with_a_warning) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ALLOCLAB_SKIP_UNDER_TSAN("the program is not built with ThreadSanitizer, the tracer is");
  ScratchDir dir;
  const std::string trace = dir.file("t.alt");
  const Recorded r = record(trace, LINKAGE_OWN_MALLOC);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("warning: " + std::string(LINKAGE_OWN_MALLOC) +
                          " defines malloc, free, calloc, realloc itself"),
            std::string::npos)
      << r.output;
  // Its 1,000 malloc/free pairs went to its own code.
  const Trace t = read_alt(trace);
  std::size_t program_sized = 0;
  for (std::size_t i = 0; i < t.size(); ++i)
    program_sized += t.op(i) == Op::alloc && t.size_of(i) >= 100 && t.size_of(i) < 1100;
  EXPECT_LT(program_sized, 1000u);
}

TEST(RecordLinkage, a_32_bit_program_is_warned_about) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  // An ELF header of class 32 is all `record` reads; the exec itself then fails.
  const std::string program = dir.file("prog32");
  {
    std::ofstream out(program, std::ios::binary);
    const char header[16] = {0x7f, 'E', 'L', 'F', 1 /* ELFCLASS32 */, 1 /* little-endian */, 1};
    out.write(header, sizeof header);
    out << std::string(48, '\0');
  }
  std::filesystem::permissions(program, std::filesystem::perms::owner_all);
  const Recorded r = record(dir.file("t.alt"), program);
  EXPECT_NE(r.output.find("warning: " + program + " is not a 64-bit little-endian program"),
            std::string::npos)
      << r.output;
}

TEST(RecordLinkage, an_ordinary_program_gets_no_warning) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  const Recorded r =
      record(dir.file("t.alt"), std::string(TORTURE_REALLOC) + " " + dir.file("c.txt"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output.find("warning"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("note"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace alloclab::test
