#include "plain_tree.hpp"

#include <bit>
#include <cmath>
#include <limits>

namespace alloclab::interchange_detail {
namespace {

// Length of the valid UTF-8 sequence at text[i], or 0 when there is none (overlong forms,
// surrogates and code points above U+10FFFF are invalid, as in RFC 3629).
std::size_t utf8_sequence(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[i + k]); };
  const unsigned char b0 = byte(0);
  if (b0 < 0x80) return 1;
  std::size_t n = 0;
  unsigned char low = 0x80, high = 0xBF;  // the range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0) low = 0xA0;
    if (b0 == 0xED) high = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0) low = 0x90;
    if (b0 == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  if (byte(1) < low || byte(1) > high) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (byte(k) < 0x80 || byte(k) > 0xBF) return 0;
  return n;
}

// The text with every byte that starts no valid UTF-8 sequence replaced by U+FFFD.
std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8_sequence(text, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(text, i, n);
      i += n;
    }
  }
  return out;
}

bool is_valid_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8_sequence(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

}  // namespace

PlainTree::PlainTree() {
  nodes_.push_back({Kind::null});
  nodes_.push_back({Kind::boolean});
  nodes_.push_back({Kind::boolean});
}

PlainTree::Id PlainTree::add(Node node) {
  if (nodes_.size() >= max_nodes)
    throw TooLarge("more than " + std::to_string(max_nodes) + " values");
  nodes_.push_back(node);
  return static_cast<Id>(nodes_.size() - 1);
}

PlainTree::Id PlainTree::integer(std::int64_t value) {
  if (value >= 0 && value < static_cast<std::int64_t>(small_flag))
    return static_cast<Id>(value) | small_flag;
  return add({Kind::integer, false, 0, static_cast<std::uint64_t>(value)});
}

