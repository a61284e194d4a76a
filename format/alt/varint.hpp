#pragma once
// LEB128 varints and zigzag, shared by the .alt encoder and decoder.
#include <cstdint>
#include <vector>

namespace alloclab::detail {

// Writes `v` at `p`, which has room for the ten bytes a 64-bit value may take, and returns
// where it ended: for encoders that reserve a column's worst case and write through a pointer.
[[gnu::always_inline]] inline std::uint8_t* write_varint(std::uint8_t* p, std::uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<std::uint8_t>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<std::uint8_t>(v);
  return p;
}

inline void put_varint(std::vector<std::uint8_t>& out, std::uint64_t v) {
  std::uint8_t bytes[10];
  out.insert(out.end(), bytes, write_varint(bytes, v));
}

inline std::uint64_t zigzag(std::int64_t v) {
  return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}
inline std::int64_t unzigzag(std::uint64_t v) {
  return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1);
}

// Bounds-checked reader over a decompressed payload: a corrupt payload sets `failed` and yields
// zeros instead of reading past the end, so one bad chunk can never crash the loader.
class VarintReader {
 public:
  VarintReader(const std::uint8_t* begin, const std::uint8_t* end) : p_(begin), end_(end) {}

  [[gnu::always_inline]] std::uint64_t next() {
    if (p_ < end_ && *p_ < 0x80) return *p_++;  // the common one-byte case
    return next_long();
  }
  [[gnu::noinline]] std::uint64_t next_long() {
    if (end_ - p_ >= 10) {
      // Far from the end: no bounds check per byte. Ten bytes cover any 64-bit value.
      std::uint64_t v = 0;
      for (unsigned shift = 0; shift < 70; shift += 7) {
        const std::uint8_t byte = *p_++;
        v |= static_cast<std::uint64_t>(byte & 0x7F) << (shift & 63);
        if (byte < 0x80) return shift == 63 && byte > 1 ? fail() : v;
      }
      return fail();
    }
    std::uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) return fail();
      const std::uint8_t byte = *p_++;
      if (shift == 63 && byte > 1) return fail();
      v |= static_cast<std::uint64_t>(byte & 0x7F) << shift;
      if (byte < 0x80) return v;
    }
    return fail();
  }
  const std::uint8_t* take(std::uint64_t n) {
    if (static_cast<std::uint64_t>(end_ - p_) < n) {
      fail();
      return nullptr;
    }
    const std::uint8_t* at = p_;
    p_ += n;
    return at;
  }
  bool failed() const { return failed_; }
  std::uint64_t remaining() const { return static_cast<std::uint64_t>(end_ - p_); }
  bool at_end() const { return p_ == end_; }

 private:
  std::uint64_t fail() {
    failed_ = true;
    p_ = end_;
    return 0;
  }
  const std::uint8_t* p_;
  const std::uint8_t* end_;
  bool failed_ = false;
};

}  // namespace alloclab::detail
