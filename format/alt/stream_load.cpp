#include "alloclab/format/alt/stream_load.hpp"

#include <memory>

namespace alloclab {

ResolvedLoad load_alt_resolved(const std::string& path, AltLoadStats* stats,
                               std::uint64_t batch_events, const ResolveOptions& options) {
  std::unique_ptr<StreamResolver> resolver;
  EventTally events;
  AltStreamResult read = stream_alt(
      path,
      [&](std::uint64_t expected) {
        resolver = std::make_unique<StreamResolver>(expected, path, options);
      },
      [&](const Trace& batch) {
        resolver->add(batch);
        events.add(batch);
      },
      stats, batch_events);
  ResolvedLoad out;
  out.resolved = resolver->finish(read.origins);
  out.summary = summarize(events, out.resolved, read.memory_bytes, std::move(read.warnings));
  out.metadata = std::move(read.metadata);
  return out;
}

}  // namespace alloclab
