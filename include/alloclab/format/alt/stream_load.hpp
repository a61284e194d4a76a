#pragma once
// Loading a .alt trace straight into what a replay needs: the resolved trace and its summary,
// with the events streamed from the file a batch at a time. The event columns of the whole trace
// (24 bytes per event) never exist, so a large trace needs about the resolved trace's memory
// instead of both at once. The result is what resolve() and summarize() give for read_alt's
// trace, field by field.
#include <cstdint>
#include <string>

#include "alloclab/format/alt/alt.hpp"
#include "alloclab/format/resolve.hpp"
#include "alloclab/format/summary.hpp"

namespace alloclab {

struct ResolvedLoad {
  ResolvedTrace resolved;
  TraceSummary summary;  // `source` and `file_bytes` are left to the caller, as with summarize()
  // The trace's metadata (Trace::metadata): what the recorder or the importer said about it, e.g.
  // a PyTorch snapshot's `torch_snapshot.allocator_settings`.
  nlohmann::json metadata = nlohmann::json::object();
};

// Errors and warnings as read_alt: InputError for an unusable header, warnings (in
// summary.warnings) for damaged or missing chunks.
ResolvedLoad load_alt_resolved(const std::string& path, AltLoadStats* stats = nullptr,
                               std::uint64_t batch_events = alt_stream_batch_events,
                               const ResolveOptions& options = {});

}  // namespace alloclab
