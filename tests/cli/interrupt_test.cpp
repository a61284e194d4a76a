// Ctrl-C during a long replay stops it cleanly: exit status 130 and no report, never a corrupt
// or partial one.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <string>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("alloclab-int-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

int run_and_wait(const std::vector<std::string>& args, int interrupt_after_ms) {
  std::vector<char*> argv;
  std::string cli = ALLOCLAB_CLI;
  argv.push_back(cli.data());
  std::vector<std::string> copy = args;
  for (std::string& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  if (interrupt_after_ms >= 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(interrupt_after_ms));
    ::kill(pid, SIGINT);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
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

}  // namespace
