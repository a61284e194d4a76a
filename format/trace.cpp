#include "alloclab/format/trace.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>

#include <sys/mman.h>
#include <stdexcept>

#include "alloclab/format/error.hpp"

namespace alloclab {

std::size_t Trace::OriginHash::operator()(const Origin& o) const noexcept {
  std::uint64_t h = o.thread * 0x9E3779B97F4A7C15ull;
  h ^= (static_cast<std::uint64_t>(static_cast<std::uint32_t>(o.device)) + 0x632BE59BD9B4E019ull) +
       (h << 6) + (h >> 2);
  h ^= (o.stream * 0xC2B2AE3D27D4EB4Full) + (h << 6) + (h >> 2);
  h ^= (o.pool * 0x165667B19E3779F9ull) + (h << 6) + (h >> 2);
  return static_cast<std::size_t>(h);
}

void Trace::reserve(std::size_t events) {
  time_ns_.reserve(events);
  address_.reserve(events);
  size32_.reserve(events);
  origin_.reserve(events);
  attrs_.reserve(events);
}

void Trace::clear() {
  *this = Trace();
}

std::uint16_t Trace::intern_origin(const Origin& origin) {
  // Consecutive events nearly always come from the same thread and stream.
  if (!origins_.empty() && origins_[last_origin_] == origin) return last_origin_;
  auto it = origin_lookup_.find(origin);
  if (it == origin_lookup_.end()) {
    if (origins_.size() >= max_origins)
      throw InputError("more than " + std::to_string(max_origins) +
                       " distinct (thread, device, stream) combinations in one trace");
    it = origin_lookup_.emplace(origin, static_cast<std::uint16_t>(origins_.size())).first;
    origins_.push_back(origin);
  }
  last_origin_ = it->second;
  return last_origin_;
}

std::uint16_t Trace::pack_attrs(Op op, MemoryKind kind, std::uint64_t alignment, bool segment,
                                bool realloc_in_place) {
  if (alignment != 0 && !std::has_single_bit(alignment))
    throw InputError("alignment " + std::to_string(alignment) + " is not a power of two");
  if (realloc_in_place && op != Op::alloc)
    throw InputError("a " + std::string(to_string(op)) + " marked realloc_in_place (only an " +
                     "alloc can be)");
  return event_attrs::pack(op, kind, event_attrs::align_code_of(alignment), segment,
                           realloc_in_place);
}

void Trace::append_raw(std::uint64_t time_ns, std::uint64_t address, std::uint64_t size,
                       std::uint16_t origin, std::uint16_t attrs) {
  const std::size_t index = time_ns_.size();
  time_ns_.push_back(time_ns);
  address_.push_back(address);
  if (size >= big_size_marker) {
    size32_.push_back(big_size_marker);
    big_sizes_.emplace_back(index, size);
  } else {
    size32_.push_back(static_cast<std::uint32_t>(size));
  }
  origin_.push_back(origin);
  attrs_.push_back(attrs);
}

namespace {

// Large columns are filled once, front to back, right after they are made: transparent huge
// pages (where the kernel offers them on request) turn ~250k page faults per GB into ~500.
template <typename Column>
void reserve_with_huge_pages(Column& column, std::size_t size) {
  using T = typename Column::value_type;
  constexpr std::size_t huge_page = 2u << 20;
  if (size <= column.capacity() || size * sizeof(T) < 4 * huge_page) return;
  column.reserve(size);
  const auto begin = reinterpret_cast<std::uintptr_t>(column.data() + column.size());
  const auto end = reinterpret_cast<std::uintptr_t>(column.data() + column.capacity());
  const std::uintptr_t aligned = (begin + huge_page - 1) & ~(huge_page - 1);
  if (end > aligned + huge_page)
    ::madvise(reinterpret_cast<void*>(aligned), (end - aligned) & ~(huge_page - 1), MADV_HUGEPAGE);
}

}  // namespace

Trace::NewColumns Trace::extend(std::size_t n) {
  const std::size_t base = time_ns_.size();
  reserve_with_huge_pages(time_ns_, base + n);
  reserve_with_huge_pages(address_, base + n);
  reserve_with_huge_pages(size32_, base + n);
  reserve_with_huge_pages(origin_, base + n);
  reserve_with_huge_pages(attrs_, base + n);
  time_ns_.resize(base + n);
  address_.resize(base + n);
  size32_.resize(base + n);
  origin_.resize(base + n);
  attrs_.resize(base + n);
  return {time_ns_.data() + base, address_.data() + base, size32_.data() + base,
          origin_.data() + base, attrs_.data() + base};
}

Trace::NewColumns Trace::columns_at(std::size_t first) {
  return {time_ns_.data() + first, address_.data() + first, size32_.data() + first,
          origin_.data() + first, attrs_.data() + first};
}

void Trace::erase(std::size_t first, std::size_t last) {
  auto cut = [first, last](auto& column) {
    column.erase(column.begin() + static_cast<std::ptrdiff_t>(first),
                 column.begin() + static_cast<std::ptrdiff_t>(last));
  };
  cut(time_ns_);
  cut(address_);
  cut(size32_);
  cut(origin_);
  cut(attrs_);
}

void Trace::set_big_size(std::size_t i, std::uint64_t size) {
  size32_[i] = big_size_marker;
  big_sizes_.emplace_back(i, size);
}

void Trace::truncate(std::size_t size) {
  if (size >= time_ns_.size()) return;
  time_ns_.resize(size);
  address_.resize(size);
  size32_.resize(size);
  origin_.resize(size);
  attrs_.resize(size);
  while (!big_sizes_.empty() && big_sizes_.back().first >= size) big_sizes_.pop_back();
  while (!labels_.empty() && labels_.back().first >= size) labels_.pop_back();
  while (!stack_ids_.empty() && stack_ids_.back().first >= size) stack_ids_.pop_back();
}

void Trace::clear_events() {
  time_ns_.clear();
  address_.clear();
  size32_.clear();
  origin_.clear();
  attrs_.clear();
  big_sizes_.clear();
  labels_.clear();
  stack_ids_.clear();
}

std::uint32_t Trace::add_frame(StackFrame frame) {
  frames_.push_back(std::move(frame));
  return static_cast<std::uint32_t>(frames_.size() - 1);
}

void Trace::set_frame(std::uint32_t index, StackFrame frame) {
  if (index >= frames_.size())
    throw std::logic_error("Trace::set_frame: frame " + std::to_string(index) + " out of range");
  frames_[index] = std::move(frame);
}

std::uint32_t Trace::add_stack(std::vector<std::uint32_t> frame_indices) {
  for (std::uint32_t f : frame_indices)
    if (f >= frames_.size())
      throw std::logic_error("Trace::add_stack: frame index " + std::to_string(f) +
                             " out of range");
  stacks_.push_back(std::move(frame_indices));
  return static_cast<std::uint32_t>(stacks_.size());
}

void Trace::set_stack_id(std::size_t i, std::uint32_t id) {
  if (id == 0) return;
  if (id > stacks_.size())
    throw std::logic_error("Trace::set_stack_id: stack " + std::to_string(id) + " not defined");
  if (!stack_ids_.empty() && stack_ids_.back().first >= i)
    throw std::logic_error("Trace::set_stack_id: ids must be set in increasing event order");
  stack_ids_.emplace_back(i, id);
}

std::uint32_t Trace::stack_id(std::size_t i) const {
  auto it =
      std::lower_bound(stack_ids_.begin(), stack_ids_.end(), i,
                       [](const auto& entry, std::size_t index) { return entry.first < index; });
  return it != stack_ids_.end() && it->first == i ? it->second : 0;
}

void Trace::set_label(std::size_t i, std::string label) {
  if (label.empty()) return;
  if (!labels_.empty() && labels_.back().first >= i)
    throw std::logic_error("Trace::set_label: labels must be set in increasing event order");
  labels_.emplace_back(i, std::move(label));
}

void Trace::push_back(const Event& e) {
  const std::uint16_t attrs = pack_attrs(e.op, e.kind, e.alignment, e.segment, e.realloc_in_place);
  const std::uint16_t origin = intern_origin(Origin{e.thread, e.device, e.stream, e.pool});
  append_raw(e.time_ns, e.address, e.size, origin, attrs);
  if (!e.label.empty()) labels_.emplace_back(time_ns_.size() - 1, e.label);
}

std::uint64_t Trace::big_size(std::size_t i) const {
  auto it =
      std::lower_bound(big_sizes_.begin(), big_sizes_.end(), i,
                       [](const auto& entry, std::size_t index) { return entry.first < index; });
  return it != big_sizes_.end() && it->first == i ? it->second : big_size_marker;
}

std::string_view Trace::label(std::size_t i) const {
  auto it =
      std::lower_bound(labels_.begin(), labels_.end(), i,
                       [](const auto& entry, std::size_t index) { return entry.first < index; });
  return it != labels_.end() && it->first == i ? std::string_view(it->second) : std::string_view();
}

std::span<const std::pair<std::uint64_t, std::string>> Trace::labelled_events(
    std::size_t begin, std::size_t end) const {
  const auto before = [](const auto& entry, std::size_t index) { return entry.first < index; };
  const auto first = std::lower_bound(labels_.begin(), labels_.end(), begin, before);
  const auto last = std::lower_bound(first, labels_.end(), end, before);
  return {first, last};
}

Event Trace::event(std::size_t i) const {
  Event e;
  e.time_ns = time_ns(i);
  const Origin& o = origin(i);
  e.thread = o.thread;
  e.device = o.device;
  e.stream = o.stream;
  e.pool = o.pool;
  e.op = op(i);
  e.kind = kind(i);
  e.address = address(i);
  e.size = size_of(i);
  e.alignment = alignment(i);
  e.segment = segment(i);
  e.realloc_in_place = realloc_in_place(i);
  e.label = std::string(label(i));
  return e;
}

Trace::MemoryParts Trace::memory_parts() const {
  MemoryParts parts;
  parts.column_bytes =
      time_ns_.capacity() * sizeof(std::uint64_t) + address_.capacity() * sizeof(std::uint64_t) +
      size32_.capacity() * sizeof(std::uint32_t) + origin_.capacity() * sizeof(std::uint16_t) +
      attrs_.capacity() * sizeof(std::uint16_t);
  parts.big_size_slots = big_sizes_.capacity();
  parts.stack_id_slots = stack_ids_.capacity();
  for (const auto& [index, text] : labels_)
    parts.label_bytes += sizeof(index) + sizeof(text) + text.capacity();
  parts.table_bytes = origins_.capacity() * sizeof(Origin);
  for (const StackFrame& f : frames_)
    parts.table_bytes +=
        sizeof(f) + f.function.capacity() + f.module.capacity() + f.file.capacity();
  for (const auto& stack : stacks_)
    parts.table_bytes += sizeof(stack) + stack.capacity() * sizeof(stack[0]);
  return parts;
}

static_assert(Trace::MemoryParts::column_bytes_per_event ==
              2 * sizeof(std::uint64_t) + sizeof(std::uint32_t) + 2 * sizeof(std::uint16_t));

std::size_t Trace::MemoryParts::bytes() const {
  return column_bytes + big_size_slots * sizeof(std::pair<std::uint64_t, std::uint64_t>) +
         stack_id_slots * sizeof(std::pair<std::uint64_t, std::uint32_t>) + label_bytes +
         table_bytes;
}

bool Trace::operator==(const Trace& other) const {
  if (size() != other.size()) return false;
  for (std::size_t i = 0; i < size(); ++i)
    if (event(i) != other.event(i)) return false;
  return stack_ids_ == other.stack_ids_ && stacks_ == other.stacks_ && frames_ == other.frames_;
}

}  // namespace alloclab
