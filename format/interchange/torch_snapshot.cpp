// Reads the allocation history of a PyTorch memory snapshot: the pickle
// torch.cuda.memory._dump_snapshot() writes, or the same snapshot as JSON. Both are read into one
// PlainTree, and one mapping turns that into a trace.
#include "alloclab/format/interchange/torch_snapshot.hpp"

#include <algorithm>
#include <limits>
#include <sstream>
#include <streambuf>
#include <unordered_map>
#include <unordered_set>

#include "alloclab/format/error.hpp"
#include "alloclab/format/start_state.hpp"
#include "pickle.hpp"
#include "plain_tree.hpp"
#include "text_io.hpp"
#include "torch_start_state.hpp"

namespace alloclab {
namespace {

using interchange_detail::PickleDocument;
using interchange_detail::PlainTree;
using nlohmann::json;
using Id = PlainTree::Id;
using Kind = PlainTree::Kind;

constexpr std::string_view trace_help =
    " (record it with torch.cuda.memory._record_memory_history() before _dump_snapshot())";

// What a Chrome/Perfetto trace-event document is, for someone who gave one as a trace.
std::string chrome_trace_explanation(const PlainTree& tree, Id root) {
  bool ours = false;
  if (const auto other = tree.find(root, "otherData"); other && tree.kind(*other) == Kind::dict)
    if (const auto producer = tree.find(*other, "producer");
        producer && tree.kind(*producer) == Kind::text)
      ours = tree.text_of(*producer) == "alloclab";
  if (!ours)
    return "not a PyTorch memory snapshot: no \"device_traces\"; a Chrome/Perfetto trace-event "
           "file (timeline events, not allocations)" +
           std::string(trace_help);
  return "a Chrome/Perfetto trace that alloclab wrote (`alloclab convert` to .json, for "
         "ui.perfetto.dev); it holds live-byte curves, not allocations, so alloclab cannot read "
         "it back: read the trace it was made from (.alt, .csv)";
}

// An entry or a frame holds a dozen keys. Looking one up is a walk along its keys, and a pickle
// can make a million entries of one dict (its memo): past this bound, the walks would add up to
// hours.
constexpr std::size_t max_keys = 64;

bool is_list(const PlainTree& tree, Id id) {
  return tree.kind(id) == Kind::list || tree.kind(id) == Kind::tuple;
}

using interchange_detail::HistoryStep;

struct DeviceEvents {
  std::vector<HistoryStep> events;
  std::vector<std::string> labels;
  // Frees of blocks or segments the history never allocated: with no dumped segments, the only
  // source of a start state.
  std::uint64_t orphan_frees = 0;
};

struct DeviceStats {
  std::uint64_t entries = 0;
  std::uint64_t orphan_frees = 0;  // frees of addresses this device's history never allocated
  std::uint64_t cut_entries = 0;   // unfinished entries of a cut pickle, skipped
};

// What is wrong with an entry's `frames`; the entry's reader says where.
struct BadFrames {
  std::string what;
};

// The trace's stack table, filled from entries' `frames` (innermost first, as PyTorch lists
// them). A pickle shares one frames list among the entries of a block and one dict per frame,
// so both are looked up by value id before by content.
class StackTable {
 public:
  StackTable(const PlainTree& tree, Trace& trace) : tree_(tree), trace_(trace) {}

  // The stack id of a `frames` value (0 for an empty list). Throws BadFrames.
  std::uint32_t stack_of(Id frames) {
    if (const auto it = by_list_.find(frames); it != by_list_.end()) return it->second;
    if (!is_list(tree_, frames))
      throw BadFrames{"'frames' is not a list: " + tree_.describe(frames)};
    std::vector<std::uint32_t> indices;
    const std::span<const Id> items = tree_.items(frames);
    indices.reserve(items.size());
    for (std::size_t k = 0; k < items.size(); ++k) {
      try {
        indices.push_back(frame_of(items[k]));
      } catch (const BadFrames& bad) {
        throw BadFrames{"frames[" + std::to_string(k) + "]" + bad.what};
      }
    }
    std::uint32_t id = 0;
    if (!indices.empty()) {
      const auto [it, added] = by_content_.try_emplace(indices, 0);
      if (added) it->second = trace_.add_stack(indices);
      id = it->second;
    }
    by_list_.emplace(frames, id);
    return id;
  }

