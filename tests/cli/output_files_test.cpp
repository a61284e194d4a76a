// One rule for every file a command writes: never an input, never two outputs in one file, never
// an existing file without --force, and a directory that cannot take the file is found before
// any work starts. Errors name the path the user gave.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "cli_test_util.hpp"

namespace {

using alloclab::test::CliResult;
namespace fs = std::filesystem;

CliResult run(const std::string& args) {
  return alloclab::test::run_cli(args);
}

std::string contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const std::string kTiny = std::string(ALLOCLAB_TRACES_DIR) + "/tiny.csv";

class OutputFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("alloclab-outputs-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ignored;
    fs::permissions(dir_ / "ro", fs::perms::owner_all, ignored);
    fs::remove_all(dir_);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // A copy of a bundled trace in this test's directory (tests below try to destroy it).
  std::string trace_copy(const std::string& name) const {
    fs::copy_file(ALLOCLAB_TRACES_DIR "/cnn-inference.alt", path(name));
    return path(name);
  }
  // The directory holds only `names` (no output, no hidden temporary file left behind).
  void expect_only(const std::vector<std::string>& names) const {
    std::vector<std::string> found;
    for (const auto& entry : fs::directory_iterator(dir_))
      found.push_back(entry.path().filename().string());
    std::sort(found.begin(), found.end());
    std::vector<std::string> expected = names;
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(found, expected);
  }

  fs::path dir_;
};

// `replay a.alt --json a.alt` replaced the recorded trace by its report, read-only or not.
TEST_F(OutputFiles, replay_refuses_an_output_that_names_its_input) {
  const std::string trace = trace_copy("a.alt");
  const std::string original = contents(trace);
  fs::create_symlink(trace, path("link.json"));
  fs::create_hard_link(trace, path("hard.json"));
  fs::create_directories(path("sub"));
  struct Case {
    std::string args, output;
  } cases[] = {
      {"--json " + trace, trace},
      {"--csv " + trace, trace},
      {"--json " + path("sub/../a.alt"), path("sub/../a.alt")},
      {"--json " + path("link.json"), path("link.json")},
      {"--json " + path("hard.json"), path("hard.json")},
      {"--force --json " + trace, trace},  // --force replaces outputs, never an input
      {"--force --csv " + path("hard.json"), path("hard.json")},
  };
  for (const bool read_only : {false, true}) {
    fs::permissions(trace, read_only ? fs::perms::owner_read : fs::perms::owner_all);
    for (const Case& c : cases) {
      SCOPED_TRACE(c.args + (read_only ? " (read-only input)" : ""));
      const CliResult r = run("replay " + trace + " -s exact " + c.args);
      EXPECT_EQ(r.status, 2) << r.output;
      EXPECT_NE(r.output.find("alloclab: error: " + c.output + ": "), std::string::npos)
          << r.output;
      EXPECT_NE(r.output.find("would replace the input " + trace), std::string::npos) << r.output;
      EXPECT_EQ(r.output.find("hit rate"), std::string::npos) << "replayed before refusing";
      EXPECT_EQ(contents(trace), original);
      EXPECT_TRUE(fs::is_symlink(path("link.json")));
    }
  }
  expect_only({"a.alt", "link.json", "hard.json", "sub"});
}

TEST_F(OutputFiles, convert_and_merge_refuse_an_output_that_names_an_input) {
  const std::string trace = trace_copy("a.alt");
  const std::string original = contents(trace);
  const CliResult convert = run("convert --force --to csv " + trace + " " + trace);
  EXPECT_EQ(convert.status, 2) << convert.output;
  EXPECT_NE(convert.output.find("would replace the input"), std::string::npos) << convert.output;
  EXPECT_EQ(contents(trace), original);

  ASSERT_EQ(run("replay " + trace + " -s exact --json " + path("r.json")).status, 0);
  const std::string report = contents(path("r.json"));
  const CliResult merge = run("merge -f " + path("r.json") + " " + path("r.json"));
  EXPECT_EQ(merge.status, 2) << merge.output;
  EXPECT_NE(merge.output.find("would replace the input"), std::string::npos) << merge.output;
  EXPECT_EQ(contents(path("r.json")), report);
}

// `--json X --csv X` kept only the CSV.
TEST_F(OutputFiles, two_outputs_of_one_command_may_not_name_one_file) {
  const std::string trace = trace_copy("a.alt");
  fs::create_directories(path("sub"));
  for (const std::string& args :
       {"replay " + trace + " -s exact --json " + path("x") + " --csv " + path("x"),
        "replay " + trace + " -s exact --json " + path("x") + " --csv " + path("sub/../x"),
        "sweep " + trace + " -s exact --json " + path("x") + " --csv " + path("x")}) {
    SCOPED_TRACE(args);
    const CliResult r = run(args);
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find("--json and --csv name the same file"), std::string::npos) << r.output;
  }
  // Also when the second is a hard link to the first, --force or not.
  std::ofstream(path("x")) << "old";
  fs::create_hard_link(path("x"), path("y"));
  const CliResult linked =
      run("replay " + trace + " -s exact -f --json " + path("x") + " --csv " + path("y"));
  EXPECT_EQ(linked.status, 2) << linked.output;
  EXPECT_NE(linked.output.find("--json and --csv name the same file"), std::string::npos)
      << linked.output;
  EXPECT_EQ(contents(path("x")), "old");
  expect_only({"a.alt", "sub", "x", "y"});
}

