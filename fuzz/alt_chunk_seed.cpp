// Seeds for fuzz_alt made from .alt files, so that they always follow the current format
// version: for each FILE.alt, OUT_DIR/<name>-chunk holds two bytes of event count and then the
// first 300 events of FILE encoded as one chunk's columns, as fuzz_alt wraps them, and
// OUT_DIR/<name>-file the same events as a whole file in chunks of 100 events. Small inputs
// keep the fuzzer fast (libFuzzer mutates up to the largest seed's length).
//   alt_chunk_seed OUT_DIR FILE.alt...
#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

#include "alloclab/format/alt/alt.hpp"
#include "format/alt/codec.hpp"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: alt_chunk_seed OUT_DIR FILE.alt...\n");
    return 2;
  }
  const std::filesystem::path out_dir = argv[1];
  alloclab::detail::EncodeScratch scratch;
  std::vector<std::uint8_t> columns;
  for (int a = 2; a < argc; ++a) {
    try {
      const alloclab::Trace whole_trace = alloclab::read_alt(argv[a]);
      alloclab::Trace trace;
      trace.metadata = whole_trace.metadata;
      const std::size_t events = std::min<std::size_t>(whole_trace.size(), 300);
      for (std::size_t i = 0; i < events; ++i) trace.push_back(whole_trace.event(i));
      alloclab::detail::StackCursor cursor;
      alloclab::detail::encode_chunk(trace, 0, events, cursor, columns, scratch);
      const std::filesystem::path out =
          out_dir / (std::filesystem::path(argv[a]).stem().string() + "-chunk");
      std::ofstream file(out, std::ios::binary);
      const char count[2] = {static_cast<char>(events & 0xFF), static_cast<char>(events >> 8)};
      file.write(count, 2);
      file.write(reinterpret_cast<const char*>(columns.data()),
                 static_cast<std::streamsize>(columns.size()));
      if (!file) throw std::runtime_error("cannot write " + out.string());
      alloclab::AltWriteOptions options;
      options.events_per_chunk = 100;
      const std::string whole =
          (out_dir / (std::filesystem::path(argv[a]).stem().string() + "-file")).string();
      alloclab::write_alt(trace, whole, options);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "alt_chunk_seed: %s: %s\n", argv[a], e.what());
      return 1;
    }
  }
  return 0;
}
