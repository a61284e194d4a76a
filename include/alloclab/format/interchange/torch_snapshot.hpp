#pragma once
// PyTorch CUDA caching-allocator snapshots (torch.cuda.memory._dump_snapshot), after
// scripts/torch_snapshot_to_json.py turned the pickle into JSON. Only `device_traces` (the
// allocation history, one list per device) and `allocator_settings` are read; the `segments`
// state is not. docs/formats.md maps each trace action to an event.
//
// Program requests become alloc/free events (a block counts as freed at free_completed; a
// free_requested only waits for its streams and is counted in metadata), the allocator's own
// segment_alloc/segment_free/segment_map/segment_unmap become events with Event::segment set,
// and snapshot/oom become marks. The history is a ring buffer: when it may have been cut, a
// warning says so and metadata["torch_snapshot"]["ring_buffer_may_have_cut"] is true.
#include <string>

#include "alloclab/format/trace.hpp"

namespace alloclab {

// Throws InputError when the file is not JSON ("file:line: ..."), not a snapshot, or holds an
// entry it cannot take ("file: device_traces[D][I]: ...").
Trace read_torch_snapshot_json(const std::string& path);
// Same, from the JSON text; `name` is the file name used in messages.
Trace parse_torch_snapshot_json(const std::string& json_text, const std::string& name);

}  // namespace alloclab
