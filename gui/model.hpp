#pragma once
// What the GUI shows: the traces and reports the user opened or produced, and the background
// jobs (loads, replays) that fill it. Views read the model; only the UI thread changes it, when
// a finished job hands over its result (Model::poll_jobs), so views never see half-built data.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "alloclab/format/resolve.hpp"
#include "alloclab/replay/metrics.hpp"
#include "lod.hpp"

namespace alloclab::gui {

// A trace, resolved, with the live bytes after every operation as a LOD pyramid (x: ns since
// the trace's first event).
struct TraceDoc {
  std::string path;
  ResolvedTrace resolved;
  nlohmann::json summary;  // exactly `alloclab info --json`
  std::uint64_t first_time_ns = 0;
  LodPyramid live;
  // What the load found wrong (damaged chunks, events lost, times going back), as `alloclab`
  // prints it on stderr: a trace that lost events must not look complete.
  std::vector<std::string> warnings;
  // A trace with call stacks keeps its events (the Flame view replays it per site) and the stack
  // of each allocation id; null and empty otherwise.
  std::shared_ptr<const Trace> stack_trace;
  std::vector<std::uint32_t> alloc_stack;
};

// A report: opened from a file, or produced here by replaying a trace.
struct ReportDoc {
  std::string name;  // file name, or "TRACE (replayed here)"
  nlohmann::json json;
  std::vector<StrategyResult> results;
  std::string mode;  // "sim" or "real"
  std::uint64_t first_time_ns = 0;
  std::shared_ptr<const TraceDoc> trace;  // the trace it came from, when loaded here
  std::vector<LodPyramid> reserved;       // per result, from its series (x as in TraceDoc::live)
  std::vector<LodPyramid> live;           // per result, from its series
  bool is_sweep() const { return json.contains("sweep"); }
};

// The live bytes after every operation of a resolved trace (x = op time - first_time_ns); with
// `stacks`, of the allocations whose stack id (alloc_stack, by allocation id) it marks only.
LodPyramid live_bytes_pyramid(const ResolvedTrace& trace, std::uint64_t first_time_ns,
                              const std::vector<std::uint32_t>* alloc_stack = nullptr,
                              const std::vector<bool>* stacks = nullptr);
// Builds a TraceDoc (reads and resolves the file). Throws InputError and friends.
std::shared_ptr<TraceDoc> load_trace_doc(const std::string& path);
// Builds a ReportDoc from report JSON. Throws InputError naming `name` for a JSON that is not a
// report.
std::shared_ptr<ReportDoc> report_from_json(nlohmann::json json, std::string name);
// True when `path` holds an alloclab report (JSON with schema_version and results) rather than
// a trace.
bool looks_like_report(const std::string& path);

// Work off the UI thread with progress and cancel. `work` runs on its own thread and returns
// what the UI thread then applies to the model.
class Job {
 public:
  using Apply = std::function<void(class Model&)>;
  struct Context {
    std::atomic<std::uint64_t> done{0};
    std::atomic<std::uint64_t> total{0};
    std::atomic<bool> cancel{false};
  };
  Job(std::string label, std::function<Apply(Context&)> work);
  ~Job();
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  const std::string& label() const { return label_; }
  // In [0, 1]; 0 while the total is unknown.
  float fraction() const;
  bool finished() const { return finished_.load(); }
  void cancel() { context_.cancel = true; }
  bool cancelled() const { return context_.cancel.load(); }
  // After finished(): the result to apply, or the error message.
  Apply take_apply();
  std::string error() const;

 private:
  std::string label_;
  Context context_;
  std::atomic<bool> finished_{false};
  mutable std::mutex mutex_;
  Apply apply_;
  std::string error_;
  std::jthread thread_;
};

class Model {
 public:
  std::vector<std::shared_ptr<const TraceDoc>> traces;
  std::vector<std::shared_ptr<ReportDoc>> reports;
  int current_report = -1;  // index into reports
  int current_trace = -1;   // index into traces
  int diff_a = -1, diff_b = -1;
  std::vector<std::string> messages;  // errors and notices, newest last
  std::vector<std::unique_ptr<Job>> jobs;

  // Starts a background load of a trace or report (chosen by content).
  void open(const std::string& path);
  // Starts a background simulated replay of `trace` against `specs`; the report becomes current.
  void replay(std::shared_ptr<const TraceDoc> trace, std::vector<std::string> specs);
  void add_report(std::shared_ptr<ReportDoc> report);
  // Takes strategy `index` out of `report` (its result, series and JSON entry), so that every
  // view compares the rest; false when there is no such strategy.
  static bool remove_result(ReportDoc& report, std::size_t index);
  // Makes `trace` current; its load warnings become messages and go to stderr, as the CLI's do.
  void add_trace(std::shared_ptr<const TraceDoc> trace);
  // Applies finished jobs' results (UI thread) and drops them. Returns true when any finished.
  bool poll_jobs();
  bool busy() const { return !jobs.empty(); }

  const ReportDoc* report() const {
    return current_report >= 0 && current_report < static_cast<int>(reports.size())
               ? reports[static_cast<std::size_t>(current_report)].get()
               : nullptr;
  }
  const TraceDoc* trace() const;  // the current report's trace, else the current trace
  std::shared_ptr<const TraceDoc> shared_trace() const;  // the same, shared
  // The trace summary JSON to show: the current trace's, else the current report's.
  const nlohmann::json* trace_summary() const;
};

}  // namespace alloclab::gui
