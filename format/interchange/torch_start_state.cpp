#include "torch_start_state.hpp"

#include <algorithm>
#include <unordered_map>

#include "alloclab/format/error.hpp"

namespace alloclab::interchange_detail {
namespace {

using Id = PlainTree::Id;
using Kind = PlainTree::Kind;

class SegmentReader {
 public:
  SegmentReader(const PlainTree& tree, const std::string& name) : tree_(tree), name_(name) {}

  void read(std::size_t index, Id segment, std::vector<DumpedDevice>& devices) {
    at_ = name_ + ": segments[" + std::to_string(index) + "]";
    if (tree_.kind(segment) != Kind::dict) fail("is not an object: " + tree_.describe(segment));
    const std::uint64_t device = number(segment, "device");
    if (device >= devices.size())
      fail("device " + std::to_string(device) + ", but device_traces lists " +
           std::to_string(devices.size()) + " device(s)");
    DumpedDevice& out = devices[device];
    StartSegment s;
    s.device = static_cast<DeviceId>(device);
    s.address = number(segment, "address");
    s.size = number(segment, "total_size");
    s.stream = number(segment, "stream", true);
    if (const auto type = tree_.find(segment, "segment_type")) {
      const std::string_view t = tree_.kind(*type) == Kind::text ? tree_.text_of(*type) : "";
      if (t == "small")
        s.pool = SegmentPool::small;
      else if (t == "large")
        s.pool = SegmentPool::large;
      else
        fail("'segment_type' is not \"small\" or \"large\": " + tree_.describe(*type));
    }
    if (const auto expandable = tree_.find(segment, "is_expandable");
        expandable && tree_.kind(*expandable) == Kind::boolean && tree_.boolean_of(*expandable))
      ++out.expandable_segments;
    if (const auto pool = tree_.find(segment, "segment_pool_id"); pool && private_pool(*pool))
      ++out.private_pool_segments;
    out.segments.push_back(s);

    const auto blocks = tree_.find(segment, "blocks");
    if (!blocks) return;
    if (tree_.kind(*blocks) != Kind::list && tree_.kind(*blocks) != Kind::tuple)
      fail("'blocks' is not a list");
    std::uint64_t address = s.address;
    const std::span<const Id> items = tree_.items(*blocks);
    for (std::size_t k = 0; k < items.size(); ++k) {
      const std::string segment_at = at_;
      at_ += ".blocks[" + std::to_string(k) + "]";
      const Id block = items[k];
      if (tree_.kind(block) != Kind::dict) fail("is not an object");
      const std::uint64_t size = number(block, "size");
      // Older snapshots give no block addresses: a segment's blocks tile it in order.
      if (tree_.find(block, "address")) address = number(block, "address");
      if (address < s.address || address - s.address > s.size || size > s.size ||
          address - s.address > s.size - size)
        fail("lies outside its segment [" + std::to_string(s.address) + ", +" +
             std::to_string(s.size) + ")");
      const auto state = tree_.find(block, "state");
      if (!state || tree_.kind(*state) != Kind::text) fail("'state' missing or not text");
      const std::string_view st = tree_.text_of(*state);
      if (st == "active_allocated" || st == "active_pending_free") {
        const std::uint64_t requested =
            tree_.find(block, "requested_size") ? number(block, "requested_size") : size;
        out.live_blocks.push_back(StartBlock{s.device, s.stream, address, requested, size});
      } else if (st != "inactive") {
        fail("'state' is not active_allocated, active_pending_free or inactive: " +
             tree_.describe(*state));
      }
      address += size;
      at_ = segment_at;
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw InputError(at_ + ": " + what); }

  std::uint64_t number(Id dict, const char* key, bool allow_negative = false) const {
    const auto value = tree_.find(dict, key);
    if (!value) fail(std::string("no '") + key + "'");
    if (tree_.kind(*value) == Kind::unsigned_integer) return tree_.unsigned_of(*value);
    if (tree_.kind(*value) == Kind::integer) {
      const std::int64_t n = tree_.integer_of(*value);
      // Streams are pointers PyTorch stores as int64: keep their bits.
      if (n < 0 && !allow_negative) fail(std::string("negative '") + key + "'");
      return static_cast<std::uint64_t>(n);
    }
    fail(std::string("'") + key + "' is not an integer: " + tree_.describe(*value));
  }

  // PyTorch's MempoolId_t: (0, 0) for the default pools.
  bool private_pool(Id pool) const {
    if (tree_.kind(pool) != Kind::list && tree_.kind(pool) != Kind::tuple) return false;
    for (const Id item : tree_.items(pool))
      if (!(tree_.kind(item) == Kind::integer && tree_.integer_of(item) == 0)) return true;
    return false;
  }

  const PlainTree& tree_;
  const std::string& name_;
  std::string at_;
};

std::string bytes_text(std::uint64_t bytes) {
  return std::to_string(bytes) + " bytes";
}

// A block the history frees was live at its first entry, and its free names only the request:
// its size is not known. But the space after it up to the next live block is one free piece
// (PyTorch merges free neighbours), and an allocation takes the front of the piece it is cut
// from. So the first allocation the history makes in that space while the block is live is at
// the block's end. Blocks whose space sees no such allocation stay unsized.
void size_from_later_allocations(std::span<StartBlock> blocks,
                                 std::span<const StartSegment> segments,
                                 std::span<const HistoryStep> history) {
  // The unsized blocks, by address, each with the end of the space after it.
  struct Unsized {
    std::uint64_t address, space_end;
    StartBlock* block;
    bool live = true;
  };
  std::vector<Unsized> unsized;
  const std::vector<std::optional<std::size_t>> segment_of = segment_of_blocks(blocks, segments);
  for (std::size_t k = 0; k < blocks.size(); ++k) {
    if (blocks[k].capacity || !segment_of[k]) continue;  // sized, or its segment guessed
    const StartSegment& seg = segments[*segment_of[k]];
    std::uint64_t end = seg.address + seg.size;
    if (k + 1 < blocks.size()) end = std::min(end, blocks[k + 1].address);
    unsized.push_back({blocks[k].address, end, &blocks[k]});
  }
  if (unsized.empty()) return;
  std::size_t left = unsized.size();
  for (const HistoryStep& step : history) {
    if (step.segment || (step.op != alloclab::Op::alloc && step.op != alloclab::Op::free)) continue;
    auto it = std::upper_bound(unsized.begin(), unsized.end(), step.address,
                               [](std::uint64_t a, const Unsized& u) { return a < u.address; });
    if (it == unsized.begin()) continue;
    --it;
    if (!it->live) continue;
    if (step.op == alloclab::Op::free) {
      if (step.address == it->address) it->live = false, --left;
    } else if (step.address > it->address && step.address < it->space_end) {
      const std::uint64_t capacity = step.address - it->address;
      if (capacity >= it->block->requested) it->block->capacity = capacity;
      it->live = false;
      --left;
    }
    if (left == 0) return;
  }
}

}  // namespace

std::vector<DumpedDevice> read_dumped_segments(const PlainTree& tree, Id segments,
                                               const std::string& name, std::size_t devices) {
  std::vector<DumpedDevice> out(devices);
  if (tree.kind(segments) != Kind::list && tree.kind(segments) != Kind::tuple)
    throw InputError(name + ": \"segments\" is not a list");
  SegmentReader reader(tree, name);
  const std::span<const Id> items = tree.items(segments);
  for (std::size_t i = 0; i < items.size(); ++i) reader.read(i, items[i], out);
  return out;
}

void walk_back(DeviceId device, const DumpedDevice& dumped, std::span<const HistoryStep> history,
               bool dumped_matches_history, const std::string& where, StartState& state) {
  // Hash maps: a history holds millions of entries; the result is sorted once at the end.
  std::unordered_map<std::uint64_t, StartSegment> segments;
  std::unordered_map<std::uint64_t, StartBlock> blocks;
  if (dumped_matches_history) {
    for (const StartSegment& s : dumped.segments) segments.emplace(s.address, s);
    for (const StartBlock& b : dumped.live_blocks) blocks.emplace(b.address, b);
    if (dumped.expandable_segments > 0)
      state.gaps.push_back(where + ": " + std::to_string(dumped.expandable_segments) +
                           " expandable segment(s), which a replay starts from as "
                           "fixed-size segments");
    if (dumped.private_pool_segments > 0)
      state.gaps.push_back(where + ": " + std::to_string(dumped.private_pool_segments) +
                           " segment(s) of private pools (CUDA graphs), which the model does not "
                           "have: taken as segments of the default pools");
  } else if (!dumped.segments.empty()) {
    state.gaps.push_back(where +
                         ": the file is cut short, so the segments it dumped are not the state "
                         "at the end of the history read: the start state holds only what that "
                         "history frees");
  }
  // With the dumped state, every allocation of the history is live at its end or freed later
  // in it; one that is neither means the two disagree. Without it, that is expected.
  std::uint64_t unexplained_blocks = 0, unexplained_segments = 0, mappings = 0;
  for (auto it = history.rbegin(); it != history.rend(); ++it) {
    const HistoryStep& step = *it;
    if (step.op != alloclab::Op::alloc && step.op != alloclab::Op::free) continue;
    if (step.mapping) {
      ++mappings;
      continue;
    }
    if (step.segment) {
      if (step.op == alloclab::Op::alloc) {
        if (segments.erase(step.address) == 0) ++unexplained_segments;
      } else {
        segments.insert_or_assign(step.address, StartSegment{device, step.stream, step.address,
                                                             step.size, SegmentPool::unknown});
      }
      continue;
    }
    if (step.op == alloclab::Op::alloc) {
      if (blocks.erase(step.address) == 0) ++unexplained_blocks;
    } else {
      // PyTorch's free_completed names the request; the block's size is not known.
      blocks.insert_or_assign(
          step.address, StartBlock{device, step.stream, step.address, step.size, std::nullopt});
    }
  }
  if (dumped_matches_history && (unexplained_blocks > 0 || unexplained_segments > 0))
    state.gaps.push_back(where + ": " + std::to_string(unexplained_blocks) + " allocation(s) and " +
                         std::to_string(unexplained_segments) +
                         " segment allocation(s) of the history are neither live in the dumped "
                         "segments nor freed later: the history and the dump disagree");
  if (mappings > 0)
    state.gaps.push_back(where + ": " + std::to_string(mappings) +
                         " segment_map/segment_unmap entries (expandable segments) are not "
                         "followed back");
  const auto by_address = [](const auto& a, const auto& b) { return a.address < b.address; };
  const std::size_t first_segment = state.segments.size(), first_block = state.blocks.size();
  for (const auto& [address, s] : segments) state.segments.push_back(s);
  for (const auto& [address, b] : blocks) state.blocks.push_back(b);
  std::sort(state.segments.begin() + static_cast<std::ptrdiff_t>(first_segment),
            state.segments.end(), by_address);
  std::sort(state.blocks.begin() + static_cast<std::ptrdiff_t>(first_block), state.blocks.end(),
            by_address);
  size_from_later_allocations(std::span<StartBlock>(state.blocks).subspan(first_block),
                              std::span<const StartSegment>(state.segments).subspan(first_segment),
                              history);
}

void check_blocks_in_segments(StartState& state, const std::string& name) {
  std::uint64_t outside = 0, outside_bytes = 0;
  const std::vector<std::optional<std::size_t>> segment_of =
      segment_of_blocks(state.blocks, state.segments);
  for (std::size_t k = 0; k < state.blocks.size(); ++k) {
    if (segment_of[k]) continue;
    ++outside;
    outside_bytes += state.blocks[k].capacity.value_or(state.blocks[k].requested);
  }
  if (outside == 0) return;
  state.guessed_bytes += outside_bytes;
  state.gaps.push_back(name + ": " + std::to_string(outside) +
                       " block(s) live at the first entry (" + bytes_text(outside_bytes) +
                       ") lie in no segment the snapshot gives (no \"segments\", or a cut file): "
                       "their segments are guessed");
}

}  // namespace alloclab::interchange_detail
