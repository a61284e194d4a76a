// The .alt reader on arbitrary bytes. Input that starts with the .alt magic is read as a whole
// file (header, checksums, damaged and truncated chunks, resynchronisation), and also from a
// file by read_alt_tail (`record`'s summary: chunk headers one by one, then the last chunk),
// which must agree with the whole read where that found the file intact. Any other input
// becomes the decompressed payload of well-formed chunks (two bytes of event count, then the
// column bytes; a group of two chunks with that payload), so that the fuzzer reaches the
// column decoder instead of spending its time failing checksums and zstd frames.
#include <zstd.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "alloclab/format/alt/alt.hpp"
#include "format/alt/layout.hpp"
#include "fuzz_common.hpp"

namespace {

using namespace alloclab::detail;

void append_u32(std::vector<std::uint8_t>& out, std::uint32_t value) {
  std::uint8_t bytes[4];
  put_u32(bytes, value);
  out.insert(out.end(), bytes, bytes + 4);
}

std::vector<std::uint8_t> wrap_in_a_group(const std::uint8_t* data, std::size_t size) {
  const std::uint32_t events = size >= 2 ? data[0] | (data[1] << 8) : 0;
  const std::uint8_t* raw = size >= 2 ? data + 2 : data;
  const std::size_t raw_size = size >= 2 ? size - 2 : size;

  std::vector<std::uint8_t> file(alt_magic.begin(), alt_magic.end());
  const std::string metadata = "{}";
  append_u32(file, alloclab::alt_format_version);
  append_u32(file, static_cast<std::uint32_t>(metadata.size()));
  file.insert(file.end(), metadata.begin(), metadata.end());
  append_u32(file, crc32_of(file.data() + 8, 8 + metadata.size()));

  // One compression context for the whole run: each one is a large allocation.
  static const std::unique_ptr<ZSTD_CCtx, decltype(&ZSTD_freeCCtx)> cctx(ZSTD_createCCtx(),
                                                                         ZSTD_freeCCtx);
  std::vector<std::uint8_t> payload(ZSTD_compressBound(raw_size));
  const std::size_t stored =
      ZSTD_compressCCtx(cctx.get(), payload.data(), payload.size(), raw, raw_size, 1);
  if (ZSTD_isError(stored)) std::abort();
  payload.resize(stored);

  // Twice: the second chunk continues the group of the first, so its columns are decoded
  // against whatever state the first one left.
  for (std::uint32_t position = 0; position < 2; ++position) {
    const std::size_t chunk = file.size();
    append_u32(file, alt_chunk_magic);
    append_u32(file, events | position << alt_group_position_shift);
    append_u32(file, static_cast<std::uint32_t>(stored));
    append_u32(file, static_cast<std::uint32_t>(raw_size));
    append_u32(file, crc32_of(payload.data(), payload.size()));
    append_u32(file, crc32_of(file.data() + chunk, 20));
    file.insert(file.end(), payload.begin(), payload.end());
  }
  return file;
}

void fail(const char* what) {
  std::fprintf(stderr, "read_alt_tail disagrees with read_alt: %s\n", what);
  std::abort();
}

// A clean file (read whole without a warning) gives the same count, and its last chunk, from
// the tail read; a damaged one only must not crash it.
void check_tail_read(const std::uint8_t* data, std::size_t size) {
  static const std::string path = "/tmp/fuzz_alt_tail." + std::to_string(::getpid()) + ".alt";
  std::FILE* out = std::fopen(path.c_str(), "wb");
  if (!out) std::abort();
  if (std::fwrite(data, 1, size, out) != size) std::abort();
  std::fclose(out);
  alloclab::fuzz::expect_clean([&] {
    alloclab::AltLoadStats whole_stats;
    const alloclab::Trace whole =
        alloclab::parse_alt(std::vector<std::uint8_t>(data, data + size), path, &whole_stats);
    alloclab::AltLoadStats tail_stats;
    const alloclab::Trace tail = alloclab::read_alt_tail(path, &tail_stats);
    if (!whole.warnings.empty()) return;
    if (!tail.warnings.empty()) fail("warnings on a clean file");
    if (tail_stats.events != whole_stats.events) fail("event counts");
    if (tail.size() > whole.size()) fail("the last chunk is longer than the trace");
    const std::size_t offset = whole.size() - tail.size();
    // The tail read leaves the addresses out (they may depend on earlier chunks).
    for (std::size_t i = 0; i < tail.size(); ++i)
      if (tail.address(i) != 0 || tail.op(i) != whole.op(offset + i) ||
          tail.size_of(i) != whole.size_of(offset + i) ||
          tail.time_ns(i) != whole.time_ns(offset + i))
        fail("the last chunk's events");
  });
  std::remove(path.c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::uint8_t> file;
  const bool whole_file =
      size >= alt_magic.size() && std::memcmp(data, alt_magic.data(), alt_magic.size()) == 0;
  if (whole_file)
    file.assign(data, data + size);
  else
    file = wrap_in_a_group(data, size);
  alloclab::fuzz::expect_clean([&] {
    const alloclab::Trace trace = alloclab::parse_alt(std::move(file), "fuzz.alt");
    alloclab::fuzz::resolve_and_summarize(trace);
  });
  if (whole_file) check_tail_read(data, size);
  return 0;
}
