// Format versions 1 to 6, read only (legacy_versions.hpp). What they store as the current
// version does is decoded by the shared steps of chunk_columns.hpp; what they store otherwise,
// version by version, is here:
//   1     no frame, stack or stack id tables and no time shift (docs/alt-format.md, "Call stacks")
//   1-2   origins without a pool (read as 0)
//   1-6   one time column, not split into allocations' and others'
//   1-3   sizes as one varint each; 4 in byte planes over every event; 5 on as today
//   1-3   addresses as one tagged stream; 4-6 the reference streams of today without groups:
//         a free's reference counts back over all allocations of the chunk, not the live ones;
//         4 has no `recent` and `after` streams; 4-5 store references as varints, not planes
#include "legacy_versions.hpp"

#include <string_view>

#include "alloclab/format/alt/alt.hpp"
#include "alloclab/format/event_attrs.hpp"
#include "chunk_columns.hpp"

namespace alloclab::detail::legacy {
namespace {

// Versions 1 and 2: thread, device and stream only.
bool decode_origins_without_pool(VarintReader& in, std::uint32_t events, ChunkExtras& extras,
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
    o.pool = 0;
    if (o.device < cpu_device) {
      error = "invalid device " + std::to_string(o.device);
      return false;
    }
  }
  return true;
}

// Versions 1 to 6: every event's time against the one before, in one column.
void decode_times(VarintReader& in, std::uint32_t events, unsigned shift,
                  const Trace::NewColumns& col) {
  std::uint64_t t = 0;
  for (std::uint32_t k = 0; k < events; ++k)
    col.time_ns[k] = (t += static_cast<std::uint64_t>(unzigzag(in.next()))) << shift;
}

// Version 4: three planes over every event; versions 1 to 3: a varint each.
bool decode_sizes_before_5(VarintReader& in, std::uint32_t events, std::uint32_t version,
                           std::vector<std::uint64_t>& sizes, std::string& error) {
  if (version < 4) {
    for (std::uint32_t k = 0; k < events; ++k) sizes[k] = in.next();
    return true;
  }
  const std::uint8_t* low = in.take(events);
  const std::uint8_t* second = in.take(events);
  if (!low || !second) {
    error = "payload ends early";
    return false;
  }
  for (std::uint32_t k = 0; k < events; ++k) {
    const std::uint64_t high = in.next();
    if (high >> 48) {
      error = "size out of range";
      return false;
    }
    sizes[k] = high << 16 | std::uint64_t{second[k]} << 8 | low[k];
  }
  return true;
}

// Versions 1 to 3: one tagged stream (odd: a back-reference; 0: a delta follows; even: the
// delta itself).
bool decode_addresses_v1(VarintReader& in, std::uint32_t events, const Trace::NewColumns& col,
                         DecodeScratch& scratch, std::string& error) {
  std::vector<std::uint64_t>& alloc_addresses = scratch.alloc_addresses;
  alloc_addresses.clear();
  std::uint64_t previous_address = 0;
  for (std::uint32_t k = 0; k < events; ++k) {
    const Op op = event_attrs::op(col.attrs[k]);
    if (op != Op::alloc && op != Op::free) {
      col.address[k] = in.next();
      continue;
    }
    const std::uint64_t tag = in.next();
    if (tag & 1) {
      const std::uint64_t back = tag >> 1;
      if (op != Op::free || back == 0 || back > alloc_addresses.size()) {
        error = "back-reference " + std::to_string(back) + " out of range";
        return false;
      }
      col.address[k] = alloc_addresses[alloc_addresses.size() - back];
      continue;
    }
    const std::uint64_t zz = tag == 0 ? in.next() : (tag >> 1) - 1;
    col.address[k] = previous_address += static_cast<std::uint64_t>(unzigzag(zz));
    if (op == Op::alloc) alloc_addresses.push_back(col.address[k]);
  }
  return true;
}

// A reference column: varints (versions 4 and 5) or byte planes (version 6).
const char* read_references(VarintReader& in, std::size_t count, bool planes,
                            std::vector<std::uint64_t>& into) {
  if (planes) return read_reference_planes(in, count, into);
  into.resize(count);
  for (std::uint64_t& v : into) v = in.next();
  return in.failed() ? "payload ends early" : nullptr;
}

// Versions 4 to 6: the free references and reuse codes (from version 5 also the recent frees
// and the allocations back) are read first (their counts follow from the ops), then events are
// walked in order, replaying the encoder's FreedBlocks (and RecentFrees). Every chunk starts
// afresh, and a free's reference counts back over all the chunk's allocations.
bool decode_addresses_v4(VarintReader& in, std::uint32_t events, std::uint32_t version,
                         const Trace::NewColumns& col, DecodeScratch& scratch, std::string& error) {
  auto fail = [&](std::string what) {
    error = std::move(what);
    return false;
  };
  const bool version_5 = version >= 5;
  const std::uint64_t max_reuse = version_5 ? reuse_after : FreedBlocks::depth;
  std::size_t frees = 0;
  std::size_t allocs = 0;
  for (std::uint32_t k = 0; k < events; ++k) {
    const Op op = event_attrs::op(col.attrs[k]);
    frees += op == Op::free;
    allocs += op == Op::alloc;
  }
  const bool planes = version >= 6;
  if (const char* wrong = read_references(in, frees, planes, scratch.free_refs)) return fail(wrong);
  scratch.reuse.resize(allocs);
  std::size_t recent_count = 0;
  std::size_t after_count = 0;
  for (std::uint8_t& code : scratch.reuse) {
    const std::uint64_t v = in.next();
    if (v > max_reuse) return fail("reuse code " + std::to_string(v) + " out of range");
    code = static_cast<std::uint8_t>(v);
    recent_count += v == reuse_recent;
    after_count += v == reuse_after;
  }
  if (const char* wrong = read_references(in, recent_count, planes, scratch.recent))
    return fail(wrong);
  if (const char* wrong = read_references(in, after_count, planes, scratch.after))
    return fail(wrong);

  std::vector<std::uint64_t>& alloc_addresses = scratch.alloc_addresses;
  std::vector<std::uint16_t>& alloc_rings = scratch.alloc_rings;
  std::vector<std::uint64_t>& alloc_ends = scratch.alloc_ends;
  RecentFrees& recent_frees = scratch.recent_frees;
  alloc_addresses.clear();
  alloc_rings.clear();
  alloc_ends.clear();
  scratch.freed.clear();
  recent_frees.clear();
  scratch.live.clear();
  scratch.previous_address = 0;
  const std::uint64_t* next_ref = scratch.free_refs.data();
  const std::uint8_t* next_code = scratch.reuse.data();
  const std::uint64_t* next_recent = scratch.recent.data();
  const std::uint64_t* next_after = scratch.after.data();
  std::uint64_t previous_address = 0;
  for (std::uint32_t k = 0; k < events; ++k) {
    const Op op = event_attrs::op(col.attrs[k]);
    if (op == Op::free) {
      if (const std::uint64_t back = *next_ref++) {
        if (back > alloc_addresses.size())
          return fail("back-reference " + std::to_string(back) + " out of range");
        const std::size_t ordinal = alloc_addresses.size() - back;
        const std::uint64_t address = alloc_addresses[ordinal];
        if (address == 0) return fail("back-reference to an allocation at address 0");
        scratch.freed.freed(alloc_rings[ordinal], address);
        if (version_5) recent_frees.freed(address, alloc_rings[ordinal]);
        col.address[k] = address;
        continue;
      }
      col.address[k] = previous_address += static_cast<std::uint64_t>(unzigzag(in.next()));
      if (version_5 && col.address[k] != 0)
        recent_frees.freed(col.address[k], RecentFrees::no_ring);
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
      alloc_rings.push_back(static_cast<std::uint16_t>(ring));
      if (version_5) alloc_ends.push_back(FreedBlocks::end_of(col.address[k], scratch.sizes[k]));
    } else {
      col.address[k] = in.next();
    }
  }
  scratch.previous_address = previous_address;
  return true;
}

}  // namespace

