// Spec strings and parameter values. Every error names the text it could not read and says what
// would have been accepted, because these messages reach the user as-is (CLI exit status 2).
#include "alloclab/strategies/params.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <utility>

namespace alloclab {
namespace {

// 128-bit arithmetic keeps size and ratio computations exact (GCC and Clang on 64-bit targets).
__extension__ typedef unsigned __int128 U128;

constexpr std::uint64_t kMax64 = std::numeric_limits<std::uint64_t>::max();
// With at most 18 decimals the fraction is < 10^18 and fraction * 2^40 fits easily in 128 bits.
constexpr std::size_t kMaxDecimals = 18;

constexpr std::string_view kSizeHelp =
    "expected a byte count with an optional unit: B, KB MB GB TB (powers of 1000), "
    "KiB MiB GiB TiB (powers of 1024), the B may be left out; e.g. 1048576, 64MiB, 1.5GB";

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += ", ";
    out += item;
  }
  return out;
}

std::uint64_t pow10(std::size_t exponent) {
  std::uint64_t result = 1;
  for (std::size_t i = 0; i < exponent; ++i) result *= 10;
  return result;
}

// A decimal number "digits[.digits]" split into its parts; the fraction has its trailing zeros
// removed, so `fraction / 10^decimals` is the exact fractional value.
struct Decimal {
  U128 integer = 0;  // saturates just above 2^64 (enough to detect overflow)
  std::uint64_t fraction = 0;
  std::size_t decimals = 0;
};

// Reads the longest decimal prefix of `text`. Returns the number of characters used, or 0 when
// `text` does not start with a well-formed decimal. `too_precise` is set when more than
// kMaxDecimals significant decimals were given.
std::size_t read_decimal(std::string_view text, Decimal& out, bool& too_precise) {
  too_precise = false;
  std::size_t i = 0;
  while (i < text.size() && is_digit(text[i])) {
    out.integer =
        std::min<U128>(out.integer * 10 + static_cast<unsigned>(text[i] - '0'), U128{kMax64} + 1);
    ++i;
  }
  if (i == 0) return 0;
  if (i == text.size() || text[i] != '.') return i;
  std::size_t digits_begin = ++i;
  while (i < text.size() && is_digit(text[i])) ++i;
  if (i == digits_begin) return 0;  // "5." is not a number
  std::string_view digits = text.substr(digits_begin, i - digits_begin);
  while (!digits.empty() && digits.back() == '0') digits.remove_suffix(1);
  if (digits.size() > kMaxDecimals) {
    too_precise = true;
    return i;
  }
  for (char c : digits) out.fraction = out.fraction * 10 + static_cast<unsigned>(c - '0');
  out.decimals = digits.size();
  return i;
}

struct Unit {
  std::string_view suffix;
  std::uint64_t multiplier;
};

// Every accepted spelling. "K" and "KB" are decimal (as dfdx's CacheSize), "Ki"/"KiB" binary.
constexpr Unit kUnits[] = {
    {"", 1},
    {"B", 1},
    {"K", 1000ULL},
    {"KB", 1000ULL},
    {"M", 1000ULL * 1000},
    {"MB", 1000ULL * 1000},
    {"G", 1000ULL * 1000 * 1000},
    {"GB", 1000ULL * 1000 * 1000},
    {"T", 1000ULL * 1000 * 1000 * 1000},
    {"TB", 1000ULL * 1000 * 1000 * 1000},
    {"Ki", 1ULL << 10},
    {"KiB", 1ULL << 10},
    {"Mi", 1ULL << 20},
    {"MiB", 1ULL << 20},
    {"Gi", 1ULL << 30},
    {"GiB", 1ULL << 30},
    {"Ti", 1ULL << 40},
    {"TiB", 1ULL << 40},
};

SpecError size_error(std::string_view text, std::string_view why) {
  return SpecError("invalid size " + single_quoted(text) + ": " + std::string(why));
}

}  // namespace

std::string_view trim_spaces(std::string_view text) {
  auto is_space = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
  };
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

std::string single_quoted(std::string_view text) {
  // Built with appends: GCC 12 at -O3 reports a false -Wrestrict for "'" + std::string(...).
  std::string out;
  out.reserve(text.size() + 2);
  out += '\'';
  out += text;
  out += '\'';
  return out;
}

