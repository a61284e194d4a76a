// Inputs that fuzzing (fuzz/) found to crash an importer; each file in tests/data/fuzz/<reader>/
// is the input as found. fuzz/findings.tsv lists them.
#include <gtest/gtest.h>

#include "alloclab/format/interchange/torch_snapshot.hpp"
#include "interchange_test_util.hpp"

namespace alloclab::test {
namespace {

std::string fuzz_file(const std::string& reader, const std::string& name) {
  return std::string(ALLOCLAB_TEST_DATA) + "/fuzz/" + reader + "/" + name;
}

// A number beyond a double's range made the JSON parser throw out_of_range, which the snapshot
// reader let through: no file name, and not the InputError every reader promises.
TEST(FuzzRegression, torch_snapshot_number_beyond_a_double_is_an_input_error) {
  const std::string path = fuzz_file("torch_snapshot", "address_beyond_a_double.json");
  const std::string message = input_error([&] { (void)read_torch_snapshot_json(path); });
  EXPECT_NE(message.find(path + ": not valid JSON"), std::string::npos) << message;
  EXPECT_NE(message.find("number overflow"), std::string::npos) << message;
}

TEST(FuzzRegression, torch_snapshot_1e999_anywhere_is_an_input_error) {
  const std::string message = input_error([] {
    (void)parse_torch_snapshot_json(R"({"device_traces": [[{"action": "alloc", "size": 1e999}]]})",
                                    "s.json");
  });
  EXPECT_NE(message.find("s.json: not valid JSON"), std::string::npos) << message;
}

}  // namespace
}  // namespace alloclab::test
