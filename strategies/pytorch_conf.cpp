// `pytorch-conf`: a PYTORCH_CUDA_ALLOC_CONF string, read as PyTorch reads it
// (c10/core/AllocatorConfig.cpp, AllocatorConfig::lexArgs and parseArgs), mapped onto the options
// of the `pytorch` model. Every key PyTorch accepts is either mapped or refused as not modelled,
// so a pasted configuration never half-applies without saying so.
#include <algorithm>
#include <bit>
#include <charconv>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "alloclab/strategies/pytorch.hpp"

namespace alloclab {
namespace {

constexpr const char* kName = "pytorch-conf";

SpecError conf_error(std::string_view key, const std::string& what) {
  return SpecError(std::string(kName) + ": " + single_quoted(key) + ": " + what);
}

SpecError not_modelled(std::string_view item, const std::string& why) {
  return SpecError(std::string(kName) + ": " + single_quoted(item) + " is not modelled (" + why +
                   ")");
}

// AllocatorConfig::lexArgs: ',' ':' '[' ']' are tokens of their own, spaces are dropped, and
// every other run of characters is one token.
std::vector<std::string> lex(std::string_view conf) {
  std::vector<std::string> tokens;
  std::string word;
  for (char c : conf) {
    if (c == ',' || c == ':' || c == '[' || c == ']') {
      if (!word.empty()) tokens.push_back(std::move(word));
      word.clear();
      tokens.emplace_back(1, c);
    } else if (c != ' ') {
      word += c;
    }
  }
  if (!word.empty()) tokens.push_back(std::move(word));
  return tokens;
}

class Reader {
 public:
  explicit Reader(std::vector<std::string> tokens) : tokens_(std::move(tokens)) {}
  bool done() const { return i_ >= tokens_.size(); }
  // The next token, which must exist (`key` names the item for the error).
  const std::string& next(std::string_view key) {
    if (done()) throw conf_error(key, "the value is missing");
    return tokens_[i_++];
  }
  const std::string* peek() const { return done() ? nullptr : &tokens_[i_]; }
  void expect(std::string_view key, char c) {
    const std::string& t = next(key);
    if (t != std::string(1, c)) {
      throw conf_error(key, "expected '" + std::string(1, c) + "', found " + single_quoted(t));
    }
  }

 private:
  std::vector<std::string> tokens_;
  std::size_t i_ = 0;
};

// A whole number as PyTorch's stoi/stoul would want it, but strictly: digits only.
std::uint64_t whole_number(std::string_view key, const std::string& text) {
  std::uint64_t n = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
    throw conf_error(key, "expected a whole number, found " + single_quoted(text));
  }
  return n;
}

// max_split_size_mb and max_non_split_rounding_mb: whole MiB, at least 20; PyTorch caps the
// value at SIZE_MAX / 1 MiB MiB.
std::uint64_t mib_option(std::string_view key, const std::string& text) {
  const std::uint64_t mb = whole_number(key, text);
  if (mb < pytorch::kLargeBuffer / pytorch::kMiB) {
    throw conf_error(key, "too small, must be >= 20 (as in PyTorch)");
  }
  return std::min(mb, pytorch::kUnlimited / pytorch::kMiB) * pytorch::kMiB;
}

bool true_false(std::string_view key, const std::string& text) {
  if (text == "True") return true;
  if (text == "False") return false;
  throw conf_error(key, "expected True or False, found " + single_quoted(text));
}

// parseRoundUpPower2Divisions: a single power of two for every size, or `[B:N,...,>:N]`
// applied on top of `list`.
std::vector<std::uint64_t> read_divisions(Reader& r, std::string_view key,
                                          std::vector<std::uint64_t> list) {
  const std::string& first = r.next(key);
  if (first != "[") {
    const std::uint64_t d = whole_number(key, first);
    if (!std::has_single_bit(d) || d > pytorch::kMaxDivisions) {
      throw conf_error(
          key, "the divisions must be a power of two up to 2^30, found " + single_quoted(first));
    }
    return std::vector<std::uint64_t>(pytorch::kRoundupIntervals, d);
  }
  std::vector<pytorch::DivisionListItem> items;
  while (true) {
    const std::string& bound = r.next(key);
    if (bound == "]") break;
    pytorch::DivisionListItem item;
    if (bound != ">") item.bound = whole_number(key, bound);
    r.expect(key, ':');
    item.divisions = whole_number(key, r.next(key));
    items.push_back(item);
    const std::string& after = r.next(key);
    if (after == "]") break;
    if (after != ",") throw conf_error(key, "expected ',' or ']', found " + single_quoted(after));
  }
  try {
    return pytorch::division_list(items, std::move(list));
  } catch (const SpecError& e) {
    throw SpecError(std::string(kName) + ": " + e.what());
  }
}

}  // namespace

std::vector<std::pair<std::string, std::string>> pytorch_conf_settings(std::string_view conf) {
  std::vector<std::pair<std::string, std::string>> settings;
  std::string item;
  int depth = 0;
  const auto add = [&] {
    if (const std::size_t colon = item.find(':'); colon != std::string::npos)
      settings.emplace_back(item.substr(0, colon), item.substr(colon + 1));
    item.clear();
  };
  for (const std::string& token : lex(conf)) {
    if (token == "[") ++depth;
    if (token == "]") --depth;
    if (token == "," && depth <= 0) {
      add();
      continue;
    }
    item += token;
  }
  add();
  return settings;
}

