#include "model.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "alloclab/format/error.hpp"
#include "alloclab/format/load.hpp"
#include "alloclab/format/summary.hpp"
#include "alloclab/replay/report.hpp"
#include "alloclab/replay/sim_replay.hpp"
#include "alloclab/replay/sites.hpp"

namespace alloclab::gui {
namespace {

std::string base_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Points of a report series as a pyramid of (time, min, max).
LodPyramid series_pyramid(const std::vector<SeriesPoint>& series, std::uint64_t first_time_ns,
                          bool reserved) {
  std::vector<double> x, lo, hi;
  x.reserve(series.size());
  lo.reserve(series.size());
  hi.reserve(series.size());
  for (const SeriesPoint& p : series) {
    const double t =
        p.time_ns >= first_time_ns ? static_cast<double>(p.time_ns - first_time_ns) : 0;
    x.push_back(x.empty() ? t : std::max(t, x.back()));
    lo.push_back(static_cast<double>(reserved ? p.reserved_min : p.live_min));
    hi.push_back(static_cast<double>(reserved ? p.reserved_max : p.live_max));
  }
  return LodPyramid(std::move(x), std::move(lo), std::move(hi));
}

}  // namespace

LodPyramid live_bytes_pyramid(const ResolvedTrace& trace, std::uint64_t first_time_ns,
                              const std::vector<std::uint32_t>* alloc_stack,
                              const std::vector<bool>* stacks) {
  const auto counted = [&](std::uint32_t id) {
    if (!stacks) return true;
    const std::uint32_t stack = id < alloc_stack->size() ? (*alloc_stack)[id] : 0;
    return stack < stacks->size() && (*stacks)[stack];
  };
  const std::size_t n = trace.ops.size();
  std::vector<double> x(n), y(n);
  std::uint64_t live = 0;
  std::vector<char> is_live(trace.alloc_size.size(), 0);
  for (std::uint32_t id = 0; id < trace.start_blocks(); ++id) {  // live before the first event
    if (!counted(id)) continue;
    live += trace.alloc_size[id];
    is_live[id] = 1;
  }
  double last_x = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const ResolvedOp& op = trace.ops[i];
    if (op.op == ReplayOp::alloc && counted(op.id)) {
      live += trace.alloc_size[op.id];
      is_live[op.id] = 1;
    } else if (op.op == ReplayOp::free && is_live[op.id]) {
      live -= trace.alloc_size[op.id];
      is_live[op.id] = 0;
    }
    const std::uint64_t t = i < trace.op_time_ns.size() ? trace.op_time_ns[i] : first_time_ns;
    // Clamp to non-decreasing: merged threads can carry equal or (rarely) earlier stamps.
    last_x = std::max(last_x, t >= first_time_ns ? static_cast<double>(t - first_time_ns) : 0.0);
    x[i] = last_x;
    y[i] = static_cast<double>(live);
  }
  return LodPyramid(std::move(x), std::move(y));
}

std::shared_ptr<TraceDoc> load_trace_doc(const std::string& path) {
  LoadedTrace loaded = load_trace(path);  // the format detected as the CLI detects it
  Trace& trace = loaded.trace;
  auto doc = std::make_shared<TraceDoc>();
  doc->path = path;
  doc->resolved = resolve(trace, path);
  TraceSummary summary = summarize(trace, doc->resolved);
  summary.source = path;
  summary.file_bytes = loaded.file_bytes;
  doc->first_time_ns = summary.first_time_ns;
  doc->warnings = trace.warnings;
  doc->summary = to_json(summary);
  // The events are not needed once resolved, except by the Flame view, which replays a trace
  // with call stacks per site.
  if (trace.has_stacks()) {
    doc->alloc_stack = allocation_stacks(trace, doc->resolved);
    doc->stack_trace = std::make_shared<const Trace>(std::move(trace));
  }
  trace = Trace{};
  doc->live = live_bytes_pyramid(doc->resolved, doc->first_time_ns);
  return doc;
}

