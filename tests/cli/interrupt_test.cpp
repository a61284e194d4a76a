// Ctrl-C during a long replay stops it cleanly: exit status 130 and no report, never a corrupt
// or partial one. Ctrl-C while an output file is written (a trace by convert or generate)
// leaves no file at all: neither a half-written output nor the temporary it was written to.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("alloclab-int-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

pid_t start_cli(const std::vector<std::string>& args) {
  std::vector<std::string> copy = args;
  copy.insert(copy.begin(), ALLOCLAB_CLI);
  std::vector<char*> argv;
  for (std::string& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

// The exit status, or 128 + the signal that killed it.
int exit_code(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int run_and_wait(const std::vector<std::string>& args, int interrupt_after_ms) {
  const pid_t pid = start_cli(args);
  if (interrupt_after_ms >= 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(interrupt_after_ms));
    ::kill(pid, SIGINT);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return exit_code(status);
}

TEST(Interrupt, sigint_during_replay_exits_130_without_a_report) {
  const std::string trace = temp_path("big.alt");
  const std::string report = temp_path("report.json");
  ASSERT_EQ(run_and_wait({"generate", "--shape", "random", "--events", "3000000", "-o", trace}, -1),
            0);
  std::vector<std::string> args = {"replay", trace, "--json", report, "-j", "1"};
  for (int i = 0; i < 40; ++i) {
    args.push_back("-s");
    args.push_back("fifo-shrink:max=" + std::to_string(i + 1) + "MiB");
  }
  EXPECT_EQ(run_and_wait(args, 1500), 130);
  EXPECT_FALSE(std::filesystem::exists(report));
  std::filesystem::remove(trace);
}

TEST(Interrupt, sigint_during_advise_pytorch_exits_130_without_a_report) {
  const std::string trace = temp_path("advise.alt");
  const std::string report = temp_path("advice.json");
  ASSERT_EQ(run_and_wait({"generate", "--shape", "random", "--events", "3000000", "-o", trace}, -1),
            0);
  EXPECT_EQ(run_and_wait({"advise", "--pytorch", trace, "--memory-limit", "1GiB", "--json", report,
                          "-j", "1"},
                         1500),
            130);
  EXPECT_FALSE(std::filesystem::exists(report));
  std::filesystem::remove(trace);
}

// Names in `dir`, sorted.
std::vector<std::string> entries(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// Starts alloclab, waits until a new entry appears in `dir` (the output being written), then
// sends SIGINT. Returns the exit status (128 + signal when killed by one).
int interrupt_once_writing(const std::vector<std::string>& args, const std::filesystem::path& dir) {
  const std::size_t before = entries(dir).size();
  const pid_t pid = start_cli(args);
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (entries(dir).size() > before) {
      ::kill(pid, SIGINT);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return exit_code(status);
}

class InterruptedWrite : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_path("write");
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

TEST_F(InterruptedWrite, generate_leaves_only_the_finished_file) {
  ASSERT_EQ(run_and_wait(
                {"generate", "--shape", "random", "--events", "200000", "-o", file("t.alt")}, -1),
            0);
  EXPECT_EQ(entries(dir_), std::vector<std::string>{"t.alt"});
}

TEST_F(InterruptedWrite, sigint_while_converting_leaves_neither_output_nor_temporary_file) {
  ASSERT_EQ(
      run_and_wait({"generate", "--shape", "random", "--events", "3000000", "-o", file("big.alt")},
                   -1),
      0);
  // gzip-compressed CSV is the slowest output: the signal lands while it is being written.
  EXPECT_EQ(interrupt_once_writing({"convert", file("big.alt"), file("out.csv.gz")}, dir_),
            128 + SIGINT);
  EXPECT_EQ(entries(dir_), std::vector<std::string>{"big.alt"});
}

TEST_F(InterruptedWrite, sigint_while_generating_leaves_neither_output_nor_temporary_file) {
  EXPECT_EQ(
      interrupt_once_writing(
          {"generate", "--shape", "random", "--events", "3000000", "-o", file("gen.csv")}, dir_),
      128 + SIGINT);
  EXPECT_TRUE(entries(dir_).empty());
}

}  // namespace