std::uint64_t parse_size(std::string_view text) {
  const std::string_view t = trim_spaces(text);
  if (t.empty()) throw size_error(text, std::string("empty; ") + std::string(kSizeHelp));
  if (t.front() == '-') throw size_error(t, "sizes cannot be negative");
  if (t == "unlimited" || t == "inf" || t == "infinity" || t == "none") {
    throw size_error(t, "leave the parameter out for no limit");
  }
  Decimal number;
  bool too_precise = false;
  const std::size_t used = read_decimal(t, number, too_precise);
  if (used == 0) throw size_error(t, kSizeHelp);
  if (too_precise) {
    throw size_error(t, "too many decimal places (at most " + std::to_string(kMaxDecimals) + ")");
  }
  const std::string_view suffix = t.substr(used);
  const Unit* unit = nullptr;
  for (const Unit& candidate : kUnits) {
    if (candidate.suffix == suffix) unit = &candidate;
  }
  if (unit == nullptr)
    throw size_error(t, "unknown unit " + single_quoted(suffix) + "; " + std::string(kSizeHelp));

  const U128 scaled_fraction = U128{number.fraction} * unit->multiplier;
  const std::uint64_t scale = pow10(number.decimals);
  if (scaled_fraction % scale != 0) throw size_error(t, "not a whole number of bytes");
  const U128 bytes = number.integer * unit->multiplier + scaled_fraction / scale;
  if (bytes > kMax64) throw size_error(t, "too large (the limit is 2^64-1 bytes)");
  return static_cast<std::uint64_t>(bytes);
}

std::uint64_t Ratio::max_capacity(std::uint64_t request) const {
  const U128 bound = U128{request} * num / den;
  return bound > kMax64 ? kMax64 : static_cast<std::uint64_t>(bound);
}

Ratio parse_ratio(std::string_view text) {
  const std::string_view t = trim_spaces(text);
  auto error = [&](std::string_view why) {
    return SpecError("invalid number " + single_quoted(t) + ": " + std::string(why));
  };
  if (!t.empty() && t.front() == '-') throw error("it cannot be negative");
  Decimal number;
  bool too_precise = false;
  const std::size_t used = read_decimal(t, number, too_precise);
  if (used == 0 || used != t.size()) throw error("expected a decimal number such as 1.5");
  if (too_precise) {
    throw error("too many decimal places (at most " + std::to_string(kMaxDecimals) + ")");
  }
  const std::uint64_t den = pow10(number.decimals);
  const U128 num = number.integer * den + number.fraction;
  if (num > kMax64) throw error("too large");
  return Ratio{static_cast<std::uint64_t>(num), den};
}

ParsedSpec split_spec(std::string_view spec) {
  const std::string_view s = trim_spaces(spec);
  const std::string shown = single_quoted(s);
  if (s.empty()) {
    throw SpecError("empty strategy spec (expected 'name' or 'name:key=value,...')");
  }
  ParsedSpec parsed;
  const std::size_t colon = s.find(':');
  parsed.name = std::string(trim_spaces(s.substr(0, colon)));
  if (parsed.name.empty()) throw SpecError("strategy spec " + shown + " has no name before ':'");
  if (colon == std::string_view::npos) return parsed;

  std::string_view rest = s.substr(colon + 1);
  if (trim_spaces(rest).empty()) {
    throw SpecError("strategy spec " + shown + " has ':' but no parameters (write '" + parsed.name +
                    "' alone or '" + parsed.name + ":key=value')");
  }
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = trim_spaces(rest.substr(0, comma));
    if (item.empty()) {
      throw SpecError("strategy spec " + shown + " has an empty parameter (a stray ',')");
    }
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      throw SpecError("strategy spec " + shown + ": parameter " + single_quoted(item) +
                      " has no value (expected key=value)");
    }
    const std::string_view key = trim_spaces(item.substr(0, eq));
    const std::string_view value = trim_spaces(item.substr(eq + 1));
    if (key.empty()) {
      throw SpecError("strategy spec " + shown + ": parameter " + single_quoted(item) +
                      " has no key");
    }
    if (value.empty()) {
      throw SpecError("strategy spec " + shown + ": parameter " + single_quoted(key) +
                      " has an empty value");
    }
    for (const auto& [seen, unused] : parsed.params) {
      if (seen == key) {
        throw SpecError("strategy spec " + shown + ": parameter " + single_quoted(key) +
                        " is given twice");
      }
    }
    parsed.params.emplace_back(std::string(key), std::string(value));
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return parsed;
}

