#pragma once
// The recorded allocator's state before a trace's first event. A PyTorch snapshot's history
// rarely starts with an empty allocator (recording began mid-run, or its ring buffer dropped the
// oldest entries): the snapshot's `segments` (the state when it was dumped) walked back through
// the history give the segments held, and the blocks handed out, when the history begins. A
// replay starts every strategy holding those blocks, and a model of the recorded allocator also
// holding those segments (docs/strategy-contract.md, "Start state").
//
// It travels in the trace's metadata (key kStartStateKey), so an `.alt` made from a snapshot
// keeps it.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "alloclab/format/event.hpp"

namespace alloclab {

class Trace;

inline constexpr const char* kStartStateKey = "allocator_state_at_start";

enum class SegmentPool : std::uint8_t { unknown = 0, small = 1, large = 2 };

struct StartSegment {
  DeviceId device = 0;
  std::uint64_t stream = 0;
  std::uint64_t address = 0;
  std::uint64_t size = 0;
  SegmentPool pool = SegmentPool::unknown;  // unknown: a segment the history freed
  bool operator==(const StartSegment&) const = default;
};

// A block handed out before the first event (and not freed before it).
struct StartBlock {
  DeviceId device = 0;
  std::uint64_t stream = 0;
  std::uint64_t address = 0;
  std::uint64_t requested = 0;  // the size the program asked for
  // The block's size in its segment, when the snapshot says (a block still live when it was
  // dumped); nullopt for a block the history frees, whose free names only the request.
  std::optional<std::uint64_t> capacity;
  bool operator==(const StartBlock&) const = default;
};

struct StartState {
  std::vector<StartSegment> segments;  // by device, then address
  std::vector<StartBlock> blocks;      // by device, then address
  // Why the state is incomplete (empty when it is whole): blocks outside every known segment,
  // a snapshot cut short, a history that contradicts the dumped state. A replay still starts
  // from what is known.
  std::vector<std::string> gaps;
  // Bytes of blocks whose segment the snapshot does not give (each then stands in a segment of
  // its own, of the block's size).
  std::uint64_t guessed_bytes = 0;
  bool operator==(const StartState&) const = default;

  bool empty() const { return segments.empty() && blocks.empty(); }
  std::uint64_t segment_bytes() const;
  std::uint64_t block_bytes() const;  // requested bytes
};

// For each of `blocks`, the index into `segments` of the segment it starts in, or nullopt when it
// lies in none. Both lists must be by device, then address (as StartState keeps them): one pass.
std::vector<std::optional<std::size_t>> segment_of_blocks(std::span<const StartBlock> blocks,
                                                          std::span<const StartSegment> segments);

// Throws InputError "WHERE: allocator_state_at_start: ..." unless segments and blocks are each
// in order (device, then address) without overlaps, every block at least its request.
void check_start_state(const StartState& state, const std::string& where);

nlohmann::json to_json(const StartState& state);
// Throws InputError "WHERE: allocator_state_at_start: ..." for a value that is not one (a
// damaged or hand-edited file), naming the item.
StartState start_state_from_json(const nlohmann::json& value, const std::string& where);
// The trace's start state, or nullopt when its metadata has none. Throws as
// start_state_from_json, naming `where` (the trace's file).
std::optional<StartState> start_state_of(const Trace& trace, const std::string& where = "trace");

}  // namespace alloclab