 private:
  std::uint32_t frame_of(Id frame) {
    if (const auto it = frame_by_id_.find(frame); it != frame_by_id_.end()) return it->second;
    if (tree_.kind(frame) != Kind::dict)
      throw BadFrames{" is not an object: " + tree_.describe(frame)};
    if (tree_.items(frame).size() > 2 * max_keys)
      throw BadFrames{" has " + std::to_string(tree_.items(frame).size() / 2) +
                      " keys, more than a frame holds (" + std::to_string(max_keys) + ")"};
    const auto text = [&](const char* key) {
      const auto value = tree_.find(frame, key);
      if (!value) throw BadFrames{": no '" + std::string(key) + "'"};
      if (tree_.kind(*value) != Kind::text)
        throw BadFrames{": '" + std::string(key) + "' is not text: " + tree_.describe(*value)};
      return std::string(tree_.text_of(*value));
    };
    // A snapshot frame is a source location (Python or C++), not a return address in an
    // object: it fills function, file and line and leaves address and module unknown.
    StackFrame out;
    out.function = text("name");
    out.file = text("filename");
    const auto line = tree_.find(frame, "line");
    if (!line) throw BadFrames{": no 'line'"};
    // Line 0: PyTorch knows no line (a C++ frame without debug information), as in StackFrame.
    if (tree_.kind(*line) == Kind::unsigned_integer &&
        tree_.unsigned_of(*line) <= std::numeric_limits<std::uint32_t>::max()) {
      out.line = static_cast<std::uint32_t>(tree_.unsigned_of(*line));
    } else if (tree_.kind(*line) == Kind::integer && tree_.integer_of(*line) >= 0 &&
               tree_.integer_of(*line) <= std::numeric_limits<std::uint32_t>::max()) {
      out.line = static_cast<std::uint32_t>(tree_.integer_of(*line));
    } else {
      throw BadFrames{": 'line' is not a line number: " + tree_.describe(*line)};
    }
    const std::string key = out.function + '\0' + out.file + '\0' + std::to_string(out.line);
    const auto [it, added] = frame_by_content_.try_emplace(key, 0);
    if (added) it->second = trace_.add_frame(std::move(out));
    frame_by_id_.emplace(frame, it->second);
    return it->second;
  }

  struct IndicesHash {
    std::size_t operator()(const std::vector<std::uint32_t>& v) const noexcept {
      std::size_t h = v.size();
      for (std::uint32_t x : v) h = h * 1000003u ^ x;
      return h;
    }
  };

  const PlainTree& tree_;
  Trace& trace_;
  std::unordered_map<Id, std::uint32_t> by_list_;
  std::unordered_map<std::vector<std::uint32_t>, std::uint32_t, IndicesHash> by_content_;
  std::unordered_map<Id, std::uint32_t> frame_by_id_;
  std::unordered_map<std::string, std::uint32_t> frame_by_content_;
};

class DeviceReader {
 public:
  DeviceReader(const PlainTree& tree, const std::string& name, std::size_t device,
               StackTable& stacks)
      : tree_(tree), name_(name), device_(device), stacks_(stacks) {}

  // An entry's key, found by its text node (PlainTree::find_key): an entry is a dozen keys, and
  // a history millions of entries.
  struct Key {
    Key(const PlainTree& tree, const char* key_name)
        : name(key_name), node(tree.text_node(key_name)) {}
    const char* name;
    std::optional<Id> node;
  };

  DeviceEvents read(Id entries, json& summary) {
    DeviceEvents out;
    const std::span<const Id> items = tree_.items(entries);
    out.events.reserve(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
      index_ = i;
      // A cut pickle's last entry may be unfinished: it is skipped, as is anything that a cut
      // list holds in place of an entry.
      if (tree_.is_cut(items[i]) || (tree_.is_cut(entries) && tree_.kind(items[i]) != Kind::dict)) {
        ++stats_.cut_entries;
        continue;
      }
      convert(items[i], summary, out);
    }
    stats_.entries = items.size();
    return out;
  }
  const DeviceStats& stats() const { return stats_; }
  std::uint64_t missing_time() const { return missing_time_; }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(name_ + ": device_traces[" + std::to_string(device_) + "][" +
                     std::to_string(index_) + "]: " + what);
  }

