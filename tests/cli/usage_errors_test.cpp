// A command line alloclab cannot parse is a usage error like any other bad input: status 2, one
// line `alloclab: error: ...` on stderr, then the usage of the command concerned. CLI11's own
// statuses (105, 106, 109) and wording ("A subcommand is required") leaked through.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cli_test_util.hpp"

namespace {

using alloclab::test::CliResult;

const std::string kTiny = std::string(ALLOCLAB_TRACES_DIR) + "/tiny.csv";

// Only what alloclab writes to stderr (stdout goes nowhere).
CliResult run_stderr(const std::string& args) {
  return alloclab::test::run_shell("(" + std::string(ALLOCLAB_CLI) + " " + args + " >/dev/null)");
}
// Only what alloclab writes to stdout.
CliResult run_stdout(const std::string& args) {
  return alloclab::test::run_shell("(" + std::string(ALLOCLAB_CLI) + " " + args + " 2>/dev/null)");
}

// Status 2; the first line is the error, the second the usage of `command`, then a pointer to
// its --help.
void expect_usage_error(const std::string& args, const std::string& message,
                        const std::string& command) {
  SCOPED_TRACE(args);
  const CliResult r = run_stderr(args);
  EXPECT_EQ(r.status, 2) << r.output;
  const std::size_t first_end = r.output.find('\n');
  ASSERT_NE(first_end, std::string::npos) << r.output;
  const std::string first = r.output.substr(0, first_end);
  EXPECT_EQ(first.rfind("alloclab: error: ", 0), 0u) << r.output;
  EXPECT_NE(first.find(message), std::string::npos) << r.output;
  const std::string rest = r.output.substr(first_end + 1);
  EXPECT_EQ(rest.rfind("Usage: " + command + " ", 0), 0u) << r.output;
  EXPECT_NE(rest.find("Run '" + command + " --help' for more."), std::string::npos) << r.output;
  EXPECT_TRUE(run_stdout(args).output.empty()) << "usage errors go to stderr";
}

TEST(UsageErrors, a_missing_required_option_is_status_2_with_the_usage) {
  expect_usage_error("replay " + kTiny, "--strategy is required", "alloclab replay");
  expect_usage_error("replay", "trace is required", "alloclab replay");
  expect_usage_error("generate", "--output is required", "alloclab generate");
}

TEST(UsageErrors, an_unknown_flag_is_named) {
  expect_usage_error("replay " + kTiny + " -s exact --frobnicate", "--frobnicate",
                     "alloclab replay");
  expect_usage_error("info --frobnicate " + kTiny, "--frobnicate", "alloclab info");
}

TEST(UsageErrors, a_value_of_the_wrong_type_is_named) {
  expect_usage_error("replay " + kTiny + " -s exact -j lots", "lots", "alloclab replay");
  expect_usage_error("calibrate --budget-ms soon", "soon", "alloclab calibrate");
}

TEST(UsageErrors, an_unknown_command_is_named_with_the_closest_one) {
  expect_usage_error("replya " + kTiny, "unknown command 'replya' (did you mean 'replay'?)",
                     "alloclab");
  expect_usage_error("swep " + kTiny, "unknown command 'swep' (did you mean 'sweep'?)", "alloclab");
  expect_usage_error("infoo", "unknown command 'infoo' (did you mean 'info'?)", "alloclab");
  // Nothing close: the commands are listed instead.
  expect_usage_error("frobnicate", "unknown command 'frobnicate' (commands: info, convert,",
                     "alloclab");
  expect_usage_error("--frobnicate", "unknown option '--frobnicate'", "alloclab");
}

TEST(UsageErrors, no_command_is_a_usage_error) {
  expect_usage_error("", "no command given (commands: info, convert,", "alloclab");
}

TEST(UsageErrors, help_and_version_still_go_to_stdout_with_status_0) {
  for (const char* args : {"--help", "replay --help", "--version"}) {
    SCOPED_TRACE(args);
    const CliResult out = run_stdout(args);
    EXPECT_EQ(out.status, 0) << out.output;
    EXPECT_FALSE(out.output.empty());
    EXPECT_TRUE(run_stderr(args).output.empty());
  }
  EXPECT_NE(run_stdout("replay --help").output.find("--strategy"), std::string::npos);
}

// --run-range without --cuda was refused while --cpu without it was accepted and meant nothing.
TEST(UsageErrors, record_cpu_without_cuda_is_refused_before_the_program_runs) {
  const std::string ran = (std::filesystem::temp_directory_path() /
                           ("alloclab-usage-ran-" + std::to_string(::getpid())))
                              .string();
  const CliResult r = alloclab::test::run_cli("record --cpu -o " + ran + ".alt -- touch " + ran);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_EQ(r.output.rfind("alloclab: error: record: --cpu needs --cuda", 0), 0u) << r.output;
  EXPECT_FALSE(std::filesystem::exists(ran));
  EXPECT_FALSE(std::filesystem::exists(ran + ".alt"));
}

}  // namespace
