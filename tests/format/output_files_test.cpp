// Writing an output whole or not at all: the temporary file beside the target, its removal on
// every failure (an exception, a failed stream, a fatal signal), and messages that name the
// path the user gave.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "alloclab/format/output_files.hpp"

namespace alloclab {
namespace {

namespace fs = std::filesystem;

// A fresh directory for one test, removed with everything in it.
class OutputDirectory : public testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        fs::temp_directory_path() / ("alloclab-output-files-" + std::to_string(::getpid()) + "-" +
                                     testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& entry : fs::directory_iterator(dir_)) out.push_back(entry.path().filename());
    return out;
  }
  static std::string content(const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

  fs::path dir_;
};

TEST_F(OutputDirectory, a_finished_write_leaves_only_the_output) {
  std::string temporary;
  write_atomically(path("out.csv.gz"), [&](const std::string& t) {
    temporary = t;
    std::ofstream(t) << "whole";
  });
  EXPECT_EQ(content(path("out.csv.gz")), "whole");
  EXPECT_EQ(names(), std::vector<std::string>{"out.csv.gz"});
  // Hidden, beside the target, ending like it (the format and .gz follow from the name).
  EXPECT_EQ(fs::path(temporary).parent_path(), dir_);
  EXPECT_EQ(fs::path(temporary).filename().string().front(), '.');
  EXPECT_TRUE(temporary.ends_with("-out.csv.gz")) << temporary;
}

TEST_F(OutputDirectory, a_failed_write_leaves_the_existing_file_and_no_temporary) {
  std::ofstream(path("out.json")) << "before";
  EXPECT_THROW(write_atomically(path("out.json"),
                                [](const std::string& t) {
                                  std::ofstream(t) << "half";
                                  throw std::runtime_error("disk full");
                                }),
               std::runtime_error);
  EXPECT_EQ(content(path("out.json")), "before");
  EXPECT_EQ(names(), std::vector<std::string>{"out.json"});
}

TEST_F(OutputDirectory, an_error_names_the_given_path_not_the_temporary_file) {
  try {
    write_atomically(path("report.json"), [](const std::string& t) {
      throw std::runtime_error("cannot write " + t + ": No space left on device (in " +
                               fs::path(t).filename().string() + ")");
    });
    FAIL() << "the write did not fail";
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    EXPECT_EQ(message, "cannot write " + path("report.json") + ": No space left on device (in " +
                           path("report.json") + ")");
    EXPECT_EQ(message.find(".alloclab-"), std::string::npos) << message;
  }
}

TEST_F(OutputDirectory, write_output_writes_through_a_stream) {
  write_output(path("out.txt"), [](std::ostream& out) { out << "line\n"; });
  EXPECT_EQ(content(path("out.txt")), "line\n");
  EXPECT_EQ(names(), std::vector<std::string>{"out.txt"});
}

TEST_F(OutputDirectory, write_output_into_a_missing_directory_says_cannot_write_the_path) {
  const std::string target = path("no-such-dir/out.txt");
  try {
    write_output(target, [](std::ostream& out) { out << "x"; });
    FAIL() << "wrote into a missing directory";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("cannot write " + target + ": ", 0), 0u) << e.what();
  }
}

TEST_F(OutputDirectory, a_fatal_signal_during_the_write_removes_the_temporary_file) {
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      write_atomically(path("out.alt"), [&](const std::string& t) {
        std::ofstream(t) << "half";
        ::raise(sig);
      });
      ::_exit(0);  // not reached: the signal ends the process
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status)) << "signal " << sig;
    EXPECT_EQ(WTERMSIG(status), sig);
    EXPECT_TRUE(names().empty()) << "signal " << sig << " left " << names().front();
  }
}

TEST_F(OutputDirectory, the_signal_handlers_before_the_write_are_restored_after_it) {
  struct sigaction before = {};
  ::sigaction(SIGTERM, nullptr, &before);
  write_atomically(path("out"), [](const std::string& t) { std::ofstream(t) << "x"; });
  struct sigaction after = {};
  ::sigaction(SIGTERM, nullptr, &after);
  EXPECT_EQ(after.sa_handler, before.sa_handler);
}

}  // namespace
}  // namespace alloclab
