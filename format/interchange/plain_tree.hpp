#pragma once
// Private to alloclab_format: a document of plain data (what JSON and a plain-data pickle hold)
// in one compact tree, so the PyTorch snapshot reader maps JSON and pickle input with the same
// code.
//
// Values are numbered (Id). Containers hold the ids of their items, so a value a pickle
// references twice (its memo) is stored once, and a pickle may even build a container that holds
// itself: whoever walks the tree bounds its depth. Small non-negative integers live in the id
// itself and null, false and true are fixed ids, so the integers and flags of a large snapshot
// cost no node. Texts are stored once each.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

namespace alloclab::interchange_detail {

class PlainTree {
 public:
  using Id = std::uint32_t;
  // `integer` is any value that fits an int64; `unsigned_integer` only those above it.
  enum class Kind : std::uint8_t {
    null,
    boolean,
    integer,
    unsigned_integer,
    real,
    text,  // valid UTF-8
    bytes,
    list,
    tuple,
    dict  // items are key, value, key, value, ...
  };
  // More values than a tree holds (2^31), or one text longer than 2 GiB: far beyond any
  // snapshot. Readers turn it into an InputError that names the file and the place.
  struct TooLarge : std::runtime_error {
    using std::runtime_error::runtime_error;
  };
  static constexpr std::size_t max_nodes = std::size_t{1} << 31;
  static constexpr std::size_t max_text_bytes = std::size_t{1} << 31;

  PlainTree();

  // Building; each may throw TooLarge.
  Id null() const { return null_id; }
  Id boolean(bool value) const { return value ? true_id : false_id; }
  Id integer(std::int64_t value);
  Id unsigned_integer(std::uint64_t value);
  Id real(double value);
  // Invalid UTF-8 is replaced with U+FFFD, so the text can go into JSON metadata as it is.
  Id text(std::string_view value);
  Id bytes(std::string_view value);
  Id list();
  Id dict();
  Id tuple(std::span<const Id> items);
  // Appends to a list, or key, value pairs to a dict (an even number of ids).
  void extend(Id container, std::span<const Id> items);
  void extend(Id container, std::vector<Id>&& items);  // takes the vector when it can
  // Marks a container whose input was cut short: it may lack its last items.
  void mark_cut(Id container) { nodes_[container].cut = true; }

  // Reading.
  Kind kind(Id id) const { return is_small(id) ? Kind::integer : nodes_[id].kind; }
  bool is_container(Id id) const {
    const Kind k = kind(id);
    return k == Kind::list || k == Kind::tuple || k == Kind::dict;
  }
  bool is_cut(Id id) const { return !is_small(id) && nodes_[id].cut; }
  bool boolean_of(Id id) const { return id == true_id; }
  std::int64_t integer_of(Id id) const;  // Kind::integer
  std::uint64_t unsigned_of(Id id) const { return nodes_[id].value; }
  double real_of(Id id) const;
  std::string_view text_of(Id id) const;  // text or bytes
  std::span<const Id> items(Id container) const;
  // The value of the last item of a dict whose key is this text, as Python and JSON parsers keep
  // the last of repeated keys.
  std::optional<Id> find(Id dict, std::string_view key) const;
  // The node of the text `value`, if the tree holds that text: a text is stored once, so a key
  // known by its node is found by comparing ids (find_key), not characters.
  std::optional<Id> text_node(std::string_view value) const;
  // find() of the key whose text node is `key` (from text_node); nullopt for no key.
  std::optional<Id> find_key(Id dict, std::optional<Id> key) const;

  // The value as JSON, for metadata: tuples become arrays, bytes text (invalid UTF-8 replaced),
  // keys that are not text their JSON text, NaN and infinities null. Nothing deeper than
  // `max_depth` or beyond `max_values` values (a pickle may nest or share without end):
  // std::nullopt then.
  std::optional<nlohmann::json> to_json(Id id, std::size_t max_depth = 64,
                                        std::size_t max_values = 100000) const;
  // The value as JSON text for a message, cut after about 200 characters.
  std::string describe(Id id) const;

  // Nodes stored (small integers, null and booleans take none).
  std::size_t node_count() const { return nodes_.size(); }

 private:
  static constexpr Id null_id = 0, false_id = 1, true_id = 2;
  static constexpr Id small_flag = Id{1} << 31;
  static bool is_small(Id id) { return (id & small_flag) != 0; }

  struct Node {
    Kind kind = Kind::null;
    bool cut = false;
    std::uint32_t index = 0;  // into texts_ or items_
    std::uint64_t value = 0;  // integer bits, or a double's
  };
  Id add(Node node);
  Id add_text(Kind kind, std::string_view value);
  bool to_json(Id id, std::size_t depth, std::size_t& budget, nlohmann::json& out) const;

  std::vector<Node> nodes_;
  std::deque<std::string> texts_;  // a deque: the views in text_nodes_ stay valid as it grows
  std::unordered_map<std::string_view, Id> text_nodes_[2];  // text, bytes: one node per content
  std::vector<std::vector<Id>> items_;
};

}  // namespace alloclab::interchange_detail
