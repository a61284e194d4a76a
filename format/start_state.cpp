#include "alloclab/format/start_state.hpp"

#include <limits>

#include "alloclab/format/error.hpp"
#include "alloclab/format/trace.hpp"

namespace alloclab {
namespace {

using nlohmann::json;

// Bounds a damaged file cannot push past: more segments or blocks than any device holds.
constexpr std::size_t max_items = std::size_t{1} << 26;

const char* pool_name(SegmentPool pool) {
  switch (pool) {
    case SegmentPool::small:
      return "small";
    case SegmentPool::large:
      return "large";
    case SegmentPool::unknown:
      break;
  }
  return "unknown";
}

class Reader {
 public:
  explicit Reader(const std::string& where) : where_(where + ": " + kStartStateKey) {}

  [[noreturn]] void fail(const std::string& what) const { throw InputError(where_ + what); }

  const json& array(const json& parent, const char* key) const {
    const auto it = parent.find(key);
    if (it == parent.end() || !it->is_array())
      fail(std::string(": '") + key + "' missing or not a list");
    if (it->size() > max_items)
      fail(std::string(": '") + key + "' has " + std::to_string(it->size()) + " items, over " +
           std::to_string(max_items));
    return *it;
  }

  std::uint64_t number(const json& item, std::size_t k, const std::string& at) const {
    if (!item[k].is_number_unsigned() && !(item[k].is_number_integer() && item[k] >= 0))
      fail(at + "[" + std::to_string(k) + "] is not a byte count or address: " + item[k].dump());
    return item[k].get<std::uint64_t>();
  }

  DeviceId device(const json& item, const std::string& at) const {
    if (!item[0].is_number_integer() || item[0] < -1 ||
        item[0] > std::numeric_limits<DeviceId>::max())
      fail(at + "[0] is not a device: " + item[0].dump());
    return item[0].get<DeviceId>();
  }

  const json& tuple(const json& item, std::size_t size, const std::string& at) const {
    if (!item.is_array() || item.size() != size)
      fail(at + " is not a list of " + std::to_string(size) + " values: " + item.dump());
    return item;
  }

