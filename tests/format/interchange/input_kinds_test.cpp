// Text-format input that is not an ordinary file: a directory is refused by name, endless input
// (/dev/zero) meets a bound and is refused with its byte offset, a pipe is read without a look
// ahead that would consume it, and alloclab's own Chrome export is recognised for what it is.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "alloclab/format/formats.hpp"
#include "alloclab/format/interchange/chrome_trace.hpp"
#include "alloclab/format/interchange/csv.hpp"
#include "alloclab/format/interchange/rmm_log.hpp"
#include "alloclab/format/interchange/torch_snapshot.hpp"
#include "format/interchange/text_io.hpp"
#include "interchange_test_util.hpp"

namespace alloclab {
namespace {

using test::data_file;
using test::input_error;
using test::temp_file;

TEST(InputKinds, a_directory_is_refused_by_name_in_every_reader) {
  const std::string dir = temp_file("trace.csv");
  std::filesystem::create_directories(dir);
  const std::string expected = dir + ": is a directory";
  EXPECT_EQ(input_error([&] { read_csv(dir); }), expected);
  EXPECT_EQ(input_error([&] { read_rmm_log(dir); }), expected);
  EXPECT_EQ(input_error([&] { read_torch_snapshot_json(dir); }), expected);
  EXPECT_EQ(input_error([&] { read_trace(dir); }), expected);
  EXPECT_EQ(input_error([&] { format_from_path(dir); }), expected);
  for (TraceFormat f :
       {TraceFormat::alt, TraceFormat::csv, TraceFormat::rmm, TraceFormat::torch_snapshot})
    EXPECT_EQ(input_error([&] { read_trace(dir, f); }), expected) << to_string(f);
  std::filesystem::remove(dir);
}

// /dev/zero never ends a line: the CSV and RMM readers grew one line until memory ran out.
TEST(InputKinds, an_endless_line_is_refused_at_the_record_bound) {
  EXPECT_EQ(input_error([] { read_csv("/dev/zero"); }),
            "/dev/zero:1: a line longer than 16 MiB (from byte 0; not a text file?)");
  EXPECT_EQ(input_error([] { read_rmm_log("/dev/zero"); }),
            "/dev/zero:1: a line longer than 16 MiB (from byte 0; not a text file?)");
}

// The bound holds at any line, and a line just under it is read.
TEST(InputKinds, a_line_over_16_mib_is_refused_with_its_line_and_byte_offset) {
  const std::string path = temp_file("long-label.csv");
  const std::string header = "action,address,size,label\n";
  const std::string row = "alloc,0x10,8,\n";
  {
    std::ofstream out(path, std::ios::binary);
    out << header << row << "mark,,," << std::string(interchange_detail::max_record_bytes, 'x')
        << "\n";
  }
  EXPECT_EQ(input_error([&] { read_csv(path); }),
            path + ":3: a line longer than 16 MiB (from byte " +
                std::to_string(header.size() + row.size()) + "; not a text file?)");
  {
    std::ofstream out(path, std::ios::binary);
    out << header << "mark,,,"
        << std::string(interchange_detail::max_record_bytes - std::string("mark,,,").size(), 'x')
        << "\n"
        << row;
  }
  const Trace t = read_csv(path);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t.label(0).size(), interchange_detail::max_record_bytes - 7);
  std::filesystem::remove(path);
}

// An unterminated quote turns the rest of the file into one field: bounded the same way.
TEST(InputKinds, a_quoted_field_running_past_16_mib_is_refused) {
  const std::string path = temp_file("open-quote.csv");
  {
    std::ofstream out(path, std::ios::binary);
    out << "action,address,size,label\nmark,,,\"never closed\n";
    const std::string line(1023, 'y');
    for (std::size_t n = 0; n < (interchange_detail::max_record_bytes >> 10) + 1; ++n)
      out << line << '\n';
  }
  EXPECT_EQ(input_error([&] { read_csv(path); }),
            path +
                ":2: a quoted field runs on for more than 16 MiB (from byte 26; a missing "
                "closing '\"'?)");
  std::filesystem::remove(path);
}

TEST(InputKinds, json_that_no_snapshot_can_be_is_refused_with_its_byte_offset) {
  EXPECT_EQ(input_error([] { read_torch_snapshot_json("/dev/zero"); }),
            "/dev/zero: byte 0 is 0x00, which JSON text never holds (a binary file?)");
  const std::string path = temp_file("spaces.json");
  std::ofstream(path) << std::string(3000, ' ') << "{}";
  EXPECT_EQ(input_error([&] { interchange_detail::read_json_text(path, 1000); }),
            path +
                ": more than 1000 bytes of JSON (at byte 1000), more than any memory snapshot "
                "holds; not one document?");
  EXPECT_EQ(interchange_detail::read_json_text(path, 4000).size(), 3002u);
  std::filesystem::remove(path);
}

// Reading a pipe's first lines to tell RMM from CSV (or a snapshot from a Chrome trace) took
// them from the reader. A pipe is read once: by its name, or by the format the user names.
TEST(InputKinds, a_pipe_is_told_by_its_name_and_never_looked_into) {
  const std::string dir = temp_file("fifos");
  std::filesystem::create_directories(dir);
  const std::string csv = dir + "/log.csv", json = dir + "/s.json", bare = dir + "/trace",
                    pickle = dir + "/s.pickle";
  for (const std::string& p : {csv, json, bare, pickle}) ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
  // No writer: a look inside would block here.
  EXPECT_EQ(format_from_path(csv), TraceFormat::csv);
  EXPECT_EQ(format_from_path(json), TraceFormat::torch_snapshot);
  EXPECT_EQ(format_from_path(pickle), TraceFormat::torch_snapshot);
  const std::string message = input_error([&] { format_from_path(bare); });
  EXPECT_NE(message.find(bare + ": a pipe or device"), std::string::npos) << message;
  EXPECT_NE(message.find("name the format"), std::string::npos) << message;
  // An RMM log through a pipe keeps its header when its format is named.
  std::thread writer([&] {
    std::ofstream(csv) << "Thread,Time,Action,Pointer,Size,Stream\n"
                       << "1,09:00:00.000001,allocate,0x10,64,0x0\n";
  });
  EXPECT_EQ(read_trace(csv, TraceFormat::rmm).size(), 1u);
  writer.join();
  // A snapshot's pickle through a pipe: its first byte looked at without being taken.
  std::thread pickle_writer([&] {
    std::ofstream(pickle, std::ios::binary)
        << test::file_text(data_file("snapshot_basic.p2.pickle"));
  });
  EXPECT_EQ(read_trace(pickle).size(), 12u);
  pickle_writer.join();
  std::filesystem::remove_all(dir);
}

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
