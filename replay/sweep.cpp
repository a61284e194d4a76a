// Sweep templates, shards and the sweep replay. Every error names the template, the group (by
// number and text) and what was wrong, and lists the accepted forms: these messages reach the
// user as-is (CLI exit status 2).
#include "alloclab/replay/sweep.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <ostream>
#include <sstream>

#include "alloclab/format/units.hpp"
#include "alloclab/replay/parallel.hpp"
#include "alloclab/strategies/params.hpp"
#include "alloclab/strategies/registry.hpp"
#include "alloclab/strategies/upstream/sim.hpp"

namespace alloclab {
namespace {

// 128-bit arithmetic keeps the range arithmetic exact and overflow checks simple.
__extension__ typedef unsigned __int128 U128;

constexpr std::string_view kForms =
    "accepted forms: {a..b:xK} (a, a*K, a*K^2, ... up to b; K > 1, e.g. {1MiB..4GiB:x2}), "
    "{a..b:+K} (a, a+K, ... up to b; K > 0, e.g. {64MiB..1GiB:+64MiB}), {a..b} (whole numbers, "
    "step 1), {x,y,z} (a list of verbatim items); a, b and K are sizes such as 64MiB or plain "
    "numbers such as 1.25";

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// "123" (no sign, no unit, no fraction).
bool is_whole(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text)
    if (!is_digit(c)) return false;
  return true;
}

// "123" or "1.25" (no sign, no unit).
bool is_plain_decimal(std::string_view text) {
  const std::size_t dot = text.find('.');
  if (dot == std::string_view::npos) return is_whole(text);
  return is_whole(text.substr(0, dot)) && is_whole(text.substr(dot + 1));
}

bool has_fraction(std::string_view text) {
  return text.find('.') != std::string_view::npos;
}

// The error of one group: "sweep template 'T', group N '{body}': why; accepted forms: ...".
class GroupContext {
 public:
  GroupContext(std::string_view tmpl, std::size_t number, std::string_view body)
      : tmpl_(tmpl), number_(number), body_(body) {}
  [[noreturn]] void fail(const std::string& why) const {
    throw SpecError("sweep template " + single_quoted(tmpl_) + ", group " +
                    std::to_string(number_) + " '{" + std::string(body_) + "}': " + why + "; " +
                    std::string(kForms));
  }

