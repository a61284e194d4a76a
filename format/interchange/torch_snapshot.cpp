// Reads the allocation history of a PyTorch memory snapshot converted to JSON.
#include "alloclab/format/interchange/torch_snapshot.hpp"

#include <algorithm>
#include <map>
#include <unordered_set>

#include "alloclab/format/error.hpp"
#include "text_io.hpp"

namespace alloclab {
namespace {

using nlohmann::json;

constexpr std::string_view trace_help =
    " (record it with torch.cuda.memory._record_memory_history() before _dump_snapshot(), then "
    "convert with scripts/torch_snapshot_to_json.py)";

// What a Chrome/Perfetto trace-event document is, for someone who gave one as a trace.
std::string chrome_trace_explanation(const json& root) {
  const auto other = root.find("otherData");
  const bool ours = other != root.end() && other->is_object() &&
                    other->value("producer", json()).is_string() &&
                    (*other)["producer"].get<std::string>() == "alloclab";
  if (!ours)
    return "not a PyTorch memory snapshot: no \"device_traces\"; a Chrome/Perfetto trace-event "
           "file (timeline events, not allocations)" +
           std::string(trace_help);
  return "a Chrome/Perfetto trace that alloclab wrote (`alloclab convert` to .json, for "
         "ui.perfetto.dev); it holds live-byte curves, not allocations, so alloclab cannot read "
         "it back: read the trace it was made from (.alt, .csv)";
}

[[noreturn]] void fail_entry(const std::string& name, std::size_t device, std::size_t index,
                             const std::string& what) {
  throw InputError(name + ": device_traces[" + std::to_string(device) + "][" +
                   std::to_string(index) + "]: " + what);
}

struct DeviceStats {
  std::uint64_t entries = 0;
  std::uint64_t orphan_frees = 0;  // frees of addresses this device's history never allocated
};

class DeviceReader {
 public:
  DeviceReader(const std::string& name, std::size_t device) : name_(name), device_(device) {}

  std::vector<Event> read(const json& entries, json& summary) {
    std::vector<Event> events;
    events.reserve(entries.size());
    for (std::size_t i = 0; i < entries.size(); ++i) {
      index_ = i;
      if (auto e = convert(entries[i], summary)) events.push_back(std::move(*e));
    }
    stats_.entries = entries.size();
    return events;
  }
  const DeviceStats& stats() const { return stats_; }
  std::uint64_t missing_time() const { return missing_time_; }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    fail_entry(name_, device_, index_, what);
  }

  std::optional<std::uint64_t> number(const json& entry, const char* key, bool required,
                                      bool allow_negative = false) const {
    const auto it = entry.find(key);
    if (it == entry.end()) {
      if (required) fail(std::string("no '") + key + "'");
      return std::nullopt;
    }
    if (it->is_number_unsigned()) return it->get<std::uint64_t>();
    if (it->is_number_integer()) {
      const auto value = it->get<std::int64_t>();
      // Streams are pointers PyTorch stores as int64: keep their bits.
      if (value < 0 && !allow_negative)
        fail(std::string("negative '") + key + "' " + std::to_string(value));
      return static_cast<std::uint64_t>(value);
    }
    fail(std::string("'") + key + "' is not an integer: " + it->dump());
  }

  std::optional<Event> convert(const json& entry, json& summary) {
    if (!entry.is_object()) fail("entry is not an object");
    const auto action_it = entry.find("action");
    if (action_it == entry.end() || !action_it->is_string()) fail("'action' missing or not text");
    const std::string action = action_it->get<std::string>();

    Event e;
    e.device = static_cast<DeviceId>(device_);
    e.kind = MemoryKind::device;
    e.stream = number(entry, "stream", false, true).value_or(0);
    const auto time_us = number(entry, "time_us", false);
    if (!time_us) ++missing_time_;
    if (time_us && *time_us > UINT64_MAX / 1000) fail("'time_us' too large");
    e.time_ns = time_us.value_or(0) * 1000;

    if (action == "alloc" || action == "free_completed" || action == "free_requested") {
      e.op = action == "alloc" ? Op::alloc : Op::free;
      e.address = *number(entry, "addr", true);
      e.size = *number(entry, "size", true);
      if (e.op == Op::alloc) {
        live_.insert(e.address);
      } else if (action == "free_requested") {
        // Not free yet: the block waits for its streams; free_completed is the real free.
        summary["free_requested"] = summary.value("free_requested", 0) + 1;
        return std::nullopt;
      } else if (!live_.erase(e.address)) {
        ++stats_.orphan_frees;  // kept: the resolver reports it as a free of an unknown address
      }
      return e;
    }
    if (action == "segment_alloc" || action == "segment_map" || action == "segment_free" ||
        action == "segment_unmap") {
      e.op = action == "segment_alloc" || action == "segment_map" ? Op::alloc : Op::free;
      e.segment = true;
      e.address = *number(entry, "addr", true);
      e.size = *number(entry, "size", true);
      // Expandable segments unmap ranges that need not match a map: only whole segments count.
      if (action == "segment_alloc") segments_.insert(e.address);
      if (action == "segment_free" && !segments_.erase(e.address)) ++stats_.orphan_frees;
      return e;
    }
    if (action == "snapshot" || action == "oom") {
      e.op = Op::mark;
      e.label = action;
      e.size = number(entry, "size", false).value_or(0);
      if (action == "oom") {
        const auto device_free = number(entry, "device_free", false);
        if (device_free) e.label += " device_free=" + std::to_string(*device_free);
        summary["ooms"].push_back({{"device", device_},
                                   {"time_us", time_us.value_or(0)},
                                   {"size", e.size},
                                   {"device_free", device_free ? json(*device_free) : json()}});
      }
      return e;
    }
    json& unknown = summary["unknown_actions"];
    if (!unknown.is_object()) unknown = json::object();
    unknown[action] = unknown.value(action, 0) + 1;
    return std::nullopt;
  }

