// The .alt reader on arbitrary bytes. Input that starts with the .alt magic is read as a whole
// file (header, checksums, damaged and truncated chunks, resynchronisation). Any other input
// becomes the decompressed payload of one well-formed chunk (two bytes of event count, then
// the column bytes), so that the fuzzer reaches the column decoder instead of spending its time
// failing checksums and zstd frames.
#include <zstd.h>

#include <cstring>
#include <memory>
#include <vector>

#include "alloclab/trace/alt.hpp"
#include "fuzz_common.hpp"
#include "tracer/format/alt_layout.hpp"

namespace {

using namespace alloclab::detail;

void append_u32(std::vector<std::uint8_t>& out, std::uint32_t value) {
  std::uint8_t bytes[4];
  put_u32(bytes, value);
  out.insert(out.end(), bytes, bytes + 4);
}

std::vector<std::uint8_t> wrap_in_one_chunk(const std::uint8_t* data, std::size_t size) {
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

  const std::size_t chunk = file.size();
  append_u32(file, alt_chunk_magic);
  append_u32(file, events);
  append_u32(file, static_cast<std::uint32_t>(stored));
  append_u32(file, static_cast<std::uint32_t>(raw_size));
  append_u32(file, crc32_of(payload.data(), payload.size()));
  append_u32(file, crc32_of(file.data() + chunk, 20));
  file.insert(file.end(), payload.begin(), payload.end());
  return file;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::uint8_t> file;
  if (size >= alt_magic.size() && std::memcmp(data, alt_magic.data(), alt_magic.size()) == 0)
    file.assign(data, data + size);
  else
    file = wrap_in_one_chunk(data, size);
  alloclab::fuzz::expect_clean([&] {
    const alloclab::Trace trace = alloclab::parse_alt(std::move(file), "fuzz.alt");
    alloclab::fuzz::resolve_and_summarize(trace);
  });
  return 0;
}
