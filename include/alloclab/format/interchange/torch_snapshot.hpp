#pragma once
// PyTorch CUDA caching-allocator snapshots: the pickle torch.cuda.memory._dump_snapshot() writes
// (read natively: only plain data, no code is ever run), or the same snapshot as JSON. Only
// `device_traces` (the allocation history, one list per device) and `allocator_settings` are
// read; the `segments` state is not. docs/formats.md maps each trace action to an event.
//
// Program requests become alloc/free events (a block counts as freed at free_completed; a
// free_requested only waits for its streams and is counted in metadata), the allocator's own
// segment_alloc/segment_free/segment_map/segment_unmap become events with Event::segment set,
// and snapshot/oom become marks. An entry's `frames` become its event's call stack. The history
// is a ring buffer: when it may have been cut, a warning says so and
// metadata["torch_snapshot"]["ring_buffer_may_have_cut"] is true.
#include <string>
#include <string_view>

#include "alloclab/format/trace.hpp"

namespace alloclab {

// A snapshot file, pickle or JSON, told apart by its first byte (0x80 starts a pickle). Throws
// InputError as the two below do.
Trace read_torch_snapshot(const std::string& path);

// Throws InputError when the file is not JSON ("file:line: ..."), not a snapshot, or holds an
// entry it cannot take ("file: device_traces[D][I]: ...").
Trace read_torch_snapshot_json(const std::string& path);
// Same, from the JSON text; `name` is the file name used in messages.
Trace parse_torch_snapshot_json(const std::string& json_text, const std::string& name);

// The pickle, from its bytes. Throws InputError "name: byte N: ..." for a pickle that is damaged
// or holds anything but plain data (an opcode that would import or call code is refused), and
// as above for a snapshot it cannot take. A pickle cut short is read up to the cut, with a
// warning.
Trace parse_torch_snapshot_pickle(std::string_view bytes, const std::string& name);

}  // namespace alloclab
