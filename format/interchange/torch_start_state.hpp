#pragma once
// Private to alloclab_format: the allocator state at the first history entry of a PyTorch
// snapshot, from the state it was dumped in (`segments`) walked back through its history.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "alloclab/format/event.hpp"
#include "alloclab/format/start_state.hpp"
#include "plain_tree.hpp"

namespace alloclab::interchange_detail {

// One entry of one device's history, before the devices are merged by time.
struct HistoryStep {
  std::uint64_t time_ns = 0;
  std::uint64_t address = 0;
  std::uint64_t size = 0;
  std::uint64_t stream = 0;
  std::uint32_t stack = 0;  // id in the trace's stack table; 0: none
  std::uint32_t label = 0;  // 1 + index into the device's labels; 0: none
  alloclab::Op op = alloclab::Op::alloc;
  bool segment = false;
  // A segment_map or segment_unmap: expandable segments map physical memory into a reserved
  // range (cuMemCreate + cuMemMap), which is what MemoryKind::vmm stands for.
  bool mapping = false;
};

// A device's segments as the snapshot dumped them.
struct DumpedDevice {
  std::vector<StartSegment> segments;
  std::vector<StartBlock> live_blocks;  // active_allocated and active_pending_free blocks
  // Segments the model cannot start from as they are.
  std::uint64_t expandable_segments = 0;
  std::uint64_t private_pool_segments = 0;  // CUDA graph pools
};

// The snapshot's `segments`, by device index (devices beyond `devices` are refused). Throws
// InputError naming `name` and the item for a value that is not a segment.
std::vector<DumpedDevice> read_dumped_segments(const PlainTree& tree, PlainTree::Id segments,
                                               const std::string& name, std::size_t devices);

// Walks `history` (one device's, in order) back from `dumped`, adding the device's segments
// and blocks at its first entry to `state`. `dumped_matches_history`: the dumped state is the
// one at the history's end (false when the file was cut short: then only what the history
// itself frees is known, and the gap is said).
void walk_back(DeviceId device, const DumpedDevice& dumped, std::span<const HistoryStep> history,
               bool dumped_matches_history, const std::string& where, StartState& state);

// Blocks outside every segment of `state`: counted in guessed_bytes and said in gaps.
void check_blocks_in_segments(StartState& state, const std::string& name);

}  // namespace alloclab::interchange_detail
