// What the CLI prints besides its numbers: notes, tables, plurals and help text, read as a user
// reads them.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <unistd.h>

#include "cli_test_util.hpp"

namespace alloclab::test {
namespace {

std::string tiny() {
  return std::string(ALLOCLAB_TRACES_DIR) + "/tiny.csv";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The note says a -j the user gave is ignored; with no -j (the default, all cores) there is
// nothing to ignore, and -j 1 is what happens anyway.
TEST(Messages, a_real_replay_notes_an_ignored_j_only_when_one_was_given) {
  const std::string replay = "replay " + tiny() + " -s exact -s passthrough --upstream host-malloc";
  const std::string note = "run one at a time (-j ignored)";
  for (const std::string& args : {replay, replay + " -j 1", replay + " --jobs=1"}) {
    const CliResult r = run_cli(args);
    ASSERT_EQ(r.status, 0) << args << "\n" << r.output;
    EXPECT_FALSE(contains(r.output, note)) << args << "\n" << r.output;
  }
  for (const std::string& args : {replay + " -j 4", replay + " -j 0"}) {
    const CliResult r = run_cli(args);
    ASSERT_EQ(r.status, 0) << args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "alloclab: note: replays on host-malloc " + note))
        << args << "\n"
        << r.output;
  }
}

}  // namespace
}  // namespace alloclab::test
