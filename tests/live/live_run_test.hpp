#pragma once
// The fixture of the tests that run programs under `alloclab run`: a folder of its own per test
// (made empty before it, removed after it), the paths of files in it, and reports read back as
// JSON. The live libraries are built as the rest is, so a sanitizer build cannot put them into
// other programs: those tests skip there.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/preload/sanitizer_skips.hpp"

namespace alloclab::test {

class LiveRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ALLOCLAB_SKIP_UNDER_ASAN();
    ALLOCLAB_SKIP_UNDER_TSAN("the live libraries run the strategy uninstrumented code cannot see");
    const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("alloclab_live_" + std::to_string(getpid()) + "_" + test->test_suite_name() + "_" +
            test->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  static nlohmann::json read_json(const std::string& file) {
    std::ifstream in(file);
    return nlohmann::json::parse(in);
  }
  // The contract's counters of a live report's result and of the replay of the same run's trace
  // (`run --record`): equal, one by one.
  static void expect_same_counters(const nlohmann::json& live, const nlohmann::json& replayed) {
    for (const char* key :
         {"requests", "hits", "upstream_allocs", "upstream_frees", "evictions", "peak_live_bytes",
          "peak_reserved_bytes", "final_cached_bytes", "slack_bytes"})
      EXPECT_EQ(live[key], replayed[key]) << key;
  }
  std::filesystem::path dir_;
};

}  // namespace alloclab::test