  const std::string& name_;
  std::size_t device_;
  std::size_t index_ = 0;
  DeviceStats stats_;
  std::uint64_t missing_time_ = 0;
  std::unordered_set<std::uint64_t> live_;
  std::unordered_set<std::uint64_t> segments_;
};

json parse_json(const std::string& text, const std::string& name) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    const std::size_t end = std::min<std::size_t>(e.byte == 0 ? 0 : e.byte - 1, text.size());
    const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<long>(end), '\n');
    std::string what = e.what();
    if (const auto pos = what.find("] "); pos != std::string::npos) what.erase(0, pos + 2);
    throw_at_line(name, static_cast<std::uint64_t>(line), "not valid JSON: " + what);
  } catch (const json::out_of_range& e) {
    // The parser refuses a number beyond a double's range (1e999) this way, not as a parse_error.
    std::string what = e.what();
    if (const auto pos = what.find("] "); pos != std::string::npos) what.erase(0, pos + 2);
    throw InputError(name + ": not valid JSON: " + what);
  }
}

std::optional<std::uint64_t> max_entries_of(const json& settings) {
  for (const char* key : {"trace_alloc_max_entries", "max_entries"}) {
    const auto it = settings.find(key);
    if (it != settings.end() && it->is_number_integer() && it->get<std::int64_t>() > 0)
      return it->get<std::uint64_t>();
  }
  return std::nullopt;
}

// Merges the per-device histories by time; each device keeps its own order even where its
// clock readings are not monotonic, and ties go to the lower device.
void merge_into(Trace& trace, std::vector<std::vector<Event>>& devices) {
  std::vector<std::size_t> next(devices.size(), 0);
  for (;;) {
    std::size_t best = devices.size();
    for (std::size_t d = 0; d < devices.size(); ++d)
      if (next[d] < devices[d].size() &&
          (best == devices.size() ||
           devices[d][next[d]].time_ns < devices[best][next[best]].time_ns))
        best = d;
    if (best == devices.size()) return;
    trace.push_back(devices[best][next[best]++]);
  }
}

}  // namespace

Trace parse_torch_snapshot_json(const std::string& json_text, const std::string& name) {
  const json root = parse_json(json_text, name);
  if (!root.is_object())
    throw InputError(name + ": not a PyTorch memory snapshot (the top level is not an object)");
  const auto traces = root.find("device_traces");
  if (traces == root.end()) {
    if (root.contains("traceEvents"))
      throw InputError(name + ": " + chrome_trace_explanation(root));
    throw InputError(name + ": not a PyTorch memory snapshot: no \"device_traces\"" +
                     std::string(trace_help));
  }
  if (!traces->is_array()) throw InputError(name + ": \"device_traces\" is not a list");

  Trace trace;
  trace.metadata["imported_from"] = {{"format", "torch_snapshot"}, {"file", name}};
  json summary = {{"free_requested", 0}, {"devices", traces->size()}};
  const json settings = root.value("allocator_settings", json::object());
  summary["allocator_settings"] = settings;
  const auto max_entries = max_entries_of(settings.is_object() ? settings : json::object());

  bool cut = false;
  std::uint64_t missing_time = 0;
  std::vector<std::vector<Event>> devices;
  for (std::size_t d = 0; d < traces->size(); ++d) {
    const json& entries = (*traces)[d];
    if (!entries.is_array())
      throw InputError(name + ": device_traces[" + std::to_string(d) + "] is not a list");
    DeviceReader reader(name, d);
    devices.push_back(reader.read(entries, summary));
    missing_time += reader.missing_time();
    const DeviceStats& stats = reader.stats();
    const std::string where = name + ": device_traces[" + std::to_string(d) + "]";
    if (max_entries && stats.entries >= *max_entries) {
      cut = true;
      trace.warnings.push_back(where + " holds " + std::to_string(stats.entries) +
                               " entries, the ring buffer's size (" + std::to_string(*max_entries) +
                               "): older events may be lost");
    }
    if (stats.orphan_frees > 0) {
      cut = true;
      trace.warnings.push_back(where + " frees " + std::to_string(stats.orphan_frees) +
                               " block(s) it never allocated: its beginning was cut (ring buffer "
                               "full, or recording started late)");
    }
  }
  if (missing_time > 0)
    trace.warnings.push_back(name + ": " + std::to_string(missing_time) +
                             " entries without time_us (an older PyTorch?): their time is 0");
  if (summary.contains("unknown_actions"))
    trace.warnings.push_back(name + ": ignored entries with unknown actions " +
                             summary["unknown_actions"].dump());
  summary["ring_buffer_may_have_cut"] = cut;
  trace.metadata["torch_snapshot"] = std::move(summary);
  try {
    merge_into(trace, devices);
  } catch (const InputError& e) {
    throw InputError(name + ": " + e.what());
  }
  return trace;
}

Trace read_torch_snapshot_json(const std::string& path) {
  return parse_torch_snapshot_json(interchange_detail::read_json_text(path), path);
}

}  // namespace alloclab