// Every command that writes a file: refused without --force (the file untouched), replaced with.
TEST_F(OutputFiles, an_existing_output_is_replaced_only_with_force) {
  const std::string trace = trace_copy("a.alt");
  ASSERT_EQ(run("replay " + kTiny + " -s exact --json " + path("shard.json")).status, 0);
  const std::string out = path("out.csv");  // a name every writer accepts
  const std::vector<std::string> commands = {
      "replay " + kTiny + " -s exact --json " + out,
      "replay " + kTiny + " -s exact --csv " + out,
      "sweep " + kTiny + " -s 'fifo-shrink:max={1MiB..2MiB:x2}' --json " + out,
      "sweep " + kTiny + " -s exact --csv " + out,
      "advise " + kTiny + " --json " + out,
      "advise --pytorch " + kTiny + " --json " + out,
      "calibrate --budget-ms 1 -o " + out,
      "convert --to csv " + trace + " " + out,
      "generate --runs 1 -o " + out,
      "merge " + out + " " + path("shard.json"),
  };
  for (const std::string& command : commands) {
    SCOPED_TRACE(command);
    std::ofstream(out) << "precious";
    const CliResult refused = run(command);
    EXPECT_EQ(refused.status, 2) << refused.output;
    EXPECT_NE(refused.output.find("alloclab: error: " + out +
                                  ": already exists; pass --force to replace it"),
              std::string::npos)
        << refused.output;
    EXPECT_EQ(contents(out), "precious");
    const CliResult forced = run(command + " --force");
    EXPECT_EQ(forced.status, 0) << forced.output;
    EXPECT_NE(contents(out), "precious");
    EXPECT_GT(contents(out).size(), 20u);
  }
  // A symbolic link is replaced itself, never written through.
  std::ofstream(path("target")) << "precious";
  fs::create_symlink(path("target"), path("link"));
  const CliResult link = run("replay " + kTiny + " -s exact --json " + path("link"));
  EXPECT_EQ(link.status, 2) << link.output;
  EXPECT_NE(link.output.find("a symbolic link"), std::string::npos) << link.output;
  EXPECT_EQ(run("replay " + kTiny + " -s exact -f --json " + path("link")).status, 0);
  EXPECT_FALSE(fs::is_symlink(path("link")));
  EXPECT_EQ(contents(path("target")), "precious");
  expect_only({"a.alt", "shard.json", "out.csv", "target", "link"});
}

// The one line a refused output gets; /proc refuses new files as a virtual file system to root
// and for want of permission to anyone else.
std::string proc_refusal(const std::string& prefix) {
  return ::geteuid() == 0 ? prefix + "/proc does not accept new files (a virtual file system)"
                          : prefix + "no permission to create files in /proc";
}

// A report that cannot be written was found out after the whole replay (or a calibration).
TEST_F(OutputFiles, an_output_directory_is_checked_before_the_work) {
  const std::string trace = path("big.alt");
  ASSERT_EQ(run("generate --shape transformer --events 1000000 -o " + trace).status, 0);
  std::ofstream(path("plain")) << "a file, not a directory";
  struct Case {
    std::string output, message;
  } cases[] = {
      {path("absent/r.json"),
       path("absent/r.json") + ": directory " + path("absent") + " does not exist"},
      {path("plain/r.json"), path("plain/r.json") + ": " + path("plain") + " is not a directory"},
      {"/proc/r.json", proc_refusal("/proc/r.json: ")},
      {path("r.json/"), path("r.json/") + ": names a directory, not a file"},
  };
  for (const Case& c : cases) {
    for (const std::string& command :
         {"replay " + trace + " -s exact -s fifo-shrink:max=1MiB --csv " + c.output,
          "sweep " + trace + " -s 'fifo-shrink:max={1MiB..64MiB:x2}' --json " + c.output,
          "advise " + trace + " --json " + c.output,
          "advise --pytorch " + trace + " --json " + c.output, "calibrate -o " + c.output}) {
      SCOPED_TRACE(command);
      const auto start = std::chrono::steady_clock::now();
      const CliResult r = run(command);
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      EXPECT_EQ(r.status, 2) << r.output;
      // The error is all it printed: no table, no measurement, no progress, no warning.
      EXPECT_EQ(r.output.rfind("alloclab: error: " + c.message, 0), 0u) << r.output;
      EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << r.output;
      EXPECT_LT(seconds, 2.0) << "the work ran before the check";
    }
  }
  // A directory as the output itself.
  fs::create_directories(path("d"));
  const CliResult directory = run("replay " + kTiny + " -s exact --force --json " + path("d"));
  EXPECT_EQ(directory.status, 2) << directory.output;
  EXPECT_NE(directory.output.find(path("d") + ": is a directory"), std::string::npos)
      << directory.output;
  expect_only({"big.alt", "plain", "d"});
}

