#include "codec.hpp"

#include <algorithm>
#include <bit>
#include <exception>
#include <limits>
#include <string_view>

#include "alloclab/format/alt/alt.hpp"
#include "alloclab/format/event_attrs.hpp"
#include "chunk_columns.hpp"
#include "legacy_versions.hpp"
#include "varint.hpp"

namespace alloclab::detail {
namespace {

bool is_alloc(std::uint16_t attrs) {
  return event_attrs::op(attrs) == Op::alloc;
}

void put_text(std::vector<std::uint8_t>& out, std::string_view text) {
  put_varint(out, text.size());
  out.insert(out.end(), text.begin(), text.end());
}

void encode_stack_tables(const Trace& trace, std::size_t begin, std::size_t end,
                         StackCursor& cursor, std::vector<std::uint8_t>& out) {
  const auto& frames = trace.frames();
  put_varint(out, cursor.frames);
  put_varint(out, frames.size() - std::min(cursor.frames, frames.size()));
  for (std::size_t f = cursor.frames; f < frames.size(); ++f) {
    put_varint(out, frames[f].address);
    put_text(out, frames[f].function);
    put_text(out, frames[f].module);
    put_text(out, frames[f].file);
    put_varint(out, frames[f].line);
  }
  cursor.frames = std::max(cursor.frames, frames.size());
  const auto& stacks = trace.stacks();
  put_varint(out, cursor.stacks);
  put_varint(out, stacks.size() - std::min(cursor.stacks, stacks.size()));
  for (std::size_t k = cursor.stacks; k < stacks.size(); ++k) {
    put_varint(out, stacks[k].size());
    for (std::uint32_t f : stacks[k]) put_varint(out, f);
  }
  cursor.stacks = std::max(cursor.stacks, stacks.size());

  const auto& all_ids = trace.stack_id_entries();
  const auto first =
      std::lower_bound(all_ids.begin(), all_ids.end(), begin,
                       [](const auto& entry, std::size_t index) { return entry.first < index; });
  const auto last =
      std::lower_bound(first, all_ids.end(), end,
                       [](const auto& entry, std::size_t index) { return entry.first < index; });
  put_varint(out, static_cast<std::uint64_t>(last - first));
  std::size_t previous = begin;
  for (auto it = first; it != last; ++it) {
    put_varint(out, it->first - previous);
    previous = it->first;
    put_varint(out, it->second);
  }
}

// Times that all end in the same zero bits (a recorder with a coarser clock, microsecond
// imports) are stored without them.
unsigned common_time_shift(const Trace& trace, std::size_t begin, std::size_t end) {
  std::uint64_t bits = 0;
  for (std::size_t i = begin; i < end; ++i) bits |= trace.time_ns(i);
  return bits == 0 ? 0 : static_cast<unsigned>(std::countr_zero(bits));
}

// Writes the per-event columns straight into memory reserved for their worst case: a vector's
// capacity check per byte costs as much as the encoding itself.
class ColumnWriter {
 public:
  ColumnWriter(std::vector<std::uint8_t>& out, std::size_t max_bytes)
      : out_(out), start_(out.size()) {
    out.resize(start_ + max_bytes);
    p_ = out.data() + start_;
  }
  ~ColumnWriter() { out_.resize(static_cast<std::size_t>(p_ - out_.data())); }
  ColumnWriter(const ColumnWriter&) = delete;
  ColumnWriter& operator=(const ColumnWriter&) = delete;

  [[gnu::always_inline]] void put(std::uint64_t v) { p_ = write_varint(p_, v); }

