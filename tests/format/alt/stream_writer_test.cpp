// Where the streaming writer keeps its file descriptor: created on the caller's thread at the
// number open() gives, moved above the program's numbers by the first append (which a tracer
// makes on its writer thread), and safe from a program that closes or reuses the low number in
// between.
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "alloclab/format/alt/alt.hpp"
#include "alloclab/format/alt/stream_writer.hpp"
#include "tests/format/trace_test_util.hpp"

namespace alloclab {
namespace {

// This process's descriptors open on `path`.
std::vector<int> descriptors_of(const std::string& path) {
  std::vector<int> found;
  const std::filesystem::path target = std::filesystem::canonical(path);
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code error;
    const std::filesystem::path link = std::filesystem::read_symlink(entry.path(), error);
    if (!error && link == target) found.push_back(std::stoi(entry.path().filename().string()));
  }
  return found;
}

Trace some_events(std::uint64_t count) {
  Trace trace;
  for (std::uint64_t i = 0; i < count; ++i)
    trace.push_back(test::alloc_event(0x10000 + 64 * i, 48, 100 * i));
  return trace;
}

bool high_numbers_allowed() {
  rlimit limit{};
  return getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur > 1000;
}

TEST(AltStreamWriter, the_descriptor_moves_high_at_the_first_append_not_at_creation) {
  if (!high_numbers_allowed()) GTEST_SKIP() << "RLIMIT_NOFILE is 1000 or less";
  test::TempFile file("stream-writer-fd.alt");
  AltStreamWriter writer(file.path(), nlohmann::json::object());
  std::vector<int> fds = descriptors_of(file.path());
  ASSERT_EQ(fds.size(), 1u);
  EXPECT_LT(fds[0], 1000);  // nothing costly on the creating thread
  writer.append(some_events(10));
  fds = descriptors_of(file.path());
  ASSERT_EQ(fds.size(), 1u);
  EXPECT_GE(fds[0], 1000);
  writer.close();
  EXPECT_EQ(read_alt(file.path()).size(), 10u);
}

TEST(AltStreamWriter, a_program_that_reuses_the_low_number_before_the_first_append_keeps_it) {
  test::TempFile file("stream-writer-reused.alt");
  AltStreamWriter writer(file.path(), nlohmann::json::object());
  const std::vector<int> fds = descriptors_of(file.path());
  ASSERT_EQ(fds.size(), 1u);
  // The program closes everything it did not open itself and opens a file of its own, which
  // gets the writer's number.
  ASSERT_EQ(close(fds[0]), 0);
  const int program_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_EQ(program_fd, fds[0]);
  writer.append(some_events(25));
  writer.close();
  EXPECT_EQ(fcntl(program_fd, F_GETFD), FD_CLOEXEC) << "the program's descriptor was closed";
  EXPECT_EQ(std::filesystem::read_symlink("/proc/self/fd/" + std::to_string(program_fd)),
            "/dev/null");
  close(program_fd);
  EXPECT_EQ(read_alt(file.path()).size(), 25u);
}

TEST(AltStreamWriter, a_chunk_that_could_not_be_written_leaves_no_hole_before_the_next) {
  test::TempFile file("short-write.alt");
  const Trace events = some_events(300);
  // Room for ten more bytes: the second chunk is written in part, then cut off again.
  EXPECT_TRUE(test::write_with_the_second_chunk_failing(file.path(), events));
  AltLoadStats stats;
  const Trace t = read_alt(file.path(), &stats);
  EXPECT_TRUE(t.warnings.empty()) << t.warnings.front();
  EXPECT_EQ(stats.chunks, 2u);
  ASSERT_EQ(t.size(), 200u);
  EXPECT_EQ(t.event(99), events.event(99));
  EXPECT_EQ(t.event(100), events.event(200));
}

}  // namespace
}  // namespace alloclab
