// Chrome trace-event export, written event by event so a large trace never sits in memory twice.
#include "alloclab/format/interchange/chrome_trace.hpp"

#include <algorithm>
#include <charconv>
#include <map>
#include <ostream>
#include <stdexcept>

#include "alloclab/format/resolve.hpp"
#include "text_io.hpp"

namespace alloclab {
namespace {

using nlohmann::json;

constexpr int pid = 1;
constexpr int runs_tid = 0;  // a synthetic thread: runs are trace-wide, not one thread's

class EventWriter {
 public:
  EventWriter(std::ostream& out, std::uint64_t origin_ns) : out_(out), origin_ns_(origin_ns) {}

  // Microseconds since the earliest event: small numbers keep nanosecond digits in a double.
  double ts(std::uint64_t time_ns) const {
    return static_cast<double>(time_ns - origin_ns_) / 1000.0;
  }

  void write(const json& event) {
    out_ << (first_ ? "\n" : ",\n");
    first_ = false;
    // Labels come from traced programs: replace invalid UTF-8 rather than fail the export.
    out_ << event.dump(-1, ' ', false, json::error_handler_t::replace);
  }

  // Counters are most of a large export: formatted by hand, as nlohmann would (names are ours
  // and plain ASCII; to_chars gives the shortest text that reads back as the same double).
  void counter(const std::string& name, std::uint64_t time_ns, std::uint64_t bytes) {
    char ts_text[32];
    const auto ts_end = std::to_chars(ts_text, ts_text + sizeof ts_text, ts(time_ns)).ptr;
    out_ << (first_ ? "\n" : ",\n") << R"({"ph":"C","name":")" << name << R"(","pid":)" << pid
         << R"(,"tid":)" << runs_tid << R"(,"ts":)" << std::string_view(ts_text, ts_end - ts_text)
         << R"(,"args":{"bytes":)" << bytes << "}}";
    first_ = false;
  }

 private:
  std::ostream& out_;
  std::uint64_t origin_ns_;
  bool first_ = true;
};

// Small thread numbers for the viewer (it may truncate 64-bit thread ids); names keep the real id.
class ThreadTable {
 public:
  int tid(std::uint64_t thread) {
    auto [it, added] = tids_.emplace(thread, static_cast<int>(tids_.size()) + 1);
    if (added) order_.push_back(thread);
    return it->second;
  }
  const std::vector<std::uint64_t>& threads() const { return order_; }

