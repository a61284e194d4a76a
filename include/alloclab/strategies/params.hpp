#pragma once
// Parsing of spec strings `name:key=value,...` and of their values (sizes with units, numbers).
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace alloclab {

// A spec string that cannot be understood. what() says which part and what is accepted.
class SpecError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// "1048576", "64MiB", "1.5GB", "512KB": KB MB GB TB decimal, KiB MiB GiB TiB binary, B optional.
// Throws SpecError on anything else, on negatives and on values that overflow 64 bits.
std::uint64_t parse_size(std::string_view text);

// An exact non-negative decimal number such as `max_ratio=1.5` (= 15/10). Kept as a fraction so
// that comparisons like `capacity <= ratio * request` are exact and the same on every machine.
struct Ratio {
  std::uint64_t num = 1;
  std::uint64_t den = 1;  // a power of ten
  // floor(request * num / den), saturated at 2^64-1: the largest capacity within the ratio.
  std::uint64_t max_capacity(std::uint64_t request) const;
  bool operator==(const Ratio&) const = default;
};
// "1", "1.25", "2.0": digits with an optional fraction (at most 18 decimals). Throws SpecError.
Ratio parse_ratio(std::string_view text);

// Spec text helpers shared by every parser of specs (sweep templates, plug-in specs).
std::string_view trim_spaces(std::string_view text);
// 'text', for messages.
std::string single_quoted(std::string_view text);

struct ParsedSpec {
  std::string name;
  std::vector<std::pair<std::string, std::string>> params;  // in the order given
};
// Splits "name:k=v,k2=v2" (no validation of names or keys beyond syntax).
ParsedSpec split_spec(std::string_view spec);

// The parameters of one strategy, checked against the keys it accepts.
class StrategyParams {
 public:
  StrategyParams(std::string strategy, std::vector<std::pair<std::string, std::string>> params);
  // Throws SpecError naming the unknown key and listing `accepted`.
  void check_keys(const std::vector<std::string>& accepted) const;
  bool has(std::string_view key) const;
  std::optional<std::string> text(std::string_view key) const;
  std::uint64_t size(std::string_view key, std::uint64_t fallback) const;
  std::uint64_t count(std::string_view key, std::uint64_t fallback) const;
  double number(std::string_view key, double fallback) const;
  // An exact decimal (see Ratio), nullopt when the key is absent.
  std::optional<Ratio> ratio(std::string_view key) const;
  // One of `choices`, or SpecError listing them.
  std::string choice(std::string_view key, const std::vector<std::string>& choices,
                     std::string fallback) const;
  const std::string& strategy() const { return strategy_; }
  const std::vector<std::pair<std::string, std::string>>& all() const { return params_; }

 private:
  std::string strategy_;
  std::vector<std::pair<std::string, std::string>> params_;
};

}  // namespace alloclab