bool looks_like_report(const std::string& path) {
  if (path.size() < 5 || path.compare(path.size() - 5, 5, ".json") != 0) return false;
  // Reports sort their keys, so "schema_version" may come late: a JSON file is a report unless
  // it is a PyTorch snapshot (a trace); anything else fails as a report, saying why.
  std::ifstream in(path, std::ios::binary);
  std::string chunk(1 << 16, '\0');
  std::string carry;
  while (in.read(chunk.data(), static_cast<std::streamsize>(chunk.size())) || in.gcount() > 0) {
    const std::string text = carry + chunk.substr(0, static_cast<std::size_t>(in.gcount()));
    if (text.find("\"device_traces\"") != std::string::npos) return false;
    carry = text.substr(text.size() > 16 ? text.size() - 16 : 0);
  }
  return true;
}

std::shared_ptr<ReportDoc> report_from_json(nlohmann::json json, std::string name) {
  if (!json.is_object() || !json.contains("results") || !json["results"].is_array())
    throw InputError(name + ": not an alloclab report (no \"results\" list)");
  if (!json.contains("schema_version") || json["schema_version"] != 1)
    throw InputError(name + ": unsupported report schema_version (expected 1)");
  auto doc = std::make_shared<ReportDoc>();
  doc->name = std::move(name);
  doc->mode = json.value("mode", std::string("sim"));
  if (json.contains("trace") && json["trace"].is_object())
    doc->first_time_ns = json["trace"].value("first_time_ns", std::uint64_t{0});
  std::size_t index = 0;
  for (const nlohmann::json& r : json["results"])
    doc->results.push_back(
        result_from_json(r, doc->name + ", results[" + std::to_string(index++) + "]"));
  for (const StrategyResult& r : doc->results) {
    doc->reserved.push_back(series_pyramid(r.series, doc->first_time_ns, true));
    doc->live.push_back(series_pyramid(r.series, doc->first_time_ns, false));
  }
  doc->json = std::move(json);
  return doc;
}

Job::Job(std::string label, std::function<Apply(Context&)> work) : label_(std::move(label)) {
  thread_ = std::jthread([this, work = std::move(work)] {
    try {
      Apply apply = work(context_);
      std::lock_guard lock(mutex_);
      apply_ = std::move(apply);
    } catch (const std::exception& e) {
      std::lock_guard lock(mutex_);
      error_ = e.what();
    }
    finished_ = true;
  });
}

Job::~Job() {
  context_.cancel = true;  // the jthread joins; the work sees cancel and returns early
}

float Job::fraction() const {
  const std::uint64_t total = context_.total.load();
  if (total == 0) return 0;
  return std::min(1.0f, static_cast<float>(context_.done.load()) / static_cast<float>(total));
}

Job::Apply Job::take_apply() {
  std::lock_guard lock(mutex_);
  return std::move(apply_);
}

std::string Job::error() const {
  std::lock_guard lock(mutex_);
  return error_;
}

void Model::open(const std::string& path) {
  const std::string label = "open " + base_name(path);
  if (looks_like_report(path)) {
    jobs.push_back(std::make_unique<Job>(label, [path](Job::Context&) -> Job::Apply {
      refuse_directory(path);
      std::ifstream in(path);
      if (!in) throw InputError(path + ": cannot open");
      nlohmann::json json;
      try {
        json = nlohmann::json::parse(in);
      } catch (const nlohmann::json::exception& e) {
        throw InputError(path + ": not valid JSON (" + e.what() + ")");
      }
      std::shared_ptr<ReportDoc> doc = report_from_json(std::move(json), path);
      return [doc](Model& model) { model.add_report(doc); };
    }));
    return;
  }
  jobs.push_back(std::make_unique<Job>(label, [path](Job::Context&) -> Job::Apply {
    std::shared_ptr<const TraceDoc> doc = load_trace_doc(path);
    return [doc](Model& model) { model.add_trace(doc); };
  }));
}