  std::optional<std::uint64_t> number(Id entry, const Key& k, bool required,
                                      bool allow_negative = false) const {
    const char* key = k.name;
    const auto value = tree_.find_key(entry, k.node);
    if (!value) {
      if (required) fail(std::string("no '") + key + "'");
      return std::nullopt;
    }
    if (tree_.kind(*value) == Kind::unsigned_integer) return tree_.unsigned_of(*value);
    if (tree_.kind(*value) == Kind::integer) {
      const std::int64_t number = tree_.integer_of(*value);
      // Streams are pointers PyTorch stores as int64: keep their bits.
      if (number < 0 && !allow_negative)
        fail(std::string("negative '") + key + "' " + std::to_string(number));
      return static_cast<std::uint64_t>(number);
    }
    fail(std::string("'") + key + "' is not an integer: " + tree_.describe(*value));
  }

  void convert(Id entry, json& summary, DeviceEvents& out) {
    if (tree_.kind(entry) != Kind::dict) fail("entry is not an object");
    if (tree_.items(entry).size() > 2 * max_keys)
      fail("an entry of " + std::to_string(tree_.items(entry).size() / 2) +
           " keys, more than a trace entry holds (" + std::to_string(max_keys) + ")");
    const auto action_id = tree_.find_key(entry, action_.node);
    if (!action_id || tree_.kind(*action_id) != Kind::text) fail("'action' missing or not text");
    const std::string_view action = tree_.text_of(*action_id);

    HistoryStep e;
    e.stream = number(entry, stream_, false, true).value_or(0);
    const auto time_us = number(entry, time_us_, false);
    if (!time_us) ++missing_time_;
    if (time_us && *time_us > UINT64_MAX / 1000) fail("'time_us' too large");
    e.time_ns = time_us.value_or(0) * 1000;

    if (action == "alloc" || action == "free_completed" || action == "free_requested") {
      e.op = action == "alloc" ? Op::alloc : Op::free;
      e.address = *number(entry, addr_, true);
      e.size = *number(entry, size_, true);
      if (e.op == Op::alloc) {
        live_.insert(e.address);
      } else if (action == "free_requested") {
        // Not free yet: the block waits for its streams; free_completed is the real free.
        summary["free_requested"] = summary.value("free_requested", 0) + 1;
        return;
      } else if (!live_.erase(e.address)) {
        ++stats_.orphan_frees;  // kept: the resolver reports it as a free of an unknown address
      }
      return add(entry, e, out);
    }
    if (action == "segment_alloc" || action == "segment_map" || action == "segment_free" ||
        action == "segment_unmap") {
      e.op = action == "segment_alloc" || action == "segment_map" ? Op::alloc : Op::free;
      e.segment = true;
      e.mapping = action == "segment_map" || action == "segment_unmap";
      e.address = *number(entry, addr_, true);
      e.size = *number(entry, size_, true);
      // Expandable segments unmap ranges that need not match a map: only whole segments count.
      if (action == "segment_alloc") segments_.insert(e.address);
      if (action == "segment_free" && !segments_.erase(e.address)) ++stats_.orphan_frees;
      return add(entry, e, out);
    }
    if (action == "snapshot" || action == "oom") {
      e.op = Op::mark;
      std::string label(action);
      e.size = number(entry, size_, false).value_or(0);
      if (action == "oom") {
        const auto device_free = number(entry, device_free_, false);
        if (device_free) label += " device_free=" + std::to_string(*device_free);
        summary["ooms"].push_back({{"device", device_},
                                   {"time_us", time_us.value_or(0)},
                                   {"size", e.size},
                                   {"device_free", device_free ? json(*device_free) : json()}});
      }
      out.labels.push_back(std::move(label));
      e.label = static_cast<std::uint32_t>(out.labels.size());
      return add(entry, e, out);
    }
    json& unknown = summary["unknown_actions"];
    if (!unknown.is_object()) unknown = json::object();
    const std::string key(action);
    unknown[key] = unknown.value(key, 0) + 1;
  }

  void add(Id entry, HistoryStep& e, DeviceEvents& out) {
    if (const auto frames = tree_.find_key(entry, frames_.node)) {
      try {
        e.stack = stacks_.stack_of(*frames);
      } catch (const BadFrames& bad) {
        fail(bad.what);
      }
    }
    out.events.push_back(e);
  }