 private:
  std::string_view tmpl_;
  std::size_t number_;
  std::string_view body_;
};

void add_point(std::vector<std::string>& out, std::string value, const GroupContext& ctx) {
  if (out.size() >= max_sweep_points)
    ctx.fail("more than " + std::to_string(max_sweep_points) + " values");
  out.push_back(std::move(value));
}

// Shortest decimal spelling of num / den (den a power of ten): 125/100 -> "1.25", 200/100 -> "2".
std::string format_fixed(U128 num, std::uint64_t den) {
  std::string integer = std::to_string(static_cast<std::uint64_t>(num / den));
  std::uint64_t fraction = static_cast<std::uint64_t>(num % den);
  if (fraction == 0) return integer;
  std::string digits;
  for (std::uint64_t d = den; d > 1; d /= 10) {
    digits.insert(digits.begin(), static_cast<char>('0' + fraction % 10));
    fraction /= 10;
  }
  while (!digits.empty() && digits.back() == '0') digits.pop_back();
  return integer + "." + digits;
}

// A decimal value from a geometric decimal range, with 12 decimals at most: 0.30000000000000004
// prints as 0.3.
std::string format_long_double(long double value) {
  char text[128];
  std::snprintf(text, sizeof text, "%.12Lf", value);
  std::string out = text;
  while (!out.empty() && out.back() == '0') out.pop_back();
  if (!out.empty() && out.back() == '.') out.pop_back();
  return out;
}

Ratio parse_number(std::string_view text, const char* what, const GroupContext& ctx) {
  try {
    return parse_ratio(text);
  } catch (const SpecError& e) {
    ctx.fail(std::string(what) + ": " + e.what());
  }
}

std::uint64_t parse_bytes(std::string_view text, const char* what, const GroupContext& ctx) {
  try {
    return parse_size(text);
  } catch (const SpecError& e) {
    ctx.fail(std::string(what) + ": " + e.what());
  }
}

// Geometric factor K > 1 as an exact decimal.
Ratio parse_factor(std::string_view text, const GroupContext& ctx) {
  const Ratio k = parse_number(text, "factor K", ctx);
  if (k.num <= k.den) ctx.fail("factor x" + std::string(text) + " must be greater than 1");
  return k;
}

// a, a*K, ... <= b over whole numbers, each value rounded to whole units (half up); a value equal
// to the one before it is skipped.
std::vector<std::uint64_t> geometric_whole(std::uint64_t a, std::uint64_t b, const Ratio& k,
                                           std::string_view k_text, const GroupContext& ctx) {
  if (a == 0) ctx.fail("a geometric range cannot start at 0 (0*K is 0 again)");
  std::vector<std::uint64_t> values{a};
  auto grow = [&](std::uint64_t v) {
    if (values.size() >= max_sweep_points)
      ctx.fail("more than " + std::to_string(max_sweep_points) + " values");
    values.push_back(v);
  };
  if (k.num % k.den == 0) {
    const std::uint64_t factor = k.num / k.den;
    for (std::uint64_t v = a; U128{v} * factor <= b;) {
      v *= factor;
      grow(v);
    }
    return values;
  }
  const long double factor = static_cast<long double>(k.num) / static_cast<long double>(k.den);
  long double exact = static_cast<long double>(a);
  // Values repeat while exact * (K - 1) < 1; bound the steps so a K barely above 1 cannot spin.
  for (std::size_t steps = 0;; ++steps) {
    if (steps > 4 * max_sweep_points)
      ctx.fail("factor x" + std::string(k_text) +
               " is too close to 1: too many steps give the same whole value");
    exact *= factor;
    const long double rounded = std::floor(exact + 0.5L);
    if (rounded > static_cast<long double>(b)) break;
    const auto v = static_cast<std::uint64_t>(rounded);
    if (v > b) break;
    if (v != values.back()) grow(v);
  }
  return values;
}

std::vector<std::uint64_t> arithmetic_whole(std::uint64_t a, std::uint64_t b, std::uint64_t k,
                                            const GroupContext& ctx) {
  std::vector<std::uint64_t> values;
  for (std::uint64_t v = a;; v += k) {
    if (values.size() >= max_sweep_points)
      ctx.fail("more than " + std::to_string(max_sweep_points) + " values");
    values.push_back(v);
    if (b - v < k) break;
  }
  return values;
}

// {a..b:+K} or {a..b:xK} where a and b are plain decimals with a fraction somewhere.
std::vector<std::string> decimal_range(std::string_view a_text, std::string_view b_text, char kind,
                                       std::string_view k_text, const GroupContext& ctx) {
  const Ratio a = parse_number(a_text, "start a", ctx);
  const Ratio b = parse_number(b_text, "end b", ctx);
  // Both denominators are powers of ten: compare a.num * b.den with b.num * a.den exactly.
  if (U128{a.num} * b.den > U128{b.num} * a.den)
    ctx.fail("start a (" + std::string(a_text) + ") is greater than end b (" + std::string(b_text) +
             ")");
  std::vector<std::string> out;
  if (kind == '+') {
    const Ratio k = parse_number(k_text, "step K", ctx);
    if (k.num == 0) ctx.fail("step +" + std::string(k_text) + " must be greater than 0");
    const std::uint64_t den = std::max({a.den, b.den, k.den});  // all powers of ten
    const U128 start = U128{a.num} * (den / a.den);
    const U128 end = U128{b.num} * (den / b.den);
    const U128 step = U128{k.num} * (den / k.den);
    for (U128 v = start; v <= end; v += step) add_point(out, format_fixed(v, den), ctx);
    return out;
  }
  const Ratio k = parse_factor(k_text, ctx);
  if (a.num == 0) ctx.fail("a geometric range cannot start at 0 (0*K is 0 again)");
  const long double factor = static_cast<long double>(k.num) / static_cast<long double>(k.den);
  const long double end = static_cast<long double>(b.num) / static_cast<long double>(b.den);
  // A relative tolerance lets the end itself in despite rounding (0.1 * 3 * 3 <= 0.9).
  const long double limit = end * (1 + 1e-12L);
  long double v = static_cast<long double>(a.num) / static_cast<long double>(a.den);
  for (std::size_t steps = 0; v <= limit; v *= factor, ++steps) {
    if (steps > 4 * max_sweep_points)
      ctx.fail("factor x" + std::string(k_text) +
               " is too close to 1: too many steps give the same printed value");
    std::string text = format_long_double(v);
    if (out.empty() || out.back() != text) add_point(out, std::move(text), ctx);
  }
  return out;
}

std::vector<std::string> expand_range(std::string_view body, std::size_t dots,
                                      const GroupContext& ctx) {
  const std::string_view a_text = trim_spaces(body.substr(0, dots));
  const std::string_view rest = body.substr(dots + 2);
  const std::size_t colon = rest.find(':');
  const std::string_view b_text = trim_spaces(rest.substr(0, colon));
  if (a_text.empty()) ctx.fail("the range has no start a before '..'");
  if (b_text.empty()) ctx.fail("the range has no end b after '..'");
  char kind = '+';
  std::string_view k_text = "1";
  if (colon == std::string_view::npos) {
    if (!is_whole(a_text) || !is_whole(b_text))
      ctx.fail("a range without a step is for whole numbers only; give a step, :xK or :+K");
  } else {
    const std::string_view step = trim_spaces(rest.substr(colon + 1));
    if (step.empty()) ctx.fail("':' is not followed by a step (xK or +K)");
    if (step.front() != 'x' && step.front() != '+')
      ctx.fail("step " + single_quoted(step) + " must start with x (multiply by K) or + (add K)");
    kind = step.front();
    k_text = trim_spaces(step.substr(1));
    if (k_text.empty()) ctx.fail("step " + single_quoted(step) + " has no K after '" + kind + "'");
  }

  const bool plain = is_plain_decimal(a_text) && is_plain_decimal(b_text);
  if (plain && (has_fraction(a_text) || has_fraction(b_text) ||
                (kind == '+' && is_plain_decimal(k_text) && has_fraction(k_text))))
    return decimal_range(a_text, b_text, kind, k_text, ctx);

  // Whole numbers: sizes when a unit appears anywhere (printed with units), plain otherwise.
  const bool with_units = !plain || (kind == '+' && !is_plain_decimal(k_text));
  const std::uint64_t a = parse_bytes(a_text, "start a", ctx);
  const std::uint64_t b = parse_bytes(b_text, "end b", ctx);
  if (a > b)
    ctx.fail("start a (" + std::string(a_text) + ") is greater than end b (" + std::string(b_text) +
             ")");
  std::vector<std::uint64_t> values;
  if (kind == '+') {
    const std::uint64_t k = parse_bytes(k_text, "step K", ctx);
    if (k == 0) ctx.fail("step +" + std::string(k_text) + " must be greater than 0");
    values = arithmetic_whole(a, b, k, ctx);
  } else {
    values = geometric_whole(a, b, parse_factor(k_text, ctx), k_text, ctx);
  }
  std::vector<std::string> out;
  out.reserve(values.size());
  for (std::uint64_t v : values) out.push_back(with_units ? size_spec(v) : std::to_string(v));
  return out;
}

std::vector<std::string> expand_group(std::string_view body, const GroupContext& ctx) {
  if (trim_spaces(body).empty()) ctx.fail("the group is empty");
  const std::size_t dots = body.find("..");
  if (dots != std::string_view::npos) return expand_range(body, dots, ctx);
  std::vector<std::string> items;
  for (std::size_t begin = 0;;) {
    const std::size_t comma = body.find(',', begin);
    add_point(items, std::string(body.substr(begin, comma - begin)), ctx);
    if (comma == std::string_view::npos) break;
    begin = comma + 1;
  }
  return items;
}

// The template split into literal text and groups: parts[0] literal, parts[1] group values,
// parts[2] literal, ...
struct Parsed {
  std::vector<std::string> literals;  // one more than groups
  std::vector<std::vector<std::string>> groups;
};

Parsed parse_template(std::string_view tmpl) {
  auto fail = [&](const std::string& why) {
    throw SpecError("sweep template " + single_quoted(tmpl) + ": " + why + "; " +
                    std::string(kForms));
  };
  Parsed parsed;
  parsed.literals.emplace_back();
  std::size_t open = std::string_view::npos;
  for (std::size_t i = 0; i < tmpl.size(); ++i) {
    const char c = tmpl[i];
    if (c == '{') {
      if (open != std::string_view::npos)
        fail("'{' at offset " + std::to_string(i) + " is inside the group opened at offset " +
             std::to_string(open) + " (groups cannot nest)");
      open = i;
    } else if (c == '}') {
      if (open == std::string_view::npos)
        fail("unbalanced '}' at offset " + std::to_string(i) + " (no '{' before it)");
      const std::string_view body = tmpl.substr(open + 1, i - open - 1);
      parsed.groups.push_back(
          expand_group(body, GroupContext(tmpl, parsed.groups.size() + 1, body)));
      parsed.literals.emplace_back();
      open = std::string_view::npos;
    } else if (open == std::string_view::npos) {
      parsed.literals.back() += c;
    }
  }
  if (open != std::string_view::npos)
    fail("unbalanced '{' at offset " + std::to_string(open) + " (no '}' after it)");
  return parsed;
}

}  // namespace

