// What `alloclab info` prints, as library text: the summary's lines, the anomalies listed and
// counted, runs cut to a readable table, devices apart, and the call-stack sites.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "alloclab/format/resolve.hpp"
#include "alloclab/format/stacks.hpp"
#include "alloclab/format/summary.hpp"
#include "alloclab/format/summary_text.hpp"
#include "alloclab/format/text_table.hpp"
#include "trace_test_util.hpp"

namespace alloclab {
namespace {

using test::alloc_event;
using test::free_event;
using test::make_trace;
using test::marker;

TraceSummary summary_of(const Trace& trace, const std::string& source = "t.csv") {
  TraceSummary s = summarize(trace, resolve(trace));
  s.source = source;
  return s;
}

bool has_line(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

TEST(SummaryText, starts_with_the_trace_and_its_event_counts) {
  const Trace trace = make_trace({marker(Op::run_begin, "step", 100), alloc_event(0x10, 4096, 110),
                                  free_event(0x10, 150), marker(Op::run_end, "", 200)});
  const std::string text = summary_text(summary_of(trace), 5);
  EXPECT_EQ(text.rfind("trace        t.csv\n"
                       "events       4 (alloc 1, free 1, run_begin 1, run_end 1, mark 0)\n",
                       0),
            0u)
      << text;
  EXPECT_TRUE(has_line(text, "allocations  1   frees 1   leaks 0 (0 B)")) << text;
  EXPECT_TRUE(has_line(text, "peak live    4.00 KiB at +10 ns")) << text;
  EXPECT_TRUE(has_line(text, "runs         1")) << text;
  EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(text.find("on disk"), std::string::npos) << "no file size was given";
}

TEST(SummaryText, a_peak_of_nothing_has_no_time) {
  const Trace trace = make_trace({marker(Op::mark, "only a mark", 50)});
  EXPECT_TRUE(has_line(summary_text(summary_of(trace), 5), "peak live    0 B (nothing was live)"));
}

TEST(SummaryText, lists_the_first_anomalies_asked_for_and_counts_the_rest) {
  std::vector<Event> events;
  for (std::uint64_t k = 0; k < 7; ++k) events.push_back(free_event(0x9000 + k, 10 * k));
  const TraceSummary s = summary_of(make_trace(events));
  const std::string two = summary_text(s, 2);
  EXPECT_NE(two.find("  first 2 (event: its index in the trace from 0"), std::string::npos) << two;
  EXPECT_NE(two.find("  event 1  +10 ns  free of unknown address  0x9001 on cpu, thread 0\n"),
            std::string::npos)
      << two;
  EXPECT_TRUE(has_line(two,
                       "  ... 5 more (--anomalies N lists up to the first 1000, as --json "
                       "does)"))
      << two;
  const std::string none = summary_text(s, 0);
  EXPECT_EQ(none.find("first "), std::string::npos) << none;
  EXPECT_EQ(none.find("more (--anomalies"), std::string::npos) << none;
}

TEST(SummaryText, lists_twenty_runs_and_cuts_long_labels) {
  std::vector<Event> events;
  const std::string long_label(40, 'x');
  for (std::uint64_t k = 0; k < 23; ++k) {
    events.push_back(marker(Op::run_begin, k == 0 ? long_label : "r" + std::to_string(k), 100 * k));
    events.push_back(marker(Op::run_end, "", 100 * k + 50));
  }
  const std::string text = summary_text(summary_of(make_trace(events)), 5);
  EXPECT_TRUE(has_line(text, "runs         23")) << text;
  EXPECT_NE(text.find(std::string(28, 'x') + " "), std::string::npos) << text;
  EXPECT_EQ(text.find(std::string(29, 'x')), std::string::npos) << text;
  EXPECT_NE(text.find("  19  r19 "), std::string::npos) << text;
  EXPECT_EQ(text.find(" r20 "), std::string::npos) << text;
  EXPECT_TRUE(has_line(text, "  ... 3 more runs (see --json)")) << text;
}

TEST(SummaryText, a_trace_without_run_markers_says_it_is_one_run) {
  const Trace trace = make_trace({alloc_event(0x10, 64, 1), free_event(0x10, 2)});
  const std::string text = summary_text(summary_of(trace), 5);
  EXPECT_NE(text.find("runs         1 (no run markers: the whole trace is one run)\n"),
            std::string::npos)
      << text;
}

TEST(SummaryText, peaks_by_device_only_when_two_devices_allocated) {
  const Trace host_only = make_trace({alloc_event(0x10, 64, 1), free_event(0x10, 2)});
  EXPECT_EQ(summary_text(summary_of(host_only), 5).find("  cpu "), std::string::npos);
  const Trace both = make_trace({alloc_event(0x10, 64, 1), alloc_event(0x20, 1 << 20, 2, 0),
                                 free_event(0x10, 3), free_event(0x20, 4, 0)});
  const std::string text = summary_text(summary_of(both), 5);
  EXPECT_NE(text.find("\n  cpu        1 allocation, 64 B requested, peak live 64 B at +0 ns\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\n  cuda:0     1 allocation, 1.00 MiB requested, peak live 1.00 MiB at "
                      "+1 ns\n"),
            std::string::npos)
      << text;
}

TEST(SummaryText, load_warnings_end_the_text) {
  TraceSummary s = summary_of(make_trace({alloc_event(0x10, 64, 1)}));
  s.warnings = {"t.alt@10, chunk 3: truncated chunk"};
  s.file_bytes = 1000;
  const std::string text = summary_text(s, 5);
  EXPECT_TRUE(text.ends_with("\nwarning      t.alt@10, chunk 3: truncated chunk\n")) << text;
  EXPECT_TRUE(has_line(text, "on disk      1000 B, 1000.00 bytes/event")) << text;
}

Trace trace_with_stacks() {
  Trace trace = make_trace({alloc_event(0x10, 100, 1), alloc_event(0x20, 100, 2),
                            alloc_event(0x30, 5000, 3), alloc_event(0x40, 7, 4)});
  const std::uint32_t main_frame = trace.add_frame({0x400100, "main", "/usr/bin/prog"});
  const std::uint32_t helper = trace.add_frame({0x7f0020, "", "/lib/libhelper.so"});
  const std::uint32_t often = trace.add_stack({helper, main_frame});
  const std::uint32_t big = trace.add_stack({main_frame});
  trace.set_stack_id(0, often);
  trace.set_stack_id(1, often);
  trace.set_stack_id(2, big);
  return trace;
}

TEST(StackSitesText, a_trace_without_stacks_says_how_to_record_them) {
  const Trace trace = make_trace({alloc_event(0x10, 64, 1)});
  EXPECT_EQ(stack_sites_text(trace, top_stack_sites(trace, 10)),
            "\nno call stacks in this trace (record with `alloclab record --stacks N`)\n");
}

TEST(StackSitesText, lists_the_top_sites_by_count_and_by_bytes_with_their_frames) {
  const Trace trace = trace_with_stacks();
  EXPECT_EQ(stack_sites_text(trace, top_stack_sites(trace, 1)),
            "\ncall stacks  3 allocations with a stack, 2 distinct stacks\n"
            "\ntop allocation stacks by count\n"
            "  2 allocations, 200 B\n"
            "      0x7f0020 (libhelper.so)\n"
            "      main (prog)\n"
            "\ntop allocation stacks by bytes\n"
            "  1 allocation, 4.88 KiB\n"
            "      main (prog)\n");
}

TEST(StackSitesText, json_lists_each_site_with_its_frames) {
  const Trace trace = trace_with_stacks();
  const nlohmann::json j = stack_sites_json(trace, top_stack_sites(trace, 10));
  EXPECT_EQ(j["allocations_with_stack"], 3);
  EXPECT_EQ(j["distinct_stacks"], 2);
  ASSERT_EQ(j["top_stacks_by_count"].size(), 2u);
  const nlohmann::json& first = j["top_stacks_by_count"][0];
  EXPECT_EQ(first["count"], 2);
  EXPECT_EQ(first["bytes"], 200);
  ASSERT_EQ(first["frames"].size(), 2u);
  EXPECT_EQ(first["frames"][0], (nlohmann::json{{"address", 0x7f0020},
                                                {"function", ""},
                                                {"module", "/lib/libhelper.so"},
                                                {"file", ""},
                                                {"line", 0}}));
  EXPECT_EQ(j["top_stacks_by_bytes"][0]["bytes"], 5000);
}

TEST(StringPrintf, formats_like_printf_at_any_length) {
  EXPECT_EQ(string_printf("%-6s|%5.2f%%|%3d", "ab", 12.345, 7), "ab    |12.35%|  7");
  const std::string long_text(10000, 'y');
  EXPECT_EQ(string_printf("<%s>", long_text.c_str()), "<" + long_text + ">");
  EXPECT_EQ(string_printf("%s", ""), "");
}

}  // namespace
}  // namespace alloclab