  const PlainTree& tree_;
  const std::string& name_;
  std::size_t device_;
  StackTable& stacks_;
  std::size_t index_ = 0;
  DeviceStats stats_;
  std::uint64_t missing_time_ = 0;
  std::unordered_set<std::uint64_t> live_;
  std::unordered_set<std::uint64_t> segments_;
  const Key action_{tree_, "action"}, addr_{tree_, "addr"}, size_{tree_, "size"},
      stream_{tree_, "stream"}, time_us_{tree_, "time_us"}, device_free_{tree_, "device_free"},
      frames_{tree_, "frames"};
};

std::optional<std::uint64_t> max_entries_of(const PlainTree& tree, Id settings) {
  for (const char* key : {"trace_alloc_max_entries", "max_entries"}) {
    const auto value = tree.find(settings, key);
    if (!value) continue;
    if (tree.kind(*value) == Kind::integer && tree.integer_of(*value) > 0)
      return static_cast<std::uint64_t>(tree.integer_of(*value));
    if (tree.kind(*value) == Kind::unsigned_integer) return tree.unsigned_of(*value);
  }
  return std::nullopt;
}

// Merges the per-device histories by time; each device keeps its own order even where its
// clock readings are not monotonic, and ties go to the lower device.
void merge_into(Trace& trace, std::vector<DeviceEvents>& devices) {
  std::size_t total = 0;
  for (const DeviceEvents& d : devices) total += d.events.size();
  trace.reserve(total);
  std::vector<std::size_t> next(devices.size(), 0);
  for (;;) {
    std::size_t best = devices.size();
    for (std::size_t d = 0; d < devices.size(); ++d)
      if (next[d] < devices[d].events.size() &&
          (best == devices.size() ||
           devices[d].events[next[d]].time_ns < devices[best].events[next[best]].time_ns))
        best = d;
    if (best == devices.size()) return;
    DeviceEvents& device = devices[best];
    const HistoryStep& p = device.events[next[best]++];
    Event e;
    e.time_ns = p.time_ns;
    e.op = p.op;
    e.device = static_cast<DeviceId>(best);
    e.kind = p.mapping ? MemoryKind::vmm : MemoryKind::device;
    e.stream = p.stream;
    e.address = p.address;
    e.size = p.size;
    e.segment = p.segment;
    trace.push_back(e);
    if (p.label != 0) trace.set_label(trace.size() - 1, std::move(device.labels[p.label - 1]));
    trace.set_stack_id(trace.size() - 1, p.stack);
  }
}

// The allocator state at the first entry (alloclab/format/start_state.hpp), when the history
// did not start with an empty allocator. What the state lacks is said among the warnings.
void add_start_state(const PlainTree& tree, Id root, const std::string& name, bool cut,
                     const std::vector<DeviceEvents>& devices, Trace& trace) {
  const auto segments = tree.find(root, "segments");
  std::vector<interchange_detail::DumpedDevice> dumped =
      segments ? interchange_detail::read_dumped_segments(tree, *segments, name, devices.size())
               : std::vector<interchange_detail::DumpedDevice>(devices.size());
  StartState state;
  for (std::size_t d = 0; d < devices.size(); ++d) {
    // Walking back from nothing through a history that frees only what it allocated leaves
    // nothing: most snapshots of a whole run skip the walk.
    if (dumped[d].segments.empty() && devices[d].orphan_frees == 0) continue;
    interchange_detail::walk_back(static_cast<DeviceId>(d), dumped[d], devices[d].events,
                                  segments && !cut,
                                  name + ": device_traces[" + std::to_string(d) + "]", state);
  }
  interchange_detail::check_blocks_in_segments(state, name);
  if (state.empty()) return;
  check_start_state(state, name);
  for (const std::string& gap : state.gaps) trace.warnings.push_back(gap);
  trace.metadata[kStartStateKey] = to_json(state);
}

// How a cut pickle ended, for the mapping's messages.
struct CutAt {
  std::uint64_t offset;
  std::string what;
};

// The one mapping from a snapshot document, JSON or pickle, to a trace.
Trace snapshot_to_trace(const PlainTree& tree, Id root, const std::string& name,
                        const std::optional<CutAt>& cut) {
  if (tree.kind(root) != Kind::dict)
    throw InputError(name + ": not a PyTorch memory snapshot (the top level is not an object)");
  const auto traces = tree.find(root, "device_traces");
  if (!traces) {
    if (cut)
      throw InputError(name + ": byte " + std::to_string(cut->offset) + ": " + cut->what +
                       ", before \"device_traces\" (the file is cut short?)");
    if (tree.find(root, "traceEvents"))
      throw InputError(name + ": " + chrome_trace_explanation(tree, root));
    throw InputError(name + ": not a PyTorch memory snapshot: no \"device_traces\"" +
                     std::string(trace_help));
  }
  if (!is_list(tree, *traces)) throw InputError(name + ": \"device_traces\" is not a list");

  Trace trace;
  trace.metadata["imported_from"] = {{"format", "torch_snapshot"}, {"file", name}};
  const std::span<const Id> device_lists = tree.items(*traces);
  json summary = {{"free_requested", 0}, {"devices", device_lists.size()}};
  std::optional<std::uint64_t> max_entries;
  if (const auto settings = tree.find(root, "allocator_settings")) {
    const std::optional<json> value = tree.to_json(*settings);
    if (!value)
      throw InputError(name +
                       ": \"allocator_settings\" is nested too deeply or too large for "
                       "a memory snapshot's settings");
    summary["allocator_settings"] = *value;
    if (tree.kind(*settings) == Kind::dict) max_entries = max_entries_of(tree, *settings);
  } else {
    summary["allocator_settings"] = json::object();
  }

  bool may_be_cut = false;
  std::uint64_t missing_time = 0, cut_entries = 0;
  StackTable stacks(tree, trace);
  std::vector<DeviceEvents> devices;
  // A pickle may list one history under many devices (its memo): read so, a file of a few bytes
  // per device would make a trace of every device times the history.
  std::unordered_map<Id, std::size_t> first_device_of;
  for (std::size_t d = 0; d < device_lists.size(); ++d) {
    const Id entries = device_lists[d];
    if (!is_list(tree, entries)) {
      if (!tree.is_cut(*traces))
        throw InputError(name + ": device_traces[" + std::to_string(d) + "] is not a list");
      devices.emplace_back();  // in place of a device's list: what a cut left
      continue;
    }
    if (const auto [it, added] = first_device_of.try_emplace(entries, d); !added)
      throw InputError(name + ": device_traces[" + std::to_string(d) + "] is device_traces[" +
                       std::to_string(it->second) +
                       "] again (the same list): a snapshot has one history per device");
    DeviceReader reader(tree, name, d, stacks);
    devices.push_back(reader.read(entries, summary));
    devices.back().orphan_frees = reader.stats().orphan_frees;
    missing_time += reader.missing_time();
    const DeviceStats& stats = reader.stats();
    cut_entries += stats.cut_entries;
    const std::string where = name + ": device_traces[" + std::to_string(d) + "]";
    if (max_entries && stats.entries >= *max_entries) {
      may_be_cut = true;
      trace.warnings.push_back(where + " holds " + std::to_string(stats.entries) +
                               " entries, the ring buffer's size (" + std::to_string(*max_entries) +
                               "): older events may be lost");
    }
    if (stats.orphan_frees > 0) {
      may_be_cut = true;
      trace.warnings.push_back(
          where + " frees " + std::to_string(stats.orphan_frees) +
          " block(s) it never allocated: its beginning was cut (ring buffer "
          "full, or recording started late); replays start from the state at its first "
          "entry");
    }
  }
  if (missing_time > 0)
    trace.warnings.push_back(name + ": " + std::to_string(missing_time) +
                             " entries without time_us (an older PyTorch?): their time is 0");
  if (summary.contains("unknown_actions"))
    trace.warnings.push_back(name + ": ignored entries with unknown actions " +
                             summary["unknown_actions"].dump());
  summary["ring_buffer_may_have_cut"] = may_be_cut;
  if (cut) {
    std::uint64_t read = 0;
    for (const DeviceEvents& d : devices) read += d.events.size();
    trace.warnings.push_back(
        name + ": byte " + std::to_string(cut->offset) + ": " + cut->what +
        " (the file is cut short?): kept the " + std::to_string(read) + " events read before it" +
        (cut_entries > 0 ? ", skipped " + std::to_string(cut_entries) + " unfinished entr" +
                               (cut_entries == 1 ? "y" : "ies")
                         : std::string()));
    summary["cut_at_byte"] = cut->offset;
  }
  trace.metadata["torch_snapshot"] = std::move(summary);
  add_start_state(tree, root, name, cut.has_value(), devices, trace);
  try {
    merge_into(trace, devices);
  } catch (const InputError& e) {
    throw InputError(name + ": " + e.what());
  }
  return trace;
}

// Builds a PlainTree from JSON text with nlohmann's SAX parser: the text's values go straight
// into the tree, with no JSON DOM beside it.
class JsonToTree {
 public:
  JsonToTree(PlainTree& tree, const std::string& text, const std::string& name)
      : tree_(tree), text_(text), name_(name) {}

