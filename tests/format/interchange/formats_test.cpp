// Choosing a reader or writer by format name, file name and content.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "alloclab/format/formats.hpp"
#include "format/interchange/text_io.hpp"
#include "interchange_test_util.hpp"

namespace alloclab {
namespace {

using test::data_file;
using test::input_error;

TEST(Formats, parse_format_accepts_each_name) {
  EXPECT_EQ(parse_format("alt"), TraceFormat::alt);
  EXPECT_EQ(parse_format("csv"), TraceFormat::csv);
  EXPECT_EQ(parse_format("rmm"), TraceFormat::rmm);
  EXPECT_EQ(parse_format("torch"), TraceFormat::torch_snapshot);
  EXPECT_EQ(parse_format("chrome"), TraceFormat::chrome);
  EXPECT_EQ(parse_format("perfetto"), TraceFormat::chrome);
  EXPECT_EQ(parse_format("CSV"), TraceFormat::csv);
  EXPECT_EQ(parse_format("xml"), std::nullopt);
  EXPECT_EQ(parse_format(""), std::nullopt);
}

TEST(Formats, format_from_path_goes_by_extension) {
  EXPECT_EQ(format_from_path("new.alt"), TraceFormat::alt);
  EXPECT_EQ(format_from_path(data_file("strategies_example.csv")), TraceFormat::csv);
  EXPECT_EQ(format_from_path(data_file("strategies_example.csv.gz")), TraceFormat::csv);
  EXPECT_EQ(format_from_path("x.rmm.csv"), TraceFormat::rmm);
  EXPECT_EQ(format_from_path("x.rmm.csv.gz"), TraceFormat::rmm);
  EXPECT_EQ(format_from_path("x.log"), TraceFormat::rmm);
  EXPECT_EQ(format_from_path("X.CSV"), TraceFormat::csv);
}

TEST(Formats, a_csv_with_rmm_header_is_an_rmm_log) {
  EXPECT_EQ(format_from_path(data_file("rmm_failure.csv")), TraceFormat::rmm);
  EXPECT_EQ(format_from_path(data_file("rmm_pandas_index.csv")), TraceFormat::rmm);
}

TEST(Formats, json_is_a_snapshot_when_it_has_device_traces) {
  EXPECT_EQ(format_from_path(data_file("snapshot_basic.json")), TraceFormat::torch_snapshot);
  EXPECT_EQ(format_from_path(data_file("not_a_snapshot.json")), TraceFormat::chrome);
  EXPECT_EQ(output_format_from_path(data_file("snapshot_basic.json")), TraceFormat::chrome);
}

// `_dump_snapshot()` writes a pickle under whatever name the user gives it.
TEST(Formats, a_snapshot_pickle_is_told_by_its_name_or_its_first_byte) {
  EXPECT_EQ(format_from_path("snap.pickle"), TraceFormat::torch_snapshot);
  EXPECT_EQ(format_from_path("snap.pkl"), TraceFormat::torch_snapshot);
  EXPECT_EQ(format_from_path("snap.pickle.gz"), TraceFormat::torch_snapshot);
  const std::string pickle = test::file_text(data_file("snapshot_basic.p4.pickle"));
  for (const std::string name : {"snapshot", "snapshot.dump", "snapshot.json"}) {
    SCOPED_TRACE(name);
    const std::string path = test::temp_file(name);
    std::ofstream(path, std::ios::binary) << pickle;
    EXPECT_EQ(format_from_path(path), TraceFormat::torch_snapshot);
    EXPECT_EQ(read_trace(path).size(), 12u);
    std::remove(path.c_str());
  }
  // Compressed, under a name that says so or not.
  const std::string gz = test::temp_file("snapshot.pickle.gz");
  {
    interchange_detail::OutputFile out(gz);
    out.stream() << pickle;
    out.close();
  }
  EXPECT_EQ(read_trace(gz).size(), 12u);
  const std::string bare = test::temp_file("compressed");
  std::filesystem::copy_file(gz, bare);
  EXPECT_EQ(format_from_path(bare), TraceFormat::torch_snapshot);
  EXPECT_EQ(read_trace(bare).size(), 12u);
  std::remove(gz.c_str());
  std::remove(bare.c_str());
}

TEST(Formats, unknown_extension_is_an_error_listing_the_accepted_ones) {
  EXPECT_EQ(input_error([] { format_from_path("trace.txt"); }),
            "trace.txt: cannot tell the trace format from the file name (accepted: .alt, .csv, "
            ".rmm.csv, .log, .json, .pickle, .pkl (all but .alt also with .gz); or name the "
            "format)");
  EXPECT_NE(input_error([] { output_format_from_path("x.log"); }), "(no InputError)");
}

TEST(Formats, read_trace_picks_each_reader) {
  EXPECT_EQ(read_trace(data_file("strategies_example.csv")).size(), 4u);
  EXPECT_EQ(read_trace(data_file("rmm_midnight.log")).size(), 6u);
  EXPECT_EQ(read_trace(data_file("rmm_failure.csv")).metadata["rmm"]["allocate_failures"], 2);
  EXPECT_EQ(read_trace(data_file("snapshot_basic.json")).size(), 12u);
  // An explicit format wins over the name.
  EXPECT_EQ(read_trace(data_file("rmm_failure.csv"), TraceFormat::rmm).size(), 4u);
}

TEST(Formats, reading_json_that_is_not_a_snapshot_says_so) {
  const std::string path = data_file("not_a_snapshot.json");
  const std::string message = input_error([&] { read_trace(path); });
  EXPECT_EQ(message.rfind(path + ": not a PyTorch memory snapshot", 0), 0u) << message;
  EXPECT_EQ(input_error([&] { read_trace(path, TraceFormat::chrome); }),
            path +
                ": Chrome trace JSON is an export format; alloclab cannot read it back: read the "
                "trace it was made from (.alt, .csv)");
}

TEST(Formats, write_trace_round_trips_csv_and_alt) {
  const Trace original = read_trace(data_file("all_columns.csv"));
  for (const char* name : {"rt.csv", "rt.csv.gz", "rt.alt"}) {
    const std::string path = test::temp_file(name);
    write_trace(original, path);
    EXPECT_EQ(read_trace(path), original) << name;
  }
}

TEST(Formats, an_alt_file_is_recognised_by_content_whatever_its_name) {
  const std::string path = test::temp_file("trace.bin");
  write_trace(read_trace(data_file("strategies_example.csv")), path, TraceFormat::alt);
  EXPECT_EQ(format_from_path(path), TraceFormat::alt);
}

TEST(Formats, write_trace_writes_chrome_json) {
  const std::string path = test::temp_file("out.json");
  write_trace(read_trace(data_file("chrome_case.csv")), path);
  EXPECT_EQ(nlohmann::json::parse(test::file_text(path))["displayTimeUnit"], "ns");
  // The export is not mistaken for a snapshot when read back.
  EXPECT_EQ(format_from_path(path), TraceFormat::chrome);
}

TEST(Formats, import_only_formats_cannot_be_written) {
  EXPECT_EQ(input_error([] { write_trace(Trace(), "x.log", TraceFormat::rmm); }),
            "x.log: alloclab reads rmm files but cannot write them (write alt, csv or chrome)");
  EXPECT_EQ(input_error([] { write_trace(Trace(), "x.json", TraceFormat::torch_snapshot); }),
            "x.json: alloclab reads torch files but cannot write them (write alt, csv or chrome)");
}

}  // namespace
}  // namespace alloclab
