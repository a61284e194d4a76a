// The packed event attributes (op, memory kind, alignment, segment, realloc in place): one
// layout, in
// event_attrs.hpp, for the Trace column, the .alt codec and the tracer's writer.
#include "alloclab/format/event_attrs.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "alloclab/format/alt/alt.hpp"
#include "alloclab/format/error.hpp"
#include "format/alt/codec.hpp"
#include "format/alt/varint.hpp"
#include "tests/format/trace_test_util.hpp"

namespace alloclab {
namespace {

// Every value the five fields can take together (the realloc bit on allocs only).
struct Attrs {
  Op op;
  MemoryKind kind;
  unsigned align_code;
  bool segment;
  bool realloc_in_place = false;
};
std::vector<Attrs> every_combination() {
  std::vector<Attrs> all;
  for (int op = 0; op < op_count; ++op)
    for (int kind = 0; kind < memory_kind_count; ++kind)
      for (unsigned code = 0; code <= event_attrs::max_align_code; ++code)
        for (bool segment : {false, true})
          for (bool in_place : {false, true})
            if (!in_place || static_cast<Op>(op) == Op::alloc)
              all.push_back(
                  {static_cast<Op>(op), static_cast<MemoryKind>(kind), code, segment, in_place});
  return all;
}

TEST(EventAttrs, every_combination_unpacks_to_what_was_packed) {
  std::set<std::uint16_t> seen;
  for (const Attrs& a : every_combination()) {
    const std::uint16_t packed =
        event_attrs::pack(a.op, a.kind, a.align_code, a.segment, a.realloc_in_place);
    EXPECT_TRUE(event_attrs::valid(packed)) << packed;
    EXPECT_LT(packed, 1u << event_attrs::bits);
    EXPECT_EQ(event_attrs::op(packed), a.op);
    EXPECT_EQ(event_attrs::kind(packed), a.kind);
    EXPECT_EQ(event_attrs::align_code(packed), a.align_code);
    EXPECT_EQ(event_attrs::alignment(packed), event_attrs::alignment_of(a.align_code));
    EXPECT_EQ(event_attrs::segment(packed), a.segment);
    EXPECT_EQ(event_attrs::realloc_in_place(packed), a.realloc_in_place);
    seen.insert(packed);
  }
  EXPECT_EQ(seen.size(), every_combination().size());  // no two combinations share a value
}

TEST(EventAttrs, alignment_codes_are_log2_plus_one) {
  EXPECT_EQ(event_attrs::align_code_of(0), 0u);
  EXPECT_EQ(event_attrs::alignment_of(0), 0u);
  for (unsigned shift = 0; shift < 64; ++shift) {
    const std::uint64_t alignment = std::uint64_t{1} << shift;
    EXPECT_EQ(event_attrs::align_code_of(alignment), shift + 1);
    EXPECT_EQ(event_attrs::alignment_of(shift + 1), alignment);
  }
}

TEST(EventAttrs, the_bit_positions_are_those_of_the_file_format) {
  // docs/alt-format.md: op (bits 0-2) | memory kind (3-5) | log2(alignment)+1 (6-12) |
  // segment (13) | realloc in place (14, version 8 on). Files of every version hold these
  // values: they must not move.
  EXPECT_EQ(event_attrs::pack(Op::free, MemoryKind::host, 0, false), 1u);
  EXPECT_EQ(event_attrs::pack(Op::alloc, MemoryKind::async_pool, 0, false), 5u << 3);
  EXPECT_EQ(event_attrs::pack(Op::alloc, MemoryKind::host, 13, false), 13u << 6);
  EXPECT_EQ(event_attrs::pack(Op::alloc, MemoryKind::host, 0, true), 1u << 13);
  EXPECT_EQ(event_attrs::pack(Op::mark, MemoryKind::vmm, 64, true),
            4u | 6u << 3 | 64u << 6 | 1u << 13);
  EXPECT_EQ(event_attrs::pack(Op::alloc, MemoryKind::host, 0, false, true), 1u << 14);
}

TEST(EventAttrs, values_no_packing_makes_are_not_valid) {
  EXPECT_FALSE(event_attrs::valid(5));              // op 5 does not exist
  EXPECT_FALSE(event_attrs::valid(7));              // nor op 7
  EXPECT_FALSE(event_attrs::valid(7u << 3));        // kind 7
  EXPECT_FALSE(event_attrs::valid(65u << 6));       // alignment 2^64
  EXPECT_FALSE(event_attrs::valid(127u << 6));      // the largest code the field holds
  EXPECT_FALSE(event_attrs::valid(1u << 15));       // a bit beyond the fields
  EXPECT_FALSE(event_attrs::valid(1u | 1u << 14));  // a free marked realloc in place
  EXPECT_FALSE(event_attrs::valid(2u | 1u << 14));  // a run_begin marked so
  EXPECT_TRUE(event_attrs::valid(1u << 14));        // an alloc marked so
  // Before the realloc bit (files of version 7 and older), bit 14 is beyond the fields.
  EXPECT_FALSE(event_attrs::valid(1u << 14, event_attrs::bits_before_realloc));
  EXPECT_TRUE(event_attrs::valid(1u << 13, event_attrs::bits_before_realloc));
  EXPECT_FALSE(event_attrs::valid(~std::uint64_t{0}));
  EXPECT_TRUE(event_attrs::valid(0));
}

TEST(EventAttrs, every_combination_survives_a_trace_and_an_alt_file) {
  std::vector<Event> events;
  std::uint64_t time = 1000;
  for (const Attrs& a : every_combination()) {
    Event e;
    e.time_ns = time += 10;
    e.op = a.op;
    e.kind = a.kind;
    e.alignment = event_attrs::alignment_of(a.align_code);
    e.segment = a.segment;
    e.realloc_in_place = a.realloc_in_place;
    if (e.op == Op::alloc || e.op == Op::free) {
      e.address = 0x10000 * events.size();
      e.size = 64;
    }
    events.push_back(e);
  }
  const Trace trace = test::make_trace(events);
  for (std::size_t i = 0; i < events.size(); ++i) {
    ASSERT_EQ(trace.op(i), events[i].op) << i;
    ASSERT_EQ(trace.kind(i), events[i].kind) << i;
    ASSERT_EQ(trace.alignment(i), events[i].alignment) << i;
    ASSERT_EQ(trace.segment(i), events[i].segment) << i;
    ASSERT_EQ(trace.realloc_in_place(i), events[i].realloc_in_place) << i;
    ASSERT_EQ(trace.raw_attrs(i),
              Trace::pack_attrs(events[i].op, events[i].kind, events[i].alignment,
                                events[i].segment, events[i].realloc_in_place));
    ASSERT_EQ(trace.event(i), events[i]) << i;
  }
  const Trace back = test::written_and_read(trace, 1000);
  ASSERT_EQ(back.size(), trace.size());
  for (std::size_t i = 0; i < trace.size(); ++i) ASSERT_EQ(back.raw_attrs(i), trace.raw_attrs(i));
  for (std::size_t i = 0; i < trace.size(); ++i) ASSERT_EQ(back.event(i), events[i]) << i;
}

TEST(EventAttrs, pack_attrs_refuses_realloc_in_place_on_anything_but_an_alloc) {
  EXPECT_THROW(Trace::pack_attrs(Op::free, MemoryKind::host, 0, false, true), InputError);
  EXPECT_THROW(Trace::pack_attrs(Op::mark, MemoryKind::host, 0, false, true), InputError);
  EXPECT_EQ(Trace::pack_attrs(Op::alloc, MemoryKind::host, 0, false, true), 1u << 14);
}

TEST(EventAttrs, pack_attrs_refuses_an_alignment_that_is_not_a_power_of_two) {
  EXPECT_THROW(Trace::pack_attrs(Op::alloc, MemoryKind::host, 48, false), InputError);
  EXPECT_EQ(Trace::pack_attrs(Op::alloc, MemoryKind::host, 64, false),
            event_attrs::pack(Op::alloc, MemoryKind::host, 7, false));
}

// A chunk of one event whose attributes are `attrs`, and nothing after them.
std::vector<std::uint8_t> chunk_with_attrs(std::uint64_t attrs) {
  std::vector<std::uint8_t> payload;
  for (std::uint64_t v : {1, 0, 1, 0, 0,  // one origin: thread 0, the CPU, stream 0, pool 0
                          0,              // no labels
                          0, 0, 0, 0, 0,  // no frames, stacks or stack ids
                          0})             // time shift
    detail::put_varint(payload, v);
  detail::put_varint(payload, attrs);
  return payload;
}

TEST(EventAttrs, a_chunk_with_attributes_no_packing_makes_is_refused) {
  for (std::uint64_t bad : {std::uint64_t{5}, std::uint64_t{7} << 3, std::uint64_t{65} << 6,
                            std::uint64_t{1} << 15, std::uint64_t{1} | std::uint64_t{1} << 14}) {
    const std::vector<std::uint8_t> payload = chunk_with_attrs(bad);
    Trace out;
    detail::DecodeScratch scratch;
    std::string error;
    EXPECT_FALSE(detail::decode_chunk(payload.data(), payload.size(), 1, alt_format_version, out,
                                      scratch, error));
    EXPECT_EQ(error, "invalid event attributes " + std::to_string(bad) + " (format version " +
                         std::to_string(alt_format_version) + ")");
    EXPECT_EQ(out.size(), 0u);
  }
  // A valid value gets past the attributes (and then finds the other columns missing).
  const std::vector<std::uint8_t> payload = chunk_with_attrs(64u << 6);
  Trace out;
  detail::DecodeScratch scratch;
  std::string error;
  EXPECT_FALSE(detail::decode_chunk(payload.data(), payload.size(), 1, alt_format_version, out,
                                    scratch, error));
  EXPECT_EQ(error.find("invalid event attributes"), std::string::npos) << error;
}

TEST(EventAttrs, the_realloc_bit_is_refused_in_a_chunk_of_version_7_and_read_from_version_8) {
  const std::vector<std::uint8_t> payload = chunk_with_attrs(std::uint64_t{1} << 14);
  {
    Trace out;
    detail::DecodeScratch scratch;
    std::string error;
    EXPECT_FALSE(detail::decode_chunk(payload.data(), payload.size(), 1, 7, out, scratch, error));
    EXPECT_EQ(error, "invalid event attributes 16384 (format version 7)");
  }
  Trace out;
  detail::DecodeScratch scratch;
  std::string error;
  EXPECT_FALSE(detail::decode_chunk(payload.data(), payload.size(), 1, 8, out, scratch, error));
  EXPECT_EQ(error.find("invalid event attributes"), std::string::npos) << error;
}

}  // namespace
}  // namespace alloclab
