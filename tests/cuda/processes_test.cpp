// Which processes the CUDA tracer traces and the names of their traces (no CUDA needed).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tracer/cuda/processes.hpp"

namespace alloclab::cuda {
namespace {

TEST(CudaProcesses, the_started_process_is_the_root_and_others_only_follow_on_request) {
  EXPECT_TRUE(decide_process(4242, 4242, false).traced);
  EXPECT_TRUE(decide_process(4242, 4242, false).root);
  EXPECT_TRUE(decide_process(0, 99, false).root);  // no owner: loaded outside `record`
  EXPECT_FALSE(decide_process(4242, 5000, false).traced);
  const ProcessDecision follower = decide_process(4242, 5000, true);
  EXPECT_TRUE(follower.traced);
  EXPECT_FALSE(follower.root);
}

TEST(CudaProcesses, the_image_says_root_follower_or_a_later_exec_of_the_root) {
  EXPECT_STREQ(image_label(decide_process(4242, 4242, true), false), "root");
  EXPECT_STREQ(image_label(decide_process(4242, 4242, true), true), "exec");
  EXPECT_STREQ(image_label(decide_process(4242, 5000, true), true), "follower");
  EXPECT_STREQ(image_label(decide_process(4242, 5000, true), false), "follower");
}

TEST(CudaProcesses, a_follower_names_its_trace_after_the_output_and_its_pid) {
  EXPECT_EQ(follower_trace_path("/t/run.alt", 5000, 0), "/t/run.5000.cuda.alt");
  EXPECT_EQ(follower_trace_path("/t/run.alt", 5000, 1), "/t/run.5000.2.cuda.alt");
  // With --cpu the root writes a part file; a follower's name is still the output's.
  EXPECT_EQ(follower_trace_path("/t/run.alt.cuda.part", 77, 0), "/t/run.77.cuda.alt");
  EXPECT_EQ(follower_trace_path("/t/trace", 77, 0), "/t/trace.77.cuda.alt");
  EXPECT_EQ(follower_trace_path(".alt", 7, 0), ".alt.7.cuda.alt");  // no stem left: kept
}

TEST(CudaProcesses, listing_appends_a_line_to_an_existing_list_only) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("alloclab-processes-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string list = (dir / "files").string();
  list_trace_file(list.c_str(), "/t/a.cuda.alt");  // no list made: nothing is created
  EXPECT_FALSE(std::filesystem::exists(list));
  std::ofstream(list).close();
  list_trace_file(list.c_str(), "/t/a.cuda.alt");
  list_trace_file(list.c_str(), "/t/b.cuda.alt");
  list_trace_file(nullptr, "/t/c.cuda.alt");
  list_trace_file("", "/t/c.cuda.alt");
  std::ifstream in(list);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "trace /t/a.cuda.alt\ntrace /t/b.cuda.alt\n");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace alloclab::cuda