std::vector<std::string> expand_sweep(std::string_view spec_template) {
  const Parsed parsed = parse_template(spec_template);
  std::size_t total = 1;
  for (const auto& group : parsed.groups) {
    if (total > max_sweep_points / group.size())
      throw SpecError("sweep template " + single_quoted(spec_template) + " expands to more than " +
                      std::to_string(max_sweep_points) + " points; split it or use coarser steps");
    total *= group.size();
  }
  // An odometer over the groups: the last group turns fastest.
  std::vector<std::string> points;
  points.reserve(total);
  std::vector<std::size_t> digit(parsed.groups.size(), 0);
  for (std::size_t n = 0; n < total; ++n) {
    std::string point = parsed.literals[0];
    for (std::size_t g = 0; g < parsed.groups.size(); ++g)
      point += parsed.groups[g][digit[g]] + parsed.literals[g + 1];
    points.push_back(std::move(point));
    for (std::size_t g = parsed.groups.size(); g-- > 0;) {
      if (++digit[g] < parsed.groups[g].size()) break;
      digit[g] = 0;
    }
  }
  return points;
}

std::vector<std::string> expand_sweeps(const std::vector<std::string>& templates) {
  std::vector<std::string> points;
  for (const std::string& t : templates) {
    std::vector<std::string> more = expand_sweep(t);
    if (points.size() + more.size() > max_sweep_points)
      throw SpecError("the sweep templates together expand to more than " +
                      std::to_string(max_sweep_points) + " points (at template " +
                      single_quoted(t) + "); split the sweep");
    points.insert(points.end(), std::make_move_iterator(more.begin()),
                  std::make_move_iterator(more.end()));
  }
  return points;
}

