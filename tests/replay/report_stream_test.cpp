// The report a replay writes: write_report (run lists made one entry at a time) must give the
// bytes `out << std::setw(1) << make_report(...)` gives, and a replay of a streamed load the
// same report as one of the whole trace.
#include <gtest/gtest.h>

#include <filesystem>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "alloclab/format/alt/alt.hpp"
#include "alloclab/format/alt/stream_load.hpp"
#include "alloclab/format/synthetic.hpp"
#include "alloclab/replay/report.hpp"
#include "alloclab/replay/sim_replay.hpp"

namespace alloclab {
namespace {

const std::vector<std::string> kSpecs = {"passthrough",          "exact",        "best-fit",
                                         "fifo-shrink:max=1MiB", "per-run-pool", "pytorch"};

std::string whole_document(const TraceSummary& summary, const std::vector<StrategyResult>& results,
                           const ReportContext& context) {
  std::ostringstream out;
  out << std::setw(1) << make_report(summary, results, context) << '\n';
  return out.str();
}

std::string streamed_document(const TraceSummary& summary,
                              const std::vector<StrategyResult>& results,
                              const ReportContext& context) {
  std::ostringstream out;
  write_report(out, summary, results, context);
  out << '\n';
  return out.str();
}

std::vector<StrategyResult> replay_all(const ResolvedTrace& trace) {
  std::vector<StrategyResult> results;
  for (const std::string& spec : kSpecs) {
    StrategyResult r = replay_sim(trace, spec).result;
    r.wall_seconds = 0;  // the only number that differs from one replay to the next
    results.push_back(std::move(r));
  }
  return results;
}

class TempAlt {
 public:
  explicit TempAlt(const std::string& name)
      : path_((std::filesystem::temp_directory_path() /
               ("alloclab-test-" + std::to_string(::getpid()) + "-" + name))
                  .string()) {}
  ~TempAlt() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(ReportStream, write_report_is_byte_identical_to_the_whole_document) {
  SyntheticOptions options;
  options.runs = 25;
  const Trace trace = generate_synthetic(options);
  const ResolvedTrace resolved = resolve(trace);
  TraceSummary summary = summarize(trace, resolved);
  summary.source = "a \"quoted\" name with \xc3\xa9 and a \\ backslash";
  std::vector<StrategyResult> results = replay_all(resolved);
  results[1].runs[0].label = "tab\there, newline\nthere";
  ReportContext context;
  context.command_line = "alloclab replay x.alt -s exact";
  EXPECT_EQ(streamed_document(summary, results, context),
            whole_document(summary, results, context));

  context.mode = "real";
  context.upstream = "host-malloc";
  context.partial = true;
  EXPECT_EQ(streamed_document(summary, results, context),
            whole_document(summary, results, context));
}

TEST(ReportStream, empty_lists_are_written_as_the_whole_document_writes_them) {
  const ReportContext context;
  EXPECT_EQ(streamed_document(TraceSummary{}, {}, context),
            whole_document(TraceSummary{}, {}, context));
  StrategyResult no_runs;
  no_runs.strategy = "exact";
  EXPECT_EQ(streamed_document(TraceSummary{}, {no_runs}, context),
            whole_document(TraceSummary{}, {no_runs}, context));
}

// What `alloclab replay --json` writes for a .alt trace, before (read_alt, resolve, summarize,
// make_report) and after (load_alt_resolved, write_report) streaming.
TEST(ReportStream, replay_of_a_streamed_load_reports_the_same_bytes) {
  for (const std::string& name : synthetic_shape_names()) {
    SCOPED_TRACE(name);
    SyntheticOptions options;
    options.shape = *parse_synthetic_shape(name);
    options.min_events = 20000;
    TempAlt file(name + ".alt");
    AltWriteOptions write_options;
    write_options.events_per_chunk = 1000;
    write_alt(generate_synthetic(options), file.path(), write_options);

    AltLoadStats whole_stats;
    const Trace trace = read_alt(file.path(), &whole_stats);
    const ResolvedTrace whole = resolve(trace);
    TraceSummary whole_summary = summarize(trace, whole);
    whole_summary.source = file.path();
    whole_summary.file_bytes = whole_stats.file_bytes;

    AltLoadStats streamed_stats;
    ResolvedLoad streamed = load_alt_resolved(file.path(), &streamed_stats, 3000);
    streamed.summary.source = file.path();
    streamed.summary.file_bytes = streamed_stats.file_bytes;

    const ReportContext context;
    EXPECT_EQ(streamed_document(streamed.summary, replay_all(streamed.resolved), context),
              whole_document(whole_summary, replay_all(whole), context));
  }
}

}  // namespace
}  // namespace alloclab