PyTorchOptions parse_pytorch_alloc_conf(std::string_view conf) {
  PyTorchOptions o;
  std::vector<std::uint64_t> divisions;
  Reader r(lex(conf));
  while (!r.done()) {
    const std::string key = r.next("");
    if (key == "," || key == ":" || key == "[" || key == "]") {
      throw SpecError(std::string(kName) + ": expected a key, found " + single_quoted(key));
    }
    if (key == "max_split_size_mb") {
      r.expect(key, ':');
      o.max_split_size = mib_option(key, r.next(key));
    } else if (key == "max_non_split_rounding_mb") {
      r.expect(key, ':');
      o.max_non_split_rounding = mib_option(key, r.next(key));
    } else if (key == "garbage_collection_threshold") {
      r.expect(key, ':');
      const std::string& text = r.next(key);
      Ratio t;
      try {
        t = parse_ratio(text);
      } catch (const SpecError& e) {
        throw conf_error(key, e.what());
      }
      if (t.num == 0 || t.num >= t.den) {
        throw conf_error(key, "must be in (0.0, 1.0), found " + single_quoted(text));
      }
      o.garbage_collection_threshold = t;
    } else if (key == "roundup_power2_divisions") {
      r.expect(key, ':');
      divisions = read_divisions(r, key, std::move(divisions));
    } else if (key == "backend") {
      r.expect(key, ':');
      const std::string& value = r.next(key);
      if (value == "cudaMallocAsync") {
        throw not_modelled("backend:cudaMallocAsync", "the model is the native caching allocator");
      }
      if (value != "native") {
        throw conf_error(key, "unknown backend " + single_quoted(value) +
                                  " (PyTorch: native or cudaMallocAsync)");
      }
    } else if (key == "expandable_segments") {
      r.expect(key, ':');
      o.expandable_segments = true_false(key, r.next(key));
    } else if (key == "release_lock_on_cudamalloc" || key == "release_lock_on_hipmalloc") {
      // Only whether a lock is held during cudaMalloc: no effect on which memory is used.
      r.expect(key, ':');
      true_false(key, r.next(key));
    } else if (key == "pinned_use_cuda_host_register" || key == "pinned_use_hip_host_register" ||
               key == "pinned_num_register_threads" || key == "pinned_use_background_threads" ||
               key == "pinned_reserve_segment_size_mb") {
      throw not_modelled(key, "it configures PyTorch's pinned host memory allocator");
    } else if (key == "graph_capture_record_stream_reuse") {
      throw not_modelled(key, "the model has no CUDA graph capture");
    } else {
      throw conf_error(key, "unknown key (PyTorch: Unrecognized CachingAllocator option)");
    }
    if (!r.done()) r.expect(key, ',');
  }
  o.roundup_power2_division_list = std::move(divisions);
  return o;
}

bool is_pytorch_conf_spec(std::string_view spec) {
  const std::string_view s = trim_spaces(spec);
  return trim_spaces(s.substr(0, s.find(':'))) == kName;
}

ParsedSpec split_pytorch_conf_spec(std::string_view spec) {
  const std::string_view s = trim_spaces(spec);
  ParsedSpec parsed;
  parsed.name = kName;
  const std::size_t colon = s.find(':');
  const std::string_view rest =
      colon == std::string_view::npos ? "" : trim_spaces(s.substr(colon + 1));
  if (rest.empty() || rest.front() != '"') {
    parsed.params.emplace_back("conf", std::string(rest));
    return parsed;
  }
  const std::size_t close = rest.find('"', 1);
  if (close == std::string_view::npos) {
    throw SpecError("strategy spec " + single_quoted(s) + " has no closing '\"' after the conf");
  }
  parsed.params.emplace_back("conf", std::string(rest.substr(1, close - 1)));
  const std::string_view tail = trim_spaces(rest.substr(close + 1));
  if (tail.empty()) return parsed;
  if (tail.front() != ',') {
    throw SpecError("strategy spec " + single_quoted(s) +
                    ": expected ',key=value' after the quoted conf");
  }
  ParsedSpec extra = split_spec(std::string(kName) + ":" + std::string(tail.substr(1)));
  for (auto& [key, value] : extra.params) {
    if (key == "conf") {
      throw SpecError("strategy spec " + single_quoted(s) + ": the conf is given twice");
    }
    parsed.params.emplace_back(std::move(key), std::move(value));
  }
  return parsed;
}

std::unique_ptr<Strategy> make_pytorch_conf_strategy(const StrategyParams& params,
                                                     Upstream& upstream) {
  params.check_keys({"conf", "per_process_memory_fraction", "device_memory"});
  PyTorchOptions o = parse_pytorch_alloc_conf(params.text("conf").value_or(""));
  o.per_process_memory_fraction = params.ratio("per_process_memory_fraction");
  o.device_memory = params.size("device_memory", 0);
  if (o.per_process_memory_fraction &&
      o.per_process_memory_fraction->num > o.per_process_memory_fraction->den) {
    throw SpecError(std::string(kName) + ": bad value " +
                    single_quoted(*params.text("per_process_memory_fraction")) +
                    " for 'per_process_memory_fraction': expected a fraction from 0 to 1");
  }
  validate_pytorch_options(o, kName);
  return std::make_unique<PyTorchCachingStrategy>(upstream, o);
}

}  // namespace alloclab