Shard parse_shard(std::string_view text) {
  const std::string_view t = trim_spaces(text);
  auto fail = [&](const std::string& why) {
    throw SpecError("invalid shard " + single_quoted(t) + ": " + why +
                    " (expected i/n, whole numbers with 0 <= i < n: shard 0/4 is the first of "
                    "four, 3/4 the last)");
  };
  const std::size_t slash = t.find('/');
  if (slash == std::string_view::npos) fail("no '/'");
  auto number = [&](std::string_view part, const char* what) {
    std::size_t value = 0;
    const auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
    if (!is_whole(part) || ec != std::errc() || ptr != part.data() + part.size())
      fail(std::string(what) + " " + single_quoted(part) + " is not a whole number");
    return value;
  };
  Shard shard;
  shard.index = number(trim_spaces(t.substr(0, slash)), "index");
  shard.count = number(trim_spaces(t.substr(slash + 1)), "count");
  if (shard.count == 0) fail("the count n must be at least 1");
  if (shard.index >= shard.count)
    fail("the index must be less than the count (shards are numbered from 0)");
  return shard;
}

std::vector<std::size_t> shard_points(std::size_t total, const Shard& shard) {
  std::vector<std::size_t> out;
  if (shard.count == 0) return out;
  for (std::size_t k = shard.index; k < total; k += shard.count) out.push_back(k);
  return out;
}