// A directory the owner cannot write (root may: then the check passes, as the write would).
TEST_F(OutputFiles, an_unwritable_output_directory_is_refused) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes into any directory";
  fs::create_directories(path("ro"));
  fs::permissions(path("ro"), fs::perms::owner_read | fs::perms::owner_exec);
  const CliResult r = run("replay " + kTiny + " -s exact --json " + path("ro/r.json"));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_EQ(r.output, "alloclab: error: " + path("ro/r.json") +
                          ": no permission to create files in " + path("ro") + "\n");
}

// "--json /proc/version" said "No such file or directory" of a file that plainly exists.
TEST_F(OutputFiles, an_output_that_cannot_be_replaced_says_why) {
  for (const char* force : {"", " --force"}) {
    const CliResult r = run("replay " + kTiny + " -s exact --json /proc/version" + force);
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_EQ(r.output, "alloclab: error: " + proc_refusal("/proc/version: ") + "\n");
  }
  // A device is never replaced by a regular file (as root, /dev/null would have been).
  const CliResult device = run("generate --runs 1 --force -o /dev/null");
  EXPECT_EQ(device.status, 2) << device.output;
  EXPECT_EQ(device.output,
            "alloclab: error: /dev/null: is a character device; -o writes a regular file\n");
  EXPECT_FALSE(fs::is_regular_file("/dev/null"));
}

// A write that fails midway named the hidden temporary file (".alloclab-PID-out.alt").
TEST_F(OutputFiles, a_failed_write_names_the_given_path_not_the_temporary_file) {
  const std::string trace = trace_copy("a.alt");
  for (const std::string& command : {"convert --to csv " + trace + " " + path("out.csv"),
                                     "generate --events 1000000 -o " + path("out.alt"),
                                     "replay " + trace + " -s exact --json " + path("out.json")}) {
    SCOPED_TRACE(command);
    // A file size limit of 8 KiB (SIGXFSZ ignored, so the write fails with EFBIG).
    const CliResult r = alloclab::test::run_shell("trap '' XFSZ; ulimit -f 8; " +
                                                  std::string(ALLOCLAB_CLI) + " " + command);
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find(path("out.")), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find(".alloclab-"), std::string::npos) << r.output;
  }
  expect_only({"a.alt"});
}

// Into /proc (even as root) the trace could never be written: the program ran untraced and then
// record exited 2. Now it does not run at all.
TEST_F(OutputFiles, record_into_an_unwritable_directory_does_not_run_the_program) {
  const std::string ran = path("ran");
  for (const std::string& output :
       {std::string("/proc/alloclab-record.alt"), path("absent/t.alt")}) {
    SCOPED_TRACE(output);
    const CliResult r = run("record -o " + output + " -- touch " + ran);
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find("alloclab: error: " + output + ": "), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(ran)) << "the program must not have run";
  }
  // The default name goes into the current directory: that is checked too.
  const CliResult here = alloclab::test::run_shell("cd /proc && " + std::string(ALLOCLAB_CLI) +
                                                   " record -- touch " + ran);
  EXPECT_EQ(here.status, 2) << here.output;
  EXPECT_EQ(here.output, "alloclab: error: " + proc_refusal("") + "\n");
  EXPECT_FALSE(fs::exists(ran)) << "the program must not have run";
}

TEST_F(OutputFiles, record_replaces_an_existing_trace_only_with_force) {
  const std::string trace = path("t.alt");
  std::ofstream(trace) << "precious";
  const CliResult refused = run("record -o " + trace + " -- true");
  EXPECT_EQ(refused.status, 2) << refused.output;
  EXPECT_NE(refused.output.find(trace + ": already exists; pass --force to replace it"),
            std::string::npos)
      << refused.output;
  EXPECT_EQ(contents(trace), "precious");
#if !defined(__SANITIZE_ADDRESS__)  // an ASan-built tracer cannot be preloaded into `true`
  const CliResult forced = run("record --force -o " + trace + " -- true");
  EXPECT_EQ(forced.status, 0) << forced.output;
  EXPECT_NE(contents(trace), "precious");
#endif
  // --force removes the old trace before the program runs: never the program itself.
  fs::copy_file("/bin/true", path("prog"));
  const std::string program = contents(path("prog"));
  const CliResult self = run("record --force -o " + path("prog") + " -- " + path("prog"));
  EXPECT_EQ(self.status, 2) << self.output;
  EXPECT_NE(self.output.find("would replace the input " + path("prog")), std::string::npos)
      << self.output;
  EXPECT_EQ(contents(path("prog")), program);
}

}  // namespace
