// Where a trace's bytes go: encodes it in the current .alt version, chunk by chunk as the
// writers do, and compresses each column on its own, printing bytes per event for each. Column
// by column is how the format is tuned (docs/alt-format.md); the sum is close to, not equal to,
// the file size (a writer compresses a chunk as one zstd frame of per-column blocks).
//
//   alt_column_sizes TRACE.alt [--level N] [--chunk EVENTS] [--group EVENTS]
//   (defaults: zstd level 1, as the recorder writes at high event rates; 65,536 events a chunk,
//   groups of 524,288 events as every writer makes them; --group 0: each chunk on its own)
#include <zstd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "alloclab/format/alt/alt.hpp"
#include "format/alt/codec.hpp"

namespace {

// In the order encode_chunk ends them (EncodeScratch::section_ends).
constexpr const char* column_names[] = {"tables, attrs, origins",
                                        "time before allocations",
                                        "time before other events",
                                        "size, low byte",
                                        "size, second byte",
                                        "size, the rest",
                                        "sizes of other events",
                                        "free refs, low byte",
                                        "free refs, second byte",
                                        "free refs, the rest",
                                        "reuse codes",
                                        "recent frees, low byte",
                                        "recent frees, second byte",
                                        "recent frees, the rest",
                                        "allocs back, low byte",
                                        "allocs back, second byte",
                                        "allocs back, the rest",
                                        "address deltas"};
constexpr std::size_t column_count = sizeof column_names / sizeof column_names[0];

int usage() {
  std::fprintf(stderr,
               "usage: alt_column_sizes TRACE.alt [--level N] [--chunk EVENTS] [--group EVENTS]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  int level = 1;
  std::size_t chunk = 65536;
  std::size_t group = alloclab::AltWriteOptions{}.events_per_group;
  for (int a = 2; a < argc; ++a) {
    if (std::strcmp(argv[a], "--level") == 0 && a + 1 < argc)
      level = std::atoi(argv[++a]);
    else if (std::strcmp(argv[a], "--chunk") == 0 && a + 1 < argc)
      chunk = std::strtoull(argv[++a], nullptr, 10);
    else if (std::strcmp(argv[a], "--group") == 0 && a + 1 < argc)
      group = std::strtoull(argv[++a], nullptr, 10);
    else
      return usage();
  }
  if (chunk == 0) return usage();
  try {
    const alloclab::Trace trace = alloclab::read_alt(argv[1]);
    alloclab::detail::EncodeScratch scratch;
    alloclab::detail::StackCursor cursor;
    std::vector<std::uint8_t> raw;
    std::vector<std::uint8_t> compressed;
    std::vector<double> raw_bytes(column_count), stored_bytes(column_count);
    alloclab::detail::GroupCursor group_cursor;
    for (std::size_t begin = 0; begin < trace.size(); begin += chunk) {
      const std::size_t end = std::min(trace.size(), begin + chunk);
      // As build_alt_chunk groups them.
      const bool continues = group_cursor.next_continues(end - begin, group, scratch);
      alloclab::detail::encode_chunk(trace, begin, end, cursor, raw, scratch, continues);
      group_cursor.built(end - begin);
      if (scratch.section_ends.size() != column_count) {
        std::fprintf(stderr, "alt_column_sizes: the encoder has %zu columns, this tool knows %zu\n",
                     scratch.section_ends.size(), column_count);
        return 1;
      }
      std::size_t from = 0;
      for (std::size_t c = 0; c < column_count; ++c) {
        const std::size_t to = scratch.section_ends[c];
        compressed.resize(ZSTD_compressBound(to - from));
        const std::size_t n = ZSTD_compress(compressed.data(), compressed.size(), raw.data() + from,
                                            to - from, level);
        if (ZSTD_isError(n)) {
          std::fprintf(stderr, "alt_column_sizes: %s\n", ZSTD_getErrorName(n));
          return 1;
        }
        raw_bytes[c] += static_cast<double>(to - from);
        stored_bytes[c] += static_cast<double>(n);
        from = to;
      }
    }
    const double events = trace.empty() ? 1.0 : static_cast<double>(trace.size());
    std::printf("%s: %zu events, zstd level %d, chunks of %zu events, groups of %zu\n", argv[1],
                trace.size(), level, chunk, group);
    std::printf("%-26s %12s %12s\n", "column", "raw B/ev", "stored B/ev");
    double total_raw = 0, total_stored = 0;
    for (std::size_t c = 0; c < column_count; ++c) {
      std::printf("%-26s %12.3f %12.3f\n", column_names[c], raw_bytes[c] / events,
                  stored_bytes[c] / events);
      total_raw += raw_bytes[c];
      total_stored += stored_bytes[c];
    }
    std::printf("%-26s %12.3f %12.3f\n", "total", total_raw / events, total_stored / events);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "alt_column_sizes: %s\n", e.what());
    return 2;
  }
  return 0;
}