void split_events_field(std::uint32_t field, std::uint32_t& events, std::uint32_t& group_position) {
  events = field;
  group_position = 0;
}

bool decode_chunk_columns(const std::uint8_t* data, std::size_t size, std::uint32_t events,
                          std::uint32_t version, const Trace::NewColumns& col, ChunkExtras& extras,
                          DecodeScratch& scratch, std::string& error, ChunkAddresses addresses) {
  VarintReader in(data, data + size);
  scratch.group_intact = false;
  if (addresses == ChunkAddresses::continue_group) {
    error = "continues a group whose previous chunk was not decoded";
    return false;
  }
  const bool origins_ok = version >= 3 ? decode_origins(in, events, extras, error)
                                       : decode_origins_without_pool(in, events, extras, error);
  if (!origins_ok || !decode_labels(in, events, extras, error)) return false;
  unsigned shift = 0;
  if (version >= 2) {
    if (!decode_stack_tables_and_time_shift(in, events, version, extras, shift, error))
      return false;
  } else {
    extras.frames.clear();
    extras.stacks.clear();
    extras.stack_ids.clear();
  }
  if (!decode_attrs_and_origins(in, events, version, extras.origins.size(), col, error))
    return false;
  decode_times(in, events, shift, col);
  std::vector<std::uint64_t>& sizes = scratch.sizes;
  sizes.resize(events);
  const bool sizes_ok = version >= 5 ? decode_split_sizes(in, events, col, sizes, error)
                                     : decode_sizes_before_5(in, events, version, sizes, error);
  if (!sizes_ok) return false;
  store_sizes(sizes, events, col, extras);

  if (addresses == ChunkAddresses::skip) return skip_addresses(in, events, col, error);
  const bool addresses_ok = version >= 4
                                ? decode_addresses_v4(in, events, version, col, scratch, error)
                                : decode_addresses_v1(in, events, col, scratch, error);
  return addresses_ok && finish_chunk(in, scratch, error);
}

}  // namespace alloclab::detail::legacy