void Model::replay(std::shared_ptr<const TraceDoc> trace, std::vector<std::string> specs) {
  if (!trace || specs.empty()) return;
  const std::string label = "replay " + base_name(trace->path);
  jobs.push_back(std::make_unique<Job>(label, [trace, specs](Job::Context& context) -> Job::Apply {
    context.total = trace->resolved.ops.size() * specs.size();
    ReplayOptions options;
    options.max_series_points = 8192;  // finer than the CLI's 2,000: the chart zooms in
    options.progress = &context.done;
    options.cancel = &context.cancel;
    ReplaySetOutcome outcome = replay_specs(trace->resolved, specs, options, 0);
    if (outcome.interrupted) {
      const std::string name = base_name(trace->path);
      return [name](Model& model) {
        model.messages.push_back("replay of " + name + " cancelled: no report");
      };
    }
    ReportContext report_context;
    report_context.command_line = "alloclab gui (replay of " + trace->path + ")";
    nlohmann::json json = make_report(TraceSummary{}, outcome.results, report_context);
    json["trace"] = trace->summary;  // the summary as `alloclab info --json` shows it
    std::shared_ptr<ReportDoc> doc =
        report_from_json(std::move(json), base_name(trace->path) + " (replayed here)");
    doc->trace = trace;
    return [doc](Model& model) { model.add_report(doc); };
  }));
}

void Model::add_report(std::shared_ptr<ReportDoc> report) {
  // A report of a trace that is open here gets its runs and exact live bytes.
  if (!report->trace && report->json.contains("trace") && report->json["trace"].is_object()) {
    const std::string source = report->json["trace"].value("source", std::string());
    const std::uint64_t events = report->json["trace"].value("events", std::uint64_t{0});
    for (const auto& t : traces)
      if (base_name(t->path) == base_name(source) && t->summary.value("events", 0ull) == events)
        report->trace = t;
  }
  reports.push_back(std::move(report));
  current_report = static_cast<int>(reports.size()) - 1;
  if (diff_a < 0)
    diff_a = current_report;
  else if (diff_b < 0)
    diff_b = current_report;
}

bool Model::remove_result(ReportDoc& report, std::size_t index) {
  if (index >= report.results.size()) return false;
  const auto at = [index](auto& v) {
    if (index < v.size()) v.erase(v.begin() + static_cast<std::ptrdiff_t>(index));
  };
  at(report.results);
  at(report.reserved);
  at(report.live);
  if (auto it = report.json.find("results");
      it != report.json.end() && it->is_array() && index < it->size())
    it->erase(index);
  // A sweep names the point of each result: that entry goes with it.
  if (auto sweep = report.json.find("sweep"); sweep != report.json.end() && sweep->is_object())
    if (auto points = sweep->find("point_indices");
        points != sweep->end() && points->is_array() && index < points->size())
      points->erase(index);
  return true;
}

void Model::add_trace(std::shared_ptr<const TraceDoc> trace) {
  for (const std::string& warning : trace->warnings) {
    std::fprintf(stderr, "alloclab gui: warning: %s\n", warning.c_str());
    messages.push_back("warning: " + warning);
  }
  traces.push_back(std::move(trace));
  current_trace = static_cast<int>(traces.size()) - 1;
}

bool Model::poll_jobs() {
  bool any = false;
  for (auto it = jobs.begin(); it != jobs.end();) {
    if (!(*it)->finished()) {
      ++it;
      continue;
    }
    any = true;
    if (Job::Apply apply = (*it)->take_apply())
      apply(*this);
    else if (!(*it)->error().empty())
      messages.push_back("error: " + (*it)->error());
    it = jobs.erase(it);
  }
  return any;
}

const TraceDoc* Model::trace() const {
  return shared_trace().get();
}

std::shared_ptr<const TraceDoc> Model::shared_trace() const {
  if (const ReportDoc* r = report(); r && r->trace) return r->trace;
  if (current_trace >= 0 && current_trace < static_cast<int>(traces.size()))
    return traces[static_cast<std::size_t>(current_trace)];
  return nullptr;
}

const nlohmann::json* Model::trace_summary() const {
  if (current_trace >= 0 && current_trace < static_cast<int>(traces.size()))
    return &traces[static_cast<std::size_t>(current_trace)]->summary;
  if (const ReportDoc* r = report(); r && r->json.contains("trace")) return &r->json["trace"];
  return nullptr;
}

}  // namespace alloclab::gui