  Id root() const { return root_; }

  bool null() { return add(tree_.null()); }
  bool boolean(bool value) { return add(tree_.boolean(value)); }
  bool number_integer(std::int64_t value) { return add(tree_.integer(value)); }
  bool number_unsigned(std::uint64_t value) { return add(tree_.unsigned_integer(value)); }
  bool number_float(double value, const std::string&) { return add(tree_.real(value)); }
  bool string(std::string& value) { return add(tree_.text(value)); }
  bool binary(json::binary_t& value) {
    return add(
        tree_.bytes(std::string_view(reinterpret_cast<const char*>(value.data()), value.size())));
  }
  bool start_object(std::size_t) {
    open_.push_back({tree_.dict(), {}});
    return true;
  }
  bool key(std::string& key) {
    open_.back().items.push_back(tree_.text(key));
    return true;
  }
  bool end_object() { return close(); }
  bool start_array(std::size_t) {
    open_.push_back({tree_.list(), {}});
    return true;
  }
  bool end_array() { return close(); }

  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& error) {
    std::string what = error.what();
    if (const auto pos = what.find("] "); pos != std::string::npos) what.erase(0, pos + 2);
    if (const auto* parse = dynamic_cast<const json::parse_error*>(&error)) {
      const std::size_t end =
          std::min<std::size_t>(parse->byte == 0 ? 0 : parse->byte - 1, text_.size());
      const auto line = 1 + std::count(text_.begin(), text_.begin() + static_cast<long>(end), '\n');
      throw_at_line(name_, static_cast<std::uint64_t>(line), "not valid JSON: " + what);
    }
    // A number beyond a double's range (1e999) is reported as out_of_range, with no position.
    throw InputError(name_ + ": not valid JSON: " + what);
  }