 private:
  std::map<std::uint64_t, int> tids_;
  std::vector<std::uint64_t> order_;
};

void write_live_bytes(EventWriter& writer, const ResolvedTrace& resolved) {
  std::map<DeviceId, std::uint64_t> live;
  for (std::uint32_t id = 0; id < resolved.start_blocks(); ++id)  // live before the first event
    live[resolved.device_of(id)] += resolved.alloc_size[id];
  for (std::size_t i = 0; i < resolved.ops.size(); ++i) {
    const ResolvedOp& op = resolved.ops[i];
    if (op.op != ReplayOp::alloc && op.op != ReplayOp::free) continue;
    const DeviceId device = resolved.device_of(op.id);
    std::uint64_t& bytes = live[device];
    if (op.op == ReplayOp::alloc)
      bytes += resolved.alloc_size[op.id];
    else
      bytes -= resolved.alloc_size[op.id];
    writer.counter("live bytes " + device_name(device), resolved.op_time_ns[i], bytes);
  }
}

// resolve() does not pair the allocator's own segments, so they are paired here.
void write_reserved_bytes(EventWriter& writer, const Trace& trace) {
  std::map<std::pair<DeviceId, std::uint64_t>, std::uint64_t> segments;
  std::map<DeviceId, std::uint64_t> reserved;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    if (!trace.segment(i) || (trace.op(i) != Op::alloc && trace.op(i) != Op::free)) continue;
    const DeviceId device = trace.device(i);
    const auto key = std::make_pair(device, trace.address(i));
    std::uint64_t& bytes = reserved[device];
    if (trace.op(i) == Op::alloc) {
      bytes += trace.size_of(i);
      segments[key] += trace.size_of(i);
    } else {
      // A free of a segment the trace never saw allocated (cut history) changes nothing.
      const auto it = segments.find(key);
      if (it == segments.end()) continue;
      bytes -= std::min(bytes, it->second);
      segments.erase(it);
    }
    writer.counter("reserved bytes " + device_name(device), trace.time_ns(i), bytes);
  }
}

void write_runs(EventWriter& writer, const ResolvedTrace& resolved) {
  if (resolved.implicit_run) return;
  for (std::size_t r = 0; r < resolved.runs.size(); ++r) {
    const RunInfo& run = resolved.runs[r];
    const std::uint64_t end = std::max(run.end_time_ns, run.begin_time_ns);
    writer.write({{"ph", "X"},
                  {"name", run.label.empty() ? "run " + std::to_string(r) : run.label},
                  {"cat", "run"},
                  {"pid", pid},
                  {"tid", runs_tid},
                  {"ts", writer.ts(run.begin_time_ns)},
                  {"dur", static_cast<double>(end - run.begin_time_ns) / 1000.0}});
  }
}

void write_marks(EventWriter& writer, const Trace& trace, ThreadTable& threads) {
  for (std::size_t i = 0; i < trace.size(); ++i) {
    if (trace.op(i) != Op::mark) continue;
    const std::string_view label = trace.label(i);
    writer.write({{"ph", "i"},
                  {"s", "t"},
                  {"name", label.empty() ? std::string("mark") : std::string(label)},
                  {"cat", "mark"},
                  {"pid", pid},
                  {"tid", threads.tid(trace.thread(i))},
                  {"ts", writer.ts(trace.time_ns(i))},
                  {"args", {{"device", device_name(trace.device(i))}}}});
  }
}

void write_names(EventWriter& writer, const Trace& trace, const ThreadTable& threads) {
  std::string process = "alloclab trace";
  if (const auto it = trace.metadata.find("imported_from");
      it != trace.metadata.end() && it->is_object() && it->contains("file") &&
      (*it)["file"].is_string())
    process += " " + (*it)["file"].get<std::string>();
  writer.write(
      {{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"args", {{"name", process}}}});
  writer.write({{"ph", "M"},
                {"name", "thread_name"},
                {"pid", pid},
                {"tid", runs_tid},
                {"args", {{"name", "runs"}}}});
  for (std::size_t t = 0; t < threads.threads().size(); ++t)
    writer.write({{"ph", "M"},
                  {"name", "thread_name"},
                  {"pid", pid},
                  {"tid", static_cast<int>(t) + 1},
                  {"args", {{"name", "thread " + std::to_string(threads.threads()[t])}}}});
}

}  // namespace

void write_chrome_trace(const Trace& trace, std::ostream& out) {
  std::uint64_t origin = 0;
  if (!trace.empty()) {
    origin = trace.time_ns(0);
    for (std::size_t i = 1; i < trace.size(); ++i) origin = std::min(origin, trace.time_ns(i));
  }
  const ResolvedTrace resolved = resolve(trace);
  out << "{\"traceEvents\":[";
  EventWriter writer(out, origin);
  ThreadTable threads;
  write_runs(writer, resolved);
  write_marks(writer, trace, threads);
  write_live_bytes(writer, resolved);
  write_reserved_bytes(writer, trace);
  write_names(writer, trace, threads);
  out << "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"time_origin_ns\":" << origin
      << ",\"producer\":\"alloclab\"}}\n";
  out.flush();
  if (!out) throw std::runtime_error("write_chrome_trace: writing the JSON stream failed");
}

void write_chrome_trace(const Trace& trace, const std::string& path) {
  interchange_detail::OutputFile file(path);
  write_chrome_trace(trace, file.stream());
  file.close();
}

}  // namespace alloclab