 private:
  std::vector<std::uint8_t>& out_;
  std::size_t start_;
  std::uint8_t* p_;
};

constexpr std::size_t max_varint_bytes = 10;

// Byte planes of a column (allocation sizes, version 6's references): the low bytes, the second
// bytes, then the rest as varints, each plane a section of its own.
template <typename Value>
void put_planes(const Value* v, std::size_t count, std::vector<std::uint8_t>& out,
                std::vector<std::size_t>& section_ends) {
  const std::size_t at = out.size();
  out.resize(at + 2 * count);
  std::uint8_t* const low = out.data() + at;
  std::uint8_t* const second = low + count;
  for (std::size_t k = 0; k < count; ++k) {
    low[k] = static_cast<std::uint8_t>(v[k]);
    second[k] = static_cast<std::uint8_t>(v[k] >> 8);
  }
  section_ends.push_back(at + count);
  section_ends.push_back(at + 2 * count);
  {
    ColumnWriter column(out, count * max_varint_bytes);
    for (std::size_t k = 0; k < count; ++k) column.put(v[k] >> 16);
  }
  section_ends.push_back(out.size());
}

// Five streams, each read in full before the next (docs/alt-format.md): a reference per free,
// a reuse code per allocation, how many frees ago the blocks of the allocations found among the
// chunk's frees were freed, how many allocations back the allocations right after an earlier
// one follow it, then the deltas of the addresses none of them covered and the values of
// markers.
void encode_addresses(const Trace& trace, std::size_t begin, std::size_t end, bool continues_group,
                      std::vector<std::uint8_t>& out, EncodeScratch& scratch) {
  // A chunk's map of blocks outgrows the core's own cache, and a miss per event was most of
  // this loop's time: the lookups are started this many events ahead.
  constexpr std::size_t lookahead = 8;
  using Block = EncodeScratch::Block;
  if (!continues_group) {
    scratch.blocks.clear();
    scratch.ends.clear();
    scratch.freed.clear();
    scratch.live.clear();
    scratch.allocs = 0;
    scratch.frees = 0;
    scratch.previous_address = 0;
  }
  const std::size_t n = end - begin;
  ValueStream& refs = scratch.free_refs;
  ByteStream& reuse = scratch.reuse;
  ValueStream& recent = scratch.recent;
  ValueStream& after = scratch.after;
  ByteStream& deltas = scratch.deltas;
  refs.start(n);
  reuse.start(n);  // codes 0..10: one byte each
  recent.start(n);
  after.start(n);
  deltas.start(n * max_varint_bytes);
  LiveOrder& live = scratch.live;
  std::uint32_t allocs = scratch.allocs;
  std::uint32_t frees = scratch.frees;  // those RecentFrees counts: of nonzero addresses
  std::uint64_t previous_address = scratch.previous_address;
  for (std::size_t i = begin; i < end; ++i) {
    if (i + lookahead < end) {
      const std::size_t ahead = i + lookahead;
      const std::uint64_t ahead_address = trace.address(ahead);
      scratch.blocks.prefetch(ahead_address);
      scratch.ends.prefetch(ahead_address);
      // An allocation also indexes where its block ends: that slot is the next miss.
      if (trace.op(ahead) == Op::alloc)
        scratch.ends.prefetch(FreedBlocks::end_of(ahead_address, trace.size_of(ahead)));
    }
    const Op op = trace.op(i);
    const std::uint64_t address = trace.address(i);
    // Address 0 never enters the map: a block there is never referenced, its free is
    // delta-coded like any other.
    Block* block = address ? scratch.blocks.find(address) : nullptr;
    if (op == Op::free) {
      if (block && block->live) {
        refs.put(live.newer_live(block->index) + 1);
        live.remove(block->index);
        scratch.freed.freed(block->ring, address);
        *block = {frees++, block->ring, false};
        continue;
      }
      refs.put(0);
      deltas.put(zigzag(static_cast<std::int64_t>(address - previous_address)));
      previous_address = address;
      if (address != 0) scratch.blocks.insert_or_assign(address, {frees++, Block::no_ring, false});
    } else if (op == Op::alloc) {
      const std::uint64_t size = trace.size_of(i);
      const std::uint32_t ring = FreedBlocks::ring_for(size);
      const int rank = scratch.freed.take(ring, address);
      if (rank >= 0) {
        reuse.put(static_cast<std::uint64_t>(rank + 1));
      } else if (block && !block->live) {
        reuse.put(reuse_recent);
        recent.put(frees - 1 - block->index);
        // It may still sit in the ring of the size it was freed with.
        if (block->ring != Block::no_ring) scratch.freed.take(block->ring, address);
      } else if (const std::uint32_t* earlier = address ? scratch.ends.find(address) : nullptr) {
        reuse.put(reuse_after);
        after.put(allocs - *earlier);
      } else {
        reuse.put(0);
        deltas.put(zigzag(static_cast<std::int64_t>(address - previous_address)));
      }
      previous_address = address;
      const Block made{allocs, static_cast<std::uint16_t>(ring), true};
      if (block)
        *block = made;
      else if (address != 0)
        scratch.blocks.insert_or_assign(address, made);
      // A block taken from its ring is seldom split (it has the request's size class), and the
      // map costs a write per allocation: only the others are indexed.
      if (address != 0 && rank < 0)
        if (const std::uint64_t next = FreedBlocks::end_of(address, size))
          scratch.ends.insert_or_assign(next, allocs);
      live.push(address != 0);
      ++allocs;
    } else {
      deltas.put(address);
    }
  }
  scratch.allocs = allocs;
  scratch.frees = frees;
  scratch.previous_address = previous_address;
  auto put_bytes = [&](const ByteStream& stream) {
    out.insert(out.end(), stream.begin(), stream.end());
    scratch.section_ends.push_back(out.size());
  };
  const auto put_reference_planes = [&](const ValueStream& stream) {
    put_planes(stream.begin(), stream.size(), out, scratch.section_ends);
  };
  put_reference_planes(refs);
  put_bytes(reuse);
  put_reference_planes(recent);
  put_reference_planes(after);
  put_bytes(deltas);
}

}  // namespace

void encode_chunk(const Trace& trace, std::size_t begin, std::size_t end, StackCursor& cursor,
                  std::vector<std::uint8_t>& out, EncodeScratch& scratch, bool continues_group) {
  out.clear();
  const std::size_t n = end - begin;

  std::vector<std::uint16_t> global_to_local(trace.origins().size(), 0xFFFF);
  std::vector<std::uint16_t> local_origins;
  for (std::size_t i = begin; i < end; ++i) {
    const std::uint16_t g = trace.origin_index(i);
    if (global_to_local[g] == 0xFFFF) {
      global_to_local[g] = static_cast<std::uint16_t>(local_origins.size());
      local_origins.push_back(g);
    }
  }
  put_varint(out, local_origins.size());
  for (std::uint16_t g : local_origins) {
    const Origin& o = trace.origins()[g];
    put_varint(out, o.thread);
    put_varint(out, zigzag(o.device));
    put_varint(out, o.stream);
    put_varint(out, o.pool);
  }

  const auto labelled = trace.labelled_events(begin, end);
  put_varint(out, labelled.size());
  std::size_t previous_label = begin;
  for (const auto& [i, text] : labelled) {
    put_varint(out, i - previous_label);
    previous_label = i;
    put_text(out, text);
  }

  encode_stack_tables(trace, begin, end, cursor, out);
  const unsigned shift = common_time_shift(trace, begin, end);
  put_varint(out, shift);

  {
    // attrs and chunk-local origins (< 2^16: three bytes at most each).
    static_assert(event_attrs::bits <= 16);
    ColumnWriter column(out, n * (3 + 3));
    for (std::size_t i = begin; i < end; ++i) column.put(trace.raw_attrs(i));
    for (std::size_t i = begin; i < end; ++i) column.put(global_to_local[trace.origin_index(i)]);
  }
  scratch.section_ends.clear();
  scratch.section_ends.push_back(out.size());
  {
    // Each time against the event before, whatever it was, but the gaps before allocations (the
    // allocator's work) in one column and the others (the program's, between its calls) in the
    // next: their distributions differ, and each column gets its own entropy code.
    ByteStream& alloc_times = scratch.alloc_times;
    ByteStream& other_times = scratch.other_times;
    alloc_times.start(n * max_varint_bytes);
    other_times.start(n * max_varint_bytes);
    std::uint64_t previous_time = 0;
    for (std::size_t i = begin; i < end; ++i) {
      const std::uint64_t t = trace.time_ns(i) >> shift;
      const std::uint64_t gap = zigzag(static_cast<std::int64_t>(t - previous_time));
      (trace.op(i) == Op::alloc ? alloc_times : other_times).put(gap);
      previous_time = t;
    }
    out.insert(out.end(), alloc_times.begin(), alloc_times.end());
    scratch.section_ends.push_back(out.size());
    out.insert(out.end(), other_times.begin(), other_times.end());
  }
  scratch.section_ends.push_back(out.size());
  // Allocation sizes in byte planes: the low byte (nearly random for sizes that are not round),
  // the next one (skewed to small values) and the rest, so each plane gets its own entropy
  // code; frees and markers, whose sizes are almost always 0, apart. Gathered first into local
  // arrays: written straight to `out`, every byte store would make the compiler reload the
  // trace's column pointers.
  {
    scratch.alloc_sizes.resize(n);
    scratch.other_sizes.resize(n);
    std::uint64_t* const alloc_sizes = scratch.alloc_sizes.data();
    std::uint64_t* const other_sizes = scratch.other_sizes.data();
    std::size_t allocs = 0;
    std::size_t others = 0;
    for (std::size_t i = begin; i < end; ++i) {
      const std::uint64_t size = trace.size_of(i);
      const bool is_alloc_event = trace.op(i) == Op::alloc;
      alloc_sizes[allocs] = size;
      other_sizes[others] = size;
      allocs += is_alloc_event;
      others += !is_alloc_event;
    }
    put_planes(alloc_sizes, allocs, out, scratch.section_ends);
    ColumnWriter column(out, others * max_varint_bytes);
    for (std::size_t k = 0; k < others; ++k) column.put(other_sizes[k]);
  }
  scratch.section_ends.push_back(out.size());
  encode_addresses(trace, begin, end, continues_group, out, scratch);
}

// The steps of chunk_columns.hpp: the parts of a payload older versions store alike.

bool decode_origins(VarintReader& in, std::uint32_t events, ChunkExtras& extras,
                    std::string& error) {
  const std::uint64_t origin_count = in.next();
  if (origin_count > events || origin_count > Trace::max_origins) {
    error = "origin table of " + std::to_string(origin_count) + " entries";
    return false;
  }
  extras.origins.resize(origin_count);
  for (Origin& o : extras.origins) {
    o.thread = in.next();
    o.device = static_cast<DeviceId>(unzigzag(in.next()));
    o.stream = in.next();
    o.pool = in.next();
    if (o.device < cpu_device) {
      error = "invalid device " + std::to_string(o.device);
      return false;
    }
  }
  return true;
}

bool decode_labels(VarintReader& in, std::uint32_t events, ChunkExtras& extras,
                   std::string& error) {
  auto fail = [&](std::string what) {
    error = std::move(what);
    return false;
  };
  const std::uint64_t label_count = in.next();
  if (label_count > events) return fail("label table of " + std::to_string(label_count));
  extras.labels.resize(label_count);
  std::uint64_t label_at = 0;
  for (std::uint64_t k = 0; k < label_count; ++k) {
    const std::uint64_t delta = in.next();
    label_at += delta;
    if (label_at >= events || (k > 0 && delta == 0)) return fail("label index out of order");
    const std::uint64_t length = in.next();
    const std::uint8_t* text = in.take(length);
    if (!text) return fail("label runs past the end of the chunk");
    extras.labels[k] = {label_at, std::string(reinterpret_cast<const char*>(text), length)};
  }
  return true;
}

bool decode_stack_tables_and_time_shift(VarintReader& in, std::uint32_t events,
                                        std::uint32_t version, ChunkExtras& extras,
                                        unsigned& time_shift, std::string& error) {
  auto fail = [&](std::string what) {
    error = std::move(what);
    return false;
  };
  extras.frames.clear();
  extras.stacks.clear();
  extras.stack_ids.clear();
  auto text = [&](std::string& into) {
    const std::uint64_t length = in.next();
    const std::uint8_t* bytes = in.take(length);
    if (!bytes) return false;
    into.assign(reinterpret_cast<const char*>(bytes), length);
    return true;
  };
  // Each definition takes at least one byte, so a count beyond the payload is corrupt.
  const std::uint64_t limit = in.remaining();
  extras.frames_first = in.next();
  const std::uint64_t frame_count = in.next();
  if (frame_count > limit || extras.frames_first > Trace::max_stack_entries ||
      frame_count > Trace::max_stack_entries - extras.frames_first)
    return fail("frame table of " + std::to_string(frame_count) + " entries");
  extras.frames.resize(frame_count);
  for (StackFrame& f : extras.frames) {
    f.address = in.next();
    if (!text(f.function) || !text(f.module)) return fail("frame runs past the end of the chunk");
    if (version < alt_frame_lines_version) continue;  // no source lines before version 9
    if (!text(f.file)) return fail("frame runs past the end of the chunk");
    const std::uint64_t line = in.next();
    if (line > std::numeric_limits<std::uint32_t>::max())
      return fail("frame line " + std::to_string(line));
    f.line = static_cast<std::uint32_t>(line);
  }
  extras.stacks_first = in.next();
  const std::uint64_t stack_count = in.next();
  if (stack_count > limit || extras.stacks_first > Trace::max_stack_entries ||
      stack_count > Trace::max_stack_entries - extras.stacks_first)
    return fail("stack table of " + std::to_string(stack_count) + " entries");
  extras.stacks.resize(stack_count);
  for (auto& stack : extras.stacks) {
    const std::uint64_t depth = in.next();
    if (depth > in.remaining()) return fail("stack of depth " + std::to_string(depth));
    stack.resize(depth);
    for (std::uint32_t& f : stack) {
      const std::uint64_t v = in.next();
      if (v >= Trace::max_stack_entries) return fail("frame index " + std::to_string(v));
      f = static_cast<std::uint32_t>(v);
    }
  }
  const std::uint64_t id_count = in.next();
  if (id_count > events) return fail("stack id table of " + std::to_string(id_count));
  extras.stack_ids.resize(id_count);
  std::uint64_t at = 0;
  for (std::uint64_t k = 0; k < id_count; ++k) {
    const std::uint64_t delta = in.next();
    at += delta;
    if (at >= events || (k > 0 && delta == 0)) return fail("stack id index out of order");
    const std::uint64_t id = in.next();
    if (id == 0 || id > Trace::max_stack_entries) return fail("stack id " + std::to_string(id));
    extras.stack_ids[k] = {at, id};
  }
  if (in.failed()) return fail("payload ends early");
  const std::uint64_t shift = in.next();
  if (shift > 63) return fail("time shift " + std::to_string(shift));
  time_shift = static_cast<unsigned>(shift);
  return true;
}

bool decode_attrs_and_origins(VarintReader& in, std::uint32_t events, std::uint32_t version,
                              std::size_t origin_count, const Trace::NewColumns& col,
                              std::string& error) {
  const unsigned width =
      version >= alt_realloc_bit_version ? event_attrs::bits : event_attrs::bits_before_realloc;
  for (std::uint32_t k = 0; k < events; ++k) {
    const std::uint64_t v = in.next();
    if (!event_attrs::valid(v, width)) {
      error = "invalid event attributes " + std::to_string(v) + " (format version " +
              std::to_string(version) + ")";
      return false;
    }
    col.attrs[k] = static_cast<std::uint16_t>(v);
  }
  for (std::uint32_t k = 0; k < events; ++k) {
    const std::uint64_t v = in.next();
    if (v >= origin_count) {
      error = "origin index " + std::to_string(v) + " out of range";
      return false;
    }
    col.origin[k] = static_cast<std::uint16_t>(v);  // chunk-local until commit_chunk
  }
  return true;
}

bool decode_split_sizes(VarintReader& in, std::uint32_t events, const Trace::NewColumns& col,
                        std::vector<std::uint64_t>& sizes, std::string& error) {
  std::uint32_t allocs = 0;
  for (std::uint32_t k = 0; k < events; ++k) allocs += is_alloc(col.attrs[k]);
  const std::uint8_t* low = in.take(allocs);
  const std::uint8_t* second = in.take(allocs);
  if (!low || !second) {
    error = "payload ends early";
    return false;
  }
  std::uint32_t a = 0;
  for (std::uint32_t k = 0; k < events; ++k)
    if (is_alloc(col.attrs[k])) {
      const std::uint64_t high = in.next();
      if (high >> 48) {
        error = "size out of range";
        return false;
      }
      sizes[k] = high << 16 | std::uint64_t{second[a]} << 8 | low[a];
      ++a;
    }
  for (std::uint32_t k = 0; k < events; ++k)
    if (!is_alloc(col.attrs[k])) sizes[k] = in.next();
  return true;
}

void store_sizes(const std::vector<std::uint64_t>& sizes, std::uint32_t events,
                 const Trace::NewColumns& col, ChunkExtras& extras) {
  extras.big_sizes.clear();
  for (std::uint32_t k = 0; k < events; ++k) {
    if (sizes[k] >= Trace::big_size_marker) {
      col.size32[k] = Trace::big_size_marker;
      extras.big_sizes.emplace_back(k, sizes[k]);
    } else {
      col.size32[k] = static_cast<std::uint32_t>(sizes[k]);
    }
  }
}

const char* read_reference_planes(VarintReader& in, std::size_t count,
                                  std::vector<std::uint64_t>& into) {
  into.resize(count);
  const std::uint8_t* low = in.take(count);
  const std::uint8_t* second = in.take(count);
  if (!low || !second) return "payload ends early";
  for (std::size_t k = 0; k < count; ++k) {
    const std::uint64_t high = in.next();
    // The encoder's references are 32-bit.
    if (high >> 16) return "reference out of range";
    into[k] = high << 16 | std::uint64_t{second[k]} << 8 | low[k];
  }
  return in.failed() ? "payload ends early" : nullptr;
}

bool skip_addresses(VarintReader& in, std::uint32_t events, const Trace::NewColumns& col,
                    std::string& error) {
  std::fill(col.address, col.address + events, 0);
  if (!in.failed()) return true;
  error = "payload ends early";
  return false;
}

bool finish_chunk(VarintReader& in, DecodeScratch& scratch, std::string& error) {
  if (in.failed()) {
    error = "payload ends early";
    return false;
  }
  if (!in.at_end()) {
    error = "stray bytes after the last event";
    return false;
  }
  scratch.group_intact = true;
  return true;
}

namespace {

// The allocations' time gaps, then the other events' (each against the event before it,
// whatever it was).
void decode_times(VarintReader& in, std::uint32_t events, unsigned shift,
                  const Trace::NewColumns& col, DecodeScratch& scratch) {
  std::vector<std::uint64_t>& alloc_gaps = scratch.alloc_gaps;
  alloc_gaps.resize(events);
  std::uint64_t* next_gap = alloc_gaps.data();
  for (std::uint32_t k = 0; k < events; ++k)
    if (is_alloc(col.attrs[k])) *next_gap++ = in.next();
  const std::uint64_t* next_alloc_gap = alloc_gaps.data();
  std::uint64_t t = 0;
  for (std::uint32_t k = 0; k < events; ++k) {
    const std::uint64_t gap = is_alloc(col.attrs[k]) ? *next_alloc_gap++ : in.next();
    col.time_ns[k] = (t += static_cast<std::uint64_t>(unzigzag(gap))) << shift;
  }
}

// The free references, reuse codes, recent frees and allocations back are read first (their
// counts follow from the ops), then events are walked in order, replaying the encoder's
// FreedBlocks, RecentFrees and LiveOrder from where the chunk before in the group left them.
bool decode_addresses(VarintReader& in, std::uint32_t events, bool continues_group,
                      const Trace::NewColumns& col, DecodeScratch& scratch, std::string& error) {
  auto fail = [&](std::string what) {
    error = std::move(what);
    return false;
  };
  std::size_t frees = 0;
  std::size_t allocs = 0;
  for (std::uint32_t k = 0; k < events; ++k) {
    const Op op = event_attrs::op(col.attrs[k]);
    frees += op == Op::free;
    allocs += op == Op::alloc;
  }
  if (const char* wrong = read_reference_planes(in, frees, scratch.free_refs)) return fail(wrong);
  scratch.reuse.resize(allocs);
  std::size_t recent_count = 0;
  std::size_t after_count = 0;
  for (std::uint8_t& code : scratch.reuse) {
    const std::uint64_t v = in.next();
    if (v > reuse_after) return fail("reuse code " + std::to_string(v) + " out of range");
    code = static_cast<std::uint8_t>(v);
    recent_count += v == reuse_recent;
    after_count += v == reuse_after;
  }
  if (const char* wrong = read_reference_planes(in, recent_count, scratch.recent))
    return fail(wrong);
  if (const char* wrong = read_reference_planes(in, after_count, scratch.after)) return fail(wrong);

  std::vector<std::uint64_t>& alloc_addresses = scratch.alloc_addresses;
  std::vector<std::uint16_t>& alloc_rings = scratch.alloc_rings;
  std::vector<std::uint64_t>& alloc_ends = scratch.alloc_ends;
  RecentFrees& recent_frees = scratch.recent_frees;
  LiveOrder& live = scratch.live;
  if (!continues_group) {
    alloc_addresses.clear();
    alloc_rings.clear();
    alloc_ends.clear();
    scratch.freed.clear();
    recent_frees.clear();
    live.clear();
    scratch.previous_address = 0;
  }
  const std::uint64_t* next_ref = scratch.free_refs.data();
  const std::uint8_t* next_code = scratch.reuse.data();
  const std::uint64_t* next_recent = scratch.recent.data();
  const std::uint64_t* next_after = scratch.after.data();
  std::uint64_t previous_address = scratch.previous_address;
  for (std::uint32_t k = 0; k < events; ++k) {
    const Op op = event_attrs::op(col.attrs[k]);
    if (op == Op::free) {
      if (const std::uint64_t back = *next_ref++) {
        // A rank among the live allocations, newest first. Read as 32 bits at most
        // (read_reference_planes): no wrap-around below.
        const std::size_t ordinal = live.with_newer_live(static_cast<std::uint32_t>(back - 1));
        if (ordinal == live.size())
          return fail("free reference " + std::to_string(back) + " out of range");
        live.remove(static_cast<std::uint32_t>(ordinal));
        const std::uint64_t address = alloc_addresses[ordinal];
        if (address == 0) return fail("back-reference to an allocation at address 0");
        scratch.freed.freed(alloc_rings[ordinal], address);
        recent_frees.freed(address, alloc_rings[ordinal]);
        col.address[k] = address;
        continue;
      }
      col.address[k] = previous_address += static_cast<std::uint64_t>(unzigzag(in.next()));
      if (col.address[k] != 0) recent_frees.freed(col.address[k], RecentFrees::no_ring);
    } else if (op == Op::alloc) {
      const std::uint32_t ring = FreedBlocks::ring_for(scratch.sizes[k]);
      const unsigned code = *next_code++;
      if (code == reuse_recent) {
        const std::uint64_t frees_after = *next_recent++;
        if (frees_after >= recent_frees.frees())
          return fail("recent free " + std::to_string(frees_after) + " out of range");
        const RecentFrees::Freed& block = recent_frees.before_latest(frees_after);
        if (block.ring != RecentFrees::no_ring) scratch.freed.take(block.ring, block.address);
        col.address[k] = previous_address = block.address;
      } else if (code == reuse_after) {
        const std::uint64_t back = *next_after++;
        if (back == 0 || back > alloc_ends.size())
          return fail("allocation " + std::to_string(back) + " back out of range");
        col.address[k] = previous_address = alloc_ends[alloc_ends.size() - back];
      } else if (code != 0) {
        const std::uint64_t address = scratch.freed.take_rank(ring, code - 1);
        if (address == 0) return fail("reuse rank " + std::to_string(code) + " of no freed block");
        col.address[k] = previous_address = address;
      } else {
        col.address[k] = previous_address += static_cast<std::uint64_t>(unzigzag(in.next()));
      }
      alloc_addresses.push_back(col.address[k]);
      live.push(col.address[k] != 0);
      alloc_rings.push_back(static_cast<std::uint16_t>(ring));
      alloc_ends.push_back(FreedBlocks::end_of(col.address[k], scratch.sizes[k]));
    } else {
      col.address[k] = in.next();
    }
  }
  scratch.previous_address = previous_address;
  return true;
}

}  // namespace

bool decode_chunk_columns(const std::uint8_t* data, std::size_t size, std::uint32_t events,
                          std::uint32_t version, const Trace::NewColumns& col, ChunkExtras& extras,
                          DecodeScratch& scratch, std::string& error, ChunkAddresses addresses) {
  if (version < alt_grouped_version)
    return legacy::decode_chunk_columns(data, size, events, version, col, extras, scratch, error,
                                        addresses);
  VarintReader in(data, data + size);
  const bool continues_group = addresses == ChunkAddresses::continue_group;
  // The state a continuing chunk needs is only there if the group's previous chunk was decoded
  // with this scratch, in full.
  const bool group_ready = scratch.group_intact;
  scratch.group_intact = false;
  if (continues_group && !group_ready) {
    error = "continues a group whose previous chunk was not decoded";
    return false;
  }
  unsigned shift = 0;
  if (!decode_origins(in, events, extras, error) || !decode_labels(in, events, extras, error) ||
      !decode_stack_tables_and_time_shift(in, events, version, extras, shift, error) ||
      !decode_attrs_and_origins(in, events, version, extras.origins.size(), col, error))
    return false;
  decode_times(in, events, shift, col, scratch);
  std::vector<std::uint64_t>& sizes = scratch.sizes;
  sizes.resize(events);
  if (!decode_split_sizes(in, events, col, sizes, error)) return false;
  store_sizes(sizes, events, col, extras);

  if (addresses == ChunkAddresses::skip) return skip_addresses(in, events, col, error);
  return decode_addresses(in, events, continues_group, col, scratch, error) &&
         finish_chunk(in, scratch, error);
}

bool commit_chunk(Trace& out, std::size_t base, std::uint32_t events, ChunkExtras& extras,
                  std::string& error) {
  std::uint16_t global_of[256];
  std::vector<std::uint16_t> global_large;
  std::uint16_t* global = global_of;
  if (extras.origins.size() > 256) {
    global_large.resize(extras.origins.size());
    global = global_large.data();
  }
  try {
    for (std::size_t k = 0; k < extras.origins.size(); ++k)
      global[k] = out.add_origin(extras.origins[k]);
  } catch (const std::exception& e) {
    error = e.what();
    return false;
  }
  // Check every reference before changing anything, so a bad chunk leaves the trace as it was.
  const std::size_t frames_after =
      std::max<std::size_t>(out.frames().size(), extras.frames_first + extras.frames.size());
  const std::size_t stacks_after =
      std::max<std::size_t>(out.stacks().size(), extras.stacks_first + extras.stacks.size());
  for (const auto& stack : extras.stacks)
    for (std::uint32_t f : stack)
      if (f >= frames_after) {
        error = "stack refers to undefined frame " + std::to_string(f);
        return false;
      }
  // A damaged chunk before this one may have carried definitions: they become placeholders,
  // but never more than a chunk could plausibly have held.
  constexpr std::size_t max_lost_definitions = std::size_t{1} << 20;
  if (extras.frames_first > out.frames().size() + max_lost_definitions ||
      extras.stacks_first > out.stacks().size() + max_lost_definitions) {
    error = "frame or stack table starts far beyond the ones read so far";
    return false;
  }
  for (const auto& [k, id] : extras.stack_ids)
    if (id > stacks_after) {
      error = "event refers to undefined stack " + std::to_string(id);
      return false;
    }
  while (out.frames().size() < extras.frames_first) out.add_frame({});  // lost with a chunk
  for (std::size_t k = 0; k < extras.frames.size(); ++k)
    if (extras.frames_first + k >= out.frames().size()) out.add_frame(std::move(extras.frames[k]));
  while (out.stacks().size() < extras.stacks_first) out.add_stack({});
  for (std::size_t k = 0; k < extras.stacks.size(); ++k)
    if (extras.stacks_first + k >= out.stacks().size()) out.add_stack(std::move(extras.stacks[k]));

  const Trace::NewColumns col = out.columns_at(base);
  for (std::uint32_t k = 0; k < events; ++k) col.origin[k] = global[col.origin[k]];
  for (const auto& [k, size] : extras.big_sizes) out.set_big_size(base + k, size);
  for (auto& [index, text] : extras.labels) out.set_label(base + index, std::move(text));
  for (const auto& [k, id] : extras.stack_ids)
    out.set_stack_id(base + k, static_cast<std::uint32_t>(id));
  return true;
}

bool decode_chunk(const std::uint8_t* data, std::size_t size, std::uint32_t events,
                  std::uint32_t version, Trace& out, DecodeScratch& scratch, std::string& error,
                  ChunkAddresses addresses) {
  const std::size_t base = out.size();
  const Trace::NewColumns col = out.extend(events);
  ChunkExtras extras;
  if (decode_chunk_columns(data, size, events, version, col, extras, scratch, error, addresses) &&
      commit_chunk(out, base, events, extras, error))
    return true;
  out.truncate(base);
  return false;
}

}  // namespace alloclab::detail