 private:
  struct Open {
    Id container;
    std::vector<Id> items;
  };

  bool add(Id id) {
    if (open_.empty())
      root_ = id;
    else
      open_.back().items.push_back(id);
    return true;
  }
  bool close() {
    Open done = std::move(open_.back());
    open_.pop_back();
    tree_.extend(done.container, std::move(done.items));
    return add(done.container);
  }

  PlainTree& tree_;
  const std::string& text_;
  const std::string& name_;
  std::vector<Open> open_;
  Id root_ = 0;
};

// A stream over bytes in memory.
class MemoryBuffer : public std::streambuf {
 public:
  explicit MemoryBuffer(std::string_view bytes) {
    char* begin = const_cast<char*>(bytes.data());
    setg(begin, begin, begin + bytes.size());
  }
};

Trace map_pickle(PickleDocument document, const std::string& name) {
  std::optional<CutAt> cut;
  if (document.cut) cut = CutAt{document.cut->offset, document.cut->what};
  return snapshot_to_trace(document.tree, document.root, name, cut);
}

}  // namespace

Trace parse_torch_snapshot_json(const std::string& json_text, const std::string& name) {
  PlainTree tree;
  JsonToTree builder(tree, json_text, name);
  try {
    json::sax_parse(json_text, &builder);
  } catch (const PlainTree::TooLarge& e) {
    throw InputError(name + ": " + e.what() + ": more than any memory snapshot holds");
  }
  return snapshot_to_trace(tree, builder.root(), name, std::nullopt);
}

Trace read_torch_snapshot_json(const std::string& path) {
  return parse_torch_snapshot_json(interchange_detail::read_json_text(path), path);
}

Trace parse_torch_snapshot_pickle(std::string_view bytes, const std::string& name) {
  MemoryBuffer buffer(bytes);
  std::istream in(&buffer);
  return map_pickle(interchange_detail::read_pickle(in, name, bytes.size()), name);
}

Trace read_torch_snapshot(const std::string& path) {
  interchange_detail::InputFile file(path);
  // One open, one look at the first byte without taking it: a pipe is read once.
  if (file.stream().peek() == 0x80)
    return map_pickle(interchange_detail::read_pickle(file.stream(), path,
                                                      interchange_detail::plain_file_size(path)),
                      path);
  return parse_torch_snapshot_json(interchange_detail::read_json_text(file.stream(), path), path);
}

}  // namespace alloclab
