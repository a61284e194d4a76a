#include "alt_codec.hpp"

#include <exception>
#include <unordered_map>

#include "varint.hpp"

namespace alloclab::detail {
namespace {

bool is_memory_op(Op op) {
  return op == Op::alloc || op == Op::free;
}

constexpr std::uint64_t small_delta_limit = std::uint64_t{1} << 62;

}  // namespace

void encode_chunk(const Trace& trace, std::size_t begin, std::size_t end,
                  std::vector<std::uint8_t>& out) {
  out.clear();
  const std::size_t n = end - begin;

  std::vector<std::uint16_t> global_to_local(trace.origins().size(), 0xFFFF);
  std::vector<std::uint16_t> local_origins;
  std::vector<std::uint32_t> local_index(n);
  for (std::size_t i = begin; i < end; ++i) {
    std::uint16_t g = trace.origin_index(i);
    if (global_to_local[g] == 0xFFFF) {
      global_to_local[g] = static_cast<std::uint16_t>(local_origins.size());
      local_origins.push_back(g);
    }
    local_index[i - begin] = global_to_local[g];
  }
  put_varint(out, local_origins.size());
  for (std::uint16_t g : local_origins) {
    const Origin& o = trace.origins()[g];
    put_varint(out, o.thread);
    put_varint(out, zigzag(o.device));
    put_varint(out, o.stream);
  }

  std::vector<std::size_t> labelled;
  for (std::size_t i = begin; i < end; ++i)
    if (!trace.label(i).empty()) labelled.push_back(i);
  put_varint(out, labelled.size());
  std::size_t previous_label = begin;
  for (std::size_t i : labelled) {
    std::string_view text = trace.label(i);
    put_varint(out, i - previous_label);
    previous_label = i;
    put_varint(out, text.size());
    out.insert(out.end(), text.begin(), text.end());
  }

  for (std::size_t i = begin; i < end; ++i) put_varint(out, trace.raw_attrs(i));
  for (std::size_t k = 0; k < n; ++k) put_varint(out, local_index[k]);
  std::uint64_t previous_time = 0;
  for (std::size_t i = begin; i < end; ++i) {
    put_varint(out, zigzag(static_cast<std::int64_t>(trace.time_ns(i) - previous_time)));
    previous_time = trace.time_ns(i);
  }
  for (std::size_t i = begin; i < end; ++i) put_varint(out, trace.size_of(i));

  std::unordered_map<std::uint64_t, std::uint64_t> live_ordinal;  // address -> alloc ordinal
  live_ordinal.reserve(n);
  std::uint64_t allocs = 0;
  std::uint64_t previous_address = 0;
  for (std::size_t i = begin; i < end; ++i) {
    const Op op = trace.op(i);
    const std::uint64_t address = trace.address(i);
    if (!is_memory_op(op)) {
      put_varint(out, address);
      continue;
    }
    if (op == Op::free) {
      auto it = live_ordinal.find(address);
      if (it != live_ordinal.end()) {
        put_varint(out, ((allocs - it->second) << 1) | 1);
        live_ordinal.erase(it);
        continue;
      }
    }
    const std::uint64_t zz = zigzag(static_cast<std::int64_t>(address - previous_address));
    if (zz < small_delta_limit) {
      put_varint(out, (zz + 1) << 1);
    } else {
      put_varint(out, 0);
      put_varint(out, zz);
    }
    previous_address = address;
    if (op == Op::alloc) live_ordinal[address] = allocs++;
  }
}

bool decode_chunk_columns(const std::uint8_t* data, std::size_t size, std::uint32_t events,
                          const Trace::NewColumns& col, ChunkExtras& extras, DecodeScratch& scratch,
                          std::string& error) {
  VarintReader in(data, data + size);
  auto fail = [&](std::string what) {
    error = std::move(what);
    return false;
  };

  const std::uint64_t origin_count = in.next();
  if (origin_count > events || origin_count > Trace::max_origins)
    return fail("origin table of " + std::to_string(origin_count) + " entries");
  extras.origins.resize(origin_count);
  for (Origin& o : extras.origins) {
    o.thread = in.next();
    o.device = static_cast<DeviceId>(unzigzag(in.next()));
    o.stream = in.next();
    if (o.device < cpu_device) return fail("invalid device " + std::to_string(o.device));
  }

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

  for (std::uint32_t k = 0; k < events; ++k) {
    const std::uint64_t v = in.next();
    const unsigned op = v & 0x7u;
    const unsigned kind = (v >> 3) & 0x7u;
    const unsigned align = (v >> 6) & 0x7Fu;
    if (v >> 14 || op >= static_cast<unsigned>(op_count) ||
        kind >= static_cast<unsigned>(memory_kind_count) || align > 64)
      return fail("invalid event attributes " + std::to_string(v));
    col.attrs[k] = static_cast<std::uint16_t>(v);
  }
  for (std::uint32_t k = 0; k < events; ++k) {
    const std::uint64_t v = in.next();
    if (v >= origin_count) return fail("origin index " + std::to_string(v) + " out of range");
    col.origin[k] = static_cast<std::uint16_t>(v);  // chunk-local until commit_chunk
  }
  std::uint64_t t = 0;
  for (std::uint32_t k = 0; k < events; ++k)
    col.time_ns[k] = t += static_cast<std::uint64_t>(unzigzag(in.next()));
  extras.big_sizes.clear();
  for (std::uint32_t k = 0; k < events; ++k) {
    const std::uint64_t v = in.next();
    if (v >= Trace::big_size_marker) {
      col.size32[k] = Trace::big_size_marker;
      extras.big_sizes.emplace_back(k, v);
    } else {
      col.size32[k] = static_cast<std::uint32_t>(v);
    }
  }

  std::vector<std::uint64_t>& alloc_addresses = scratch.alloc_addresses;
  alloc_addresses.clear();
  std::uint64_t previous_address = 0;
  for (std::uint32_t k = 0; k < events; ++k) {
    const Op op = static_cast<Op>(col.attrs[k] & 0x7u);
    if (!is_memory_op(op)) {
      col.address[k] = in.next();
      continue;
    }
    const std::uint64_t tag = in.next();
    if (tag & 1) {
      const std::uint64_t back = tag >> 1;
      if (op != Op::free || back == 0 || back > alloc_addresses.size())
        return fail("back-reference " + std::to_string(back) + " out of range");
      col.address[k] = alloc_addresses[alloc_addresses.size() - back];
      continue;
    }
    const std::uint64_t zz = tag == 0 ? in.next() : (tag >> 1) - 1;
    col.address[k] = previous_address += static_cast<std::uint64_t>(unzigzag(zz));
    if (op == Op::alloc) alloc_addresses.push_back(col.address[k]);
  }
  if (in.failed()) return fail("payload ends early");
  if (!in.at_end()) return fail("stray bytes after the last event");
  return true;
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
  const Trace::NewColumns col = out.columns_at(base);
  for (std::uint32_t k = 0; k < events; ++k) col.origin[k] = global[col.origin[k]];
  for (const auto& [k, size] : extras.big_sizes) out.set_big_size(base + k, size);
  for (auto& [index, text] : extras.labels) out.set_label(base + index, std::move(text));
  return true;
}

bool decode_chunk(const std::uint8_t* data, std::size_t size, std::uint32_t events, Trace& out,
                  DecodeScratch& scratch, std::string& error) {
  const std::size_t base = out.size();
  const Trace::NewColumns col = out.extend(events);
  ChunkExtras extras;
  if (decode_chunk_columns(data, size, events, col, extras, scratch, error) &&
      commit_chunk(out, base, events, extras, error))
    return true;
  out.truncate(base);
  return false;
}

}  // namespace alloclab::detail