void check_specs(const std::vector<std::string>& specs) {
  for (std::size_t i = 0; i < specs.size(); ++i) {
    try {
      SimUpstream upstream;
      (void)make_strategy(specs[i], upstream);
    } catch (const SpecError& e) {
      throw SpecError("sweep point " + std::to_string(i) + " " + single_quoted(specs[i]) + ": " +
                      e.what());
    }
  }
}

SweepRun plan_sweep(const std::vector<std::string>& templates, const Shard& shard) {
  if (shard.count == 0 || shard.index >= shard.count)
    throw SpecError("invalid shard " + std::to_string(shard.index) + "/" +
                    std::to_string(shard.count) + " (expected 0 <= i < n)");
  SweepRun run;
  run.templates = templates;
  run.points = expand_sweeps(templates);
  check_specs(run.points);
  run.shard = shard;
  run.point_indices = shard_points(run.points.size(), shard);
  return run;
}

void replay_sweep(const ResolvedTrace& trace, SweepRun& run, const ReplayOptions& options,
                  std::size_t threads) {
  run.results.assign(run.point_indices.size(), StrategyResult{});
  std::vector<char> cut(run.point_indices.size(), 0);
  parallel_for(run.point_indices.size(), threads, [&](std::size_t k) {
    ReplayOutcome outcome = replay_sim(trace, run.points[run.point_indices[k]], options);
    run.results[k] = std::move(outcome.result);
    cut[k] = outcome.interrupted;
  });
  run.interrupted = false;
  for (char c : cut) run.interrupted = run.interrupted || c;
  if (options.cancel && options.cancel->load()) run.interrupted = true;
}

SweepRun run_sweep(const ResolvedTrace& trace, const std::vector<std::string>& templates,
                   const Shard& shard, const ReplayOptions& options, std::size_t threads) {
  SweepRun run = plan_sweep(templates, shard);
  replay_sweep(trace, run, options, threads);
  return run;
}

nlohmann::json sweep_json(const SweepRun& run) {
  return {{"templates", run.templates},
          {"points", run.points},
          {"shard", {{"index", run.shard.index}, {"count", run.shard.count}}},
          {"point_indices", run.point_indices}};
}

nlohmann::json make_sweep_report(const TraceSummary& trace, const SweepRun& run,
                                 const ReportContext& context) {
  nlohmann::json report = make_report(trace, run.results, context);
  report["sweep"] = sweep_json(run);
  return report;
}

void write_sweep_csv(std::ostream& out, const SweepRun& run) {
  std::ostringstream plain;
  write_results_csv(plain, run.results);
  std::istringstream lines(plain.str());
  std::string line;
  std::size_t row = 0;
  while (std::getline(lines, line)) {
    if (row == 0)
      out << "point," << line << '\n';
    else
      out << run.point_indices[row - 1] << ',' << line << '\n';
    ++row;
  }
}

}  // namespace alloclab