PlainTree::Id PlainTree::unsigned_integer(std::uint64_t value) {
  if (value <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    return integer(static_cast<std::int64_t>(value));
  return add({Kind::unsigned_integer, false, 0, value});
}

PlainTree::Id PlainTree::real(double value) {
  return add({Kind::real, false, 0, std::bit_cast<std::uint64_t>(value)});
}

PlainTree::Id PlainTree::add_text(Kind kind, std::string_view value) {
  if (value.size() > max_text_bytes)
    throw TooLarge("a text of " + std::to_string(value.size()) + " bytes");
  auto& nodes = text_nodes_[kind == Kind::text ? 0 : 1];
  if (const auto it = nodes.find(value); it != nodes.end()) return it->second;
  const Id id = add({kind, false, static_cast<std::uint32_t>(texts_.size()), 0});
  texts_.emplace_back(value);
  nodes.emplace(texts_.back(), id);
  return id;
}

PlainTree::Id PlainTree::text(std::string_view value) {
  if (is_valid_utf8(value)) return add_text(Kind::text, value);
  return add_text(Kind::text, valid_utf8(value));
}

PlainTree::Id PlainTree::bytes(std::string_view value) {
  return add_text(Kind::bytes, value);
}

PlainTree::Id PlainTree::list() {
  const Id id = add({Kind::list, false, static_cast<std::uint32_t>(items_.size()), 0});
  items_.emplace_back();
  return id;
}

PlainTree::Id PlainTree::dict() {
  const Id id = add({Kind::dict, false, static_cast<std::uint32_t>(items_.size()), 0});
  items_.emplace_back();
  return id;
}

PlainTree::Id PlainTree::tuple(std::span<const Id> items) {
  const Id id = add({Kind::tuple, false, static_cast<std::uint32_t>(items_.size()), 0});
  items_.emplace_back(items.begin(), items.end());
  return id;
}

void PlainTree::extend(Id container, std::span<const Id> items) {
  std::vector<Id>& to = items_[nodes_[container].index];
  to.insert(to.end(), items.begin(), items.end());
}

void PlainTree::extend(Id container, std::vector<Id>&& items) {
  std::vector<Id>& to = items_[nodes_[container].index];
  if (to.empty()) {
    to = std::move(items);
    to.shrink_to_fit();  // a finished container keeps no spare room
  } else {
    to.insert(to.end(), items.begin(), items.end());
  }
}

std::int64_t PlainTree::integer_of(Id id) const {
  if (is_small(id)) return static_cast<std::int64_t>(id & ~small_flag);
  return static_cast<std::int64_t>(nodes_[id].value);
}

double PlainTree::real_of(Id id) const {
  return std::bit_cast<double>(nodes_[id].value);
}

std::string_view PlainTree::text_of(Id id) const {
  return texts_[nodes_[id].index];
}

std::span<const PlainTree::Id> PlainTree::items(Id container) const {
  return items_[nodes_[container].index];
}

std::optional<PlainTree::Id> PlainTree::find(Id dict, std::string_view key) const {
  const std::span<const Id> all = items(dict);
  std::optional<Id> found;
  for (std::size_t i = 0; i + 1 < all.size(); i += 2)
    if (kind(all[i]) == Kind::text && text_of(all[i]) == key) found = all[i + 1];
  return found;
}

std::optional<PlainTree::Id> PlainTree::text_node(std::string_view value) const {
  const auto it = text_nodes_[0].find(value);
  if (it == text_nodes_[0].end()) return std::nullopt;
  return it->second;
}

std::optional<PlainTree::Id> PlainTree::find_key(Id dict, std::optional<Id> key) const {
  if (!key) return std::nullopt;
  const std::span<const Id> all = items(dict);
  std::optional<Id> found;
  for (std::size_t i = 0; i + 1 < all.size(); i += 2)
    if (all[i] == *key) found = all[i + 1];
  return found;
}

bool PlainTree::to_json(Id id, std::size_t depth, std::size_t& budget, nlohmann::json& out) const {
  if (budget == 0 || depth == 0) return false;
  --budget;
  switch (kind(id)) {
    case Kind::null:
      out = nullptr;
      return true;
    case Kind::boolean:
      out = boolean_of(id);
      return true;
    case Kind::integer:
      out = integer_of(id);
      return true;
    case Kind::unsigned_integer:
      out = unsigned_of(id);
      return true;
    case Kind::real:
      if (std::isfinite(real_of(id)))
        out = real_of(id);
      else
        out = nullptr;
      return true;
    case Kind::text:
      out = std::string(text_of(id));
      return true;
    case Kind::bytes:
      out = valid_utf8(text_of(id));
      return true;
    case Kind::list:
    case Kind::tuple:
      out = nlohmann::json::array();
      for (const Id item : items(id)) {
        nlohmann::json value;
        if (!to_json(item, depth - 1, budget, value)) return false;
        out.push_back(std::move(value));
      }
      return true;
    case Kind::dict: {
      out = nlohmann::json::object();
      const std::span<const Id> all = items(id);
      for (std::size_t i = 0; i + 1 < all.size(); i += 2) {
        nlohmann::json key, value;
        if (!to_json(all[i], depth - 1, budget, key) ||
            !to_json(all[i + 1], depth - 1, budget, value))
          return false;
        out[key.is_string() ? key.get<std::string>() : key.dump()] = std::move(value);
      }
      return true;
    }
  }
  return false;
}

std::optional<nlohmann::json> PlainTree::to_json(Id id, std::size_t max_depth,
                                                 std::size_t max_values) const {
  nlohmann::json out;
  std::size_t budget = max_values;
  if (!to_json(id, max_depth, budget, out)) return std::nullopt;
  return out;
}

std::string PlainTree::describe(Id id) const {
  constexpr std::size_t limit = 200;
  const std::optional<nlohmann::json> value = to_json(id, 8, 200);
  if (!value) return "(a value too large or too deeply nested to show)";
  std::string text = value->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() > limit) {
    // Cut on a character boundary.
    std::size_t end = limit;
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
    text.resize(end);
    text += "...";
  }
  return text;
}

}  // namespace alloclab::interchange_detail
