// Chrome trace-event export, checked against a hand-worked case (tests/data/interchange/
// chrome_case.csv): cuda:0 live bytes go 100, 130, 30; cpu goes 50, 0.
#include <gtest/gtest.h>

#include <sstream>
#include <vector>

#include "alloclab/format/interchange/chrome_trace.hpp"
#include "alloclab/format/interchange/csv.hpp"
#include "interchange_test_util.hpp"

namespace alloclab {
namespace {

using nlohmann::json;

json export_case() {
  std::ostringstream out;
  write_chrome_trace(read_csv(test::data_file("chrome_case.csv")), out);
  return json::parse(out.str());  // throws (failing the test) if it is not JSON
}

std::vector<json> events_named(const json& doc, const std::string& name) {
  std::vector<json> found;
  for (const json& e : doc["traceEvents"])
    if (e["name"] == name) found.push_back(e);
  return found;
}

TEST(ChromeTrace, output_is_a_trace_event_object_in_nanosecond_display) {
  const json doc = export_case();
  ASSERT_TRUE(doc["traceEvents"].is_array());
  EXPECT_EQ(doc["displayTimeUnit"], "ns");
  EXPECT_EQ(doc["otherData"]["time_origin_ns"], 1000);
  for (const json& e : doc["traceEvents"]) {
    EXPECT_TRUE(e.contains("ph")) << e;
    EXPECT_EQ(e["pid"], 1) << e;
  }
}

TEST(ChromeTrace, live_bytes_counters_follow_allocations_per_device) {
  const json doc = export_case();
  const auto gpu = events_named(doc, "live bytes cuda:0");
  ASSERT_EQ(gpu.size(), 3u);
  const double gpu_ts[] = {1.0, 3.0, 4.0};
  const std::uint64_t gpu_bytes[] = {100, 130, 30};
  for (std::size_t i = 0; i < gpu.size(); ++i) {
    EXPECT_EQ(gpu[i]["ph"], "C");
    EXPECT_DOUBLE_EQ(gpu[i]["ts"].get<double>(), gpu_ts[i]);
    EXPECT_EQ(gpu[i]["args"]["bytes"], gpu_bytes[i]);
  }
  const auto cpu = events_named(doc, "live bytes cpu");
  ASSERT_EQ(cpu.size(), 2u);
  EXPECT_EQ(cpu[0]["args"]["bytes"], 50);
  EXPECT_DOUBLE_EQ(cpu[0]["ts"].get<double>(), 2.0);
  EXPECT_EQ(cpu[1]["args"]["bytes"], 0);
  EXPECT_DOUBLE_EQ(cpu[1]["ts"].get<double>(), 5.0);
}

TEST(ChromeTrace, segments_get_their_own_reserved_bytes_counter) {
  const auto reserved = events_named(export_case(), "reserved bytes cuda:0");
  ASSERT_EQ(reserved.size(), 1u);
  EXPECT_EQ(reserved[0]["args"]["bytes"], 4096);
  EXPECT_DOUBLE_EQ(reserved[0]["ts"].get<double>(), 1.5);
}

TEST(ChromeTrace, runs_are_complete_slices_in_microseconds) {
  const auto runs = events_named(export_case(), "step");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0]["ph"], "X");
  EXPECT_DOUBLE_EQ(runs[0]["ts"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(runs[0]["dur"].get<double>(), 6.0);
}

TEST(ChromeTrace, unlabelled_runs_are_named_by_index) {
  Trace trace;
  for (std::uint64_t t : {0, 1500, 2000, 2250}) {
    Event e;
    e.op = t % 1000 == 0 ? Op::run_begin : Op::run_end;
    e.time_ns = t;
    trace.push_back(e);
  }
  std::ostringstream out;
  write_chrome_trace(trace, out);
  const json doc = json::parse(out.str());
  const auto second = events_named(doc, "run 1");
  ASSERT_EQ(second.size(), 1u);
  EXPECT_DOUBLE_EQ(second[0]["ts"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(second[0]["dur"].get<double>(), 0.25);
  EXPECT_EQ(events_named(doc, "run 0").size(), 1u);
}

TEST(ChromeTrace, marks_are_instant_events_on_their_thread) {
  const json doc = export_case();
  const auto marks = events_named(doc, "checkpoint");
  ASSERT_EQ(marks.size(), 1u);
  EXPECT_EQ(marks[0]["ph"], "i");
  EXPECT_DOUBLE_EQ(marks[0]["ts"].get<double>(), 4.5);
  const int tid = marks[0]["tid"];
  bool named = false;
  for (const json& e : events_named(doc, "thread_name"))
    named = named || (e["tid"] == tid && e["args"]["name"] == "thread 2");
  EXPECT_TRUE(named);
}

TEST(ChromeTrace, names_the_process_after_the_source_file) {
  const auto names = events_named(export_case(), "process_name");
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(names[0]["ph"], "M");
  EXPECT_EQ(names[0]["args"]["name"], "alloclab trace " + test::data_file("chrome_case.csv"));
}

TEST(ChromeTrace, an_empty_trace_is_still_valid_json) {
  std::ostringstream out;
  write_chrome_trace(Trace(), out);
  const json doc = json::parse(out.str());
  EXPECT_TRUE(doc["traceEvents"].is_array());
}

TEST(ChromeTrace, invalid_utf8_in_labels_is_replaced_not_fatal) {
  Trace trace;
  Event mark;
  mark.op = Op::mark;
  mark.label = "bad \xff byte";
  trace.push_back(mark);
  std::ostringstream out;
  write_chrome_trace(trace, out);
  EXPECT_TRUE(json::accept(out.str()));
}

TEST(ChromeTrace, writes_to_a_file) {
  const std::string path = test::temp_file("case.json");
  write_chrome_trace(read_csv(test::data_file("chrome_case.csv")), path);
  EXPECT_EQ(json::parse(test::file_text(path))["displayTimeUnit"], "ns");
}

}  // namespace
}  // namespace alloclab