 private:
  std::string where_;
};

}  // namespace

std::vector<std::optional<std::size_t>> segment_of_blocks(std::span<const StartBlock> blocks,
                                                          std::span<const StartSegment> segments) {
  std::vector<std::optional<std::size_t>> out(blocks.size());
  std::size_t s = 0;
  for (std::size_t k = 0; k < blocks.size(); ++k) {
    const StartBlock& b = blocks[k];
    const auto ends_before = [&](const StartSegment& seg) {
      return seg.device < b.device ||
             (seg.device == b.device && seg.address + seg.size <= b.address);
    };
    while (s < segments.size() && ends_before(segments[s])) ++s;
    if (s < segments.size() && segments[s].device == b.device && segments[s].address <= b.address)
      out[k] = s;
  }
  return out;
}

void check_start_state(const StartState& state, const std::string& where) {
  const std::string at = where + ": " + kStartStateKey + ": ";
  for (std::size_t k = 0; k < state.segments.size(); ++k) {
    const StartSegment& s = state.segments[k];
    if (s.size == 0 || s.address > UINT64_MAX - s.size)
      throw InputError(at + "segments[" + std::to_string(k) + "] is empty or ends past 2^64");
    if (k > 0) {
      const StartSegment& p = state.segments[k - 1];
      if (p.device > s.device || (p.device == s.device && p.address + p.size > s.address))
        throw InputError(at + "segments[" + std::to_string(k) +
                         "] overlaps the one before it or is out of order");
    }
  }
  for (std::size_t k = 0; k < state.blocks.size(); ++k) {
    const StartBlock& b = state.blocks[k];
    const std::uint64_t extent = b.capacity.value_or(b.requested);
    if (b.capacity && *b.capacity < b.requested)
      throw InputError(at + "blocks[" + std::to_string(k) + "] is smaller than its request");
    if (b.address == 0 || b.address > UINT64_MAX - extent)
      throw InputError(at + "blocks[" + std::to_string(k) + "] is at 0 or ends past 2^64");
    if (k > 0) {
      const StartBlock& p = state.blocks[k - 1];
      if (p.device > b.device ||
          (p.device == b.device && p.address + p.capacity.value_or(p.requested) > b.address))
        throw InputError(at + "blocks[" + std::to_string(k) +
                         "] overlaps the one before it or is out of order");
    }
  }
}

std::uint64_t StartState::segment_bytes() const {
  std::uint64_t sum = 0;
  for (const StartSegment& s : segments) sum += s.size;
  return sum;
}

std::uint64_t StartState::block_bytes() const {
  std::uint64_t sum = 0;
  for (const StartBlock& b : blocks) sum += b.requested;
  return sum;
}

json to_json(const StartState& state) {
  json segments = json::array();
  for (const StartSegment& s : state.segments)
    segments.push_back({s.device, s.stream, s.address, s.size, pool_name(s.pool)});
  json blocks = json::array();
  for (const StartBlock& b : state.blocks)
    blocks.push_back(
        {b.device, b.stream, b.address, b.requested, b.capacity ? json(*b.capacity) : json()});
  return {{"segments", std::move(segments)},
          {"segments_columns", {"device", "stream", "address", "size", "pool"}},
          {"blocks", std::move(blocks)},
          {"blocks_columns", {"device", "stream", "address", "requested", "capacity"}},
          {"gaps", state.gaps},
          {"guessed_bytes", state.guessed_bytes}};
}

StartState start_state_from_json(const json& value, const std::string& where) {
  const Reader read(where);
  if (!value.is_object()) read.fail(" is not an object");
  StartState state;
  const json& segments = read.array(value, "segments");
  state.segments.reserve(segments.size());
  for (std::size_t i = 0; i < segments.size(); ++i) {
    const std::string at = ": segments[" + std::to_string(i) + "]";
    const json& item = read.tuple(segments[i], 5, at);
    StartSegment s;
    s.device = read.device(item, at);
    s.stream = read.number(item, 1, at);
    s.address = read.number(item, 2, at);
    s.size = read.number(item, 3, at);
    const json& pool = item[4];
    if (pool == "small")
      s.pool = SegmentPool::small;
    else if (pool == "large")
      s.pool = SegmentPool::large;
    else if (pool != "unknown")
      read.fail(at + "[4] is not a pool (small, large, unknown): " + pool.dump());
    state.segments.push_back(s);
  }
  const json& blocks = read.array(value, "blocks");
  state.blocks.reserve(blocks.size());
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const std::string at = ": blocks[" + std::to_string(i) + "]";
    const json& item = read.tuple(blocks[i], 5, at);
    StartBlock b;
    b.device = read.device(item, at);
    b.stream = read.number(item, 1, at);
    b.address = read.number(item, 2, at);
    b.requested = read.number(item, 3, at);
    if (!item[4].is_null()) b.capacity = read.number(item, 4, at);
    state.blocks.push_back(b);
  }
  if (const auto gaps = value.find("gaps"); gaps != value.end()) {
    if (!gaps->is_array() || gaps->size() > 1000) read.fail(": 'gaps' is not a short list");
    for (const json& gap : *gaps) {
      if (!gap.is_string()) read.fail(": 'gaps' holds a non-text item: " + gap.dump());
      state.gaps.push_back(gap.get<std::string>());
    }
  }
  if (const auto guessed = value.find("guessed_bytes"); guessed != value.end()) {
    if (!guessed->is_number_unsigned()) read.fail(": 'guessed_bytes' is not a byte count");
    state.guessed_bytes = guessed->get<std::uint64_t>();
  }
  check_start_state(state, where);
  return state;
}

std::optional<StartState> start_state_of(const Trace& trace, const std::string& where) {
  if (!trace.metadata.is_object()) return std::nullopt;
  const auto it = trace.metadata.find(kStartStateKey);
  if (it == trace.metadata.end()) return std::nullopt;
  return start_state_from_json(*it, where);
}

}  // namespace alloclab
