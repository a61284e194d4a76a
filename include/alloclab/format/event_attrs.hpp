#pragma once
// The packed attributes of an event, as a Trace column holds them and an .alt file stores them
// (docs/alt-format.md, `attrs`): 15 bits in a u16,
//
//   bits 0-2   op                 (Op)
//   bits 3-5   memory kind        (MemoryKind)
//   bits 6-12  alignment code     0: the allocator's default; k > 0: an alignment of 2^(k-1)
//   bit  13    segment            the recorded allocator's own call (Event::segment)
//   bit  14    realloc in place   an alloc only (Event::realloc_in_place); .alt version 8 on
//
// The layout is part of the file format: changing it needs a new format version.
#include <bit>
#include <cstdint>

#include "alloclab/format/event.hpp"

namespace alloclab::event_attrs {

inline constexpr unsigned op_shift = 0;
inline constexpr unsigned op_bits = 3;
inline constexpr unsigned kind_shift = op_shift + op_bits;
inline constexpr unsigned kind_bits = 3;
inline constexpr unsigned align_shift = kind_shift + kind_bits;
inline constexpr unsigned align_bits = 7;
inline constexpr unsigned segment_shift = align_shift + align_bits;
inline constexpr unsigned segment_bits = 1;
inline constexpr unsigned realloc_shift = segment_shift + segment_bits;
inline constexpr unsigned realloc_bits = 1;
// Every packed value is below 2^bits (a varint of three bytes at most).
inline constexpr unsigned bits = realloc_shift + realloc_bits;
// The width before the realloc bit existed (.alt versions 1 to 7): every value below 2^14.
inline constexpr unsigned bits_before_realloc = realloc_shift;

inline constexpr std::uint16_t field_mask(unsigned width) {
  return static_cast<std::uint16_t>((1u << width) - 1);
}

// Alignments up to 2^63: the largest power of two in 64 bits.
inline constexpr unsigned max_align_code = 64;

static_assert(op_count <= (1 << op_bits));
static_assert(memory_kind_count <= (1 << kind_bits));
static_assert(max_align_code < (1u << align_bits));
static_assert(bits <= 16);

// Alignment code of `alignment`, which must be 0 or a power of two.
inline constexpr unsigned align_code_of(std::uint64_t alignment) {
  return alignment == 0 ? 0 : static_cast<unsigned>(std::countr_zero(alignment)) + 1;
}
// The alignment an alignment code (1..max_align_code, or 0) stands for.
inline constexpr std::uint64_t alignment_of(unsigned align_code) {
  return align_code == 0 ? 0 : std::uint64_t{1} << (align_code - 1);
}

// `align_code` must be at most max_align_code; Trace::pack_attrs checks an alignment first.
// `realloc_in_place` only with Op::alloc (valid() refuses it on anything else).
inline constexpr std::uint16_t pack(Op op, MemoryKind kind, unsigned align_code, bool segment,
                                    bool realloc_in_place = false) {
  return static_cast<std::uint16_t>(
      static_cast<unsigned>(op) << op_shift | static_cast<unsigned>(kind) << kind_shift |
      align_code << align_shift | static_cast<unsigned>(segment) << segment_shift |
      static_cast<unsigned>(realloc_in_place) << realloc_shift);
}

inline constexpr Op op(std::uint16_t attrs) {
  return static_cast<Op>(attrs >> op_shift & field_mask(op_bits));
}
inline constexpr MemoryKind kind(std::uint16_t attrs) {
  return static_cast<MemoryKind>(attrs >> kind_shift & field_mask(kind_bits));
}
inline constexpr unsigned align_code(std::uint16_t attrs) {
  return attrs >> align_shift & field_mask(align_bits);
}
inline constexpr std::uint64_t alignment(std::uint16_t attrs) {
  return alignment_of(align_code(attrs));
}
inline constexpr bool segment(std::uint16_t attrs) {
  return (attrs >> segment_shift & field_mask(segment_bits)) != 0;
}
inline constexpr bool realloc_in_place(std::uint16_t attrs) {
  return (attrs >> realloc_shift & field_mask(realloc_bits)) != 0;
}

// Whether `value`, as read from a file, is a packed form pack() can make: no bit beyond the
// `width` low ones (bits_before_realloc for a file that predates the realloc bit), an op and a
// kind that exist, an alignment code of at most max_align_code, the realloc bit on allocs only.
inline constexpr bool valid(std::uint64_t value, unsigned width = bits) {
  if (value >> width) return false;
  const auto attrs = static_cast<std::uint16_t>(value);
  return static_cast<unsigned>(op(attrs)) < static_cast<unsigned>(op_count) &&
         static_cast<unsigned>(kind(attrs)) < static_cast<unsigned>(memory_kind_count) &&
         align_code(attrs) <= max_align_code &&
         (!realloc_in_place(attrs) || op(attrs) == Op::alloc);
}

}  // namespace alloclab::event_attrs