StrategyParams::StrategyParams(std::string strategy,
                               std::vector<std::pair<std::string, std::string>> params)
    : strategy_(std::move(strategy)), params_(std::move(params)) {}

void StrategyParams::check_keys(const std::vector<std::string>& accepted) const {
  for (const auto& [key, value] : params_) {
    if (std::find(accepted.begin(), accepted.end(), key) != accepted.end()) continue;
    if (accepted.empty()) {
      throw SpecError(strategy_ + ": unknown parameter " + single_quoted(key) + " (" + strategy_ +
                      " takes no parameters)");
    }
    throw SpecError(strategy_ + ": unknown parameter " + single_quoted(key) +
                    " (accepted: " + join(accepted) + ")");
  }
}

bool StrategyParams::has(std::string_view key) const {
  return text(key).has_value();
}

std::optional<std::string> StrategyParams::text(std::string_view key) const {
  for (const auto& [k, v] : params_) {
    if (k == key) return v;
  }
  return std::nullopt;
}

namespace {

SpecError value_error(const std::string& strategy, std::string_view key, std::string_view value,
                      std::string_view expected) {
  return SpecError(strategy + ": bad value " + single_quoted(value) + " for " + single_quoted(key) +
                   ": " + std::string(expected));
}

}  // namespace

std::uint64_t StrategyParams::size(std::string_view key, std::uint64_t fallback) const {
  const auto value = text(key);
  if (!value) return fallback;
  try {
    return parse_size(*value);
  } catch (const SpecError& e) {
    // parse_size says "invalid size 'x': why"; keep the why and add which key it was.
    const std::string what = e.what();
    const std::size_t colon = what.find(": ");
    throw value_error(strategy_, key, *value,
                      colon == std::string::npos ? what : what.substr(colon + 2));
  }
}

std::uint64_t StrategyParams::count(std::string_view key, std::uint64_t fallback) const {
  const auto value = text(key);
  if (!value) return fallback;
  std::uint64_t result = 0;
  const char* begin = value->data();
  const char* end = begin + value->size();
  const auto [ptr, ec] = std::from_chars(begin, end, result);
  if (!value->empty() && value->front() == '-') {
    throw value_error(strategy_, key, *value, "expected a whole number >= 0");
  }
  if (ec == std::errc::result_out_of_range) {
    throw value_error(strategy_, key, *value, "too large (the limit is 2^64-1)");
  }
  if (ec != std::errc() || ptr != end) {
    throw value_error(strategy_, key, *value, "expected a whole number such as 1000");
  }
  return result;
}

double StrategyParams::number(std::string_view key, double fallback) const {
  const auto value = text(key);
  if (!value) return fallback;
  double result = 0;
  const char* begin = value->data();
  const char* end = begin + value->size();
  const auto [ptr, ec] = std::from_chars(begin, end, result);
  if (ec != std::errc() || ptr != end || !std::isfinite(result)) {
    throw value_error(strategy_, key, *value, "expected a finite number such as 1.5");
  }
  return result;
}

std::optional<Ratio> StrategyParams::ratio(std::string_view key) const {
  const auto value = text(key);
  if (!value) return std::nullopt;
  try {
    return parse_ratio(*value);
  } catch (const SpecError& e) {
    const std::string what = e.what();
    const std::size_t colon = what.find(": ");
    throw value_error(strategy_, key, *value,
                      colon == std::string::npos ? what : what.substr(colon + 2));
  }
}

std::string StrategyParams::choice(std::string_view key, const std::vector<std::string>& choices,
                                   std::string fallback) const {
  const auto value = text(key);
  if (!value) return fallback;
  if (std::find(choices.begin(), choices.end(), *value) != choices.end()) return *value;
  throw value_error(strategy_, key, *value, "expected one of: " + join(choices));
}

}  // namespace alloclab
