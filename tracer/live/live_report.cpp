#include "alloclab/live/live_report.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iterator>
#include <stdexcept>

#include "alloclab/live/live_runs.hpp"

namespace alloclab::live {
namespace {

constexpr std::string_view kMagic = "alloclab-live 1";

// The counters by their report names, in the order the file lists them: the report's own
// (`field`) and the contract's (`metric`).
struct CounterField {
  std::string_view name;
  std::uint64_t LiveReport::*field = nullptr;
  std::uint64_t Metrics::*metric = nullptr;
};
constexpr CounterField kCounters[] = {
    {.name = "pid", .field = &LiveReport::pid},
    {.name = "min_size", .field = &LiveReport::min_size},
    {.name = "requests", .metric = &Metrics::requests},
    {.name = "hits", .metric = &Metrics::hits},
    {.name = "failed_requests", .metric = &Metrics::failed_requests},
    {.name = "upstream_allocs", .metric = &Metrics::upstream_allocs},
    {.name = "upstream_frees", .metric = &Metrics::upstream_frees},
    {.name = "evictions", .metric = &Metrics::evictions},
    {.name = "peak_live_bytes", .metric = &Metrics::peak_live_bytes},
    {.name = "peak_reserved_bytes", .metric = &Metrics::peak_reserved_bytes},
    {.name = "final_cached_bytes", .metric = &Metrics::final_cached_bytes},
    {.name = "slack_bytes", .metric = &Metrics::slack_bytes},
    {.name = "in_place_reallocs", .field = &LiveReport::in_place_reallocs},
    {.name = "runs", .field = &LiveReport::runs},
    {.name = "runs_not_listed", .field = &LiveReport::runs_not_listed},
    {.name = "peak_device_bytes", .field = &LiveReport::peak_device_bytes},
};
// A live run's counters equal its replay's only if the report carries every one of them: each
// counter of Metrics has its line above but `misses`, which is requests - hits.
constexpr std::size_t kMetricLines = static_cast<std::size_t>(
    std::count_if(std::begin(kCounters), std::end(kCounters),
                  [](const CounterField& c) { return c.metric != nullptr; }));
static_assert(kMetricLines + 1 == sizeof(Metrics) / sizeof(std::uint64_t),
              "a counter added to Metrics needs its line in kCounters");

// The counter `c` of `report` (a LiveReport, const or not).
template <typename Report>
auto& counter(Report& report, const CounterField& c) {
  return c.metric != nullptr ? report.metrics.*c.metric : report.*c.field;
}

struct FailureField {
  std::string_view name;
  std::uint64_t LiveFailure::*field;
};
constexpr FailureField kFailure[] = {
    {"requested_bytes", &LiveFailure::requested_bytes},
    {"since_start_ns", &LiveFailure::since_start_ns},
    {"live_bytes", &LiveFailure::live_bytes},
    {"allocated_bytes", &LiveFailure::allocated_bytes},
    {"reserved_bytes", &LiveFailure::reserved_bytes},
    {"op_index", &LiveFailure::op_index},
    {"time_ns", &LiveFailure::time_ns},
};

// A run's counters in the order of its line, the label last.
constexpr std::uint64_t RunMetrics::*kRunFields[] = {
    &RunMetrics::requests,
    &RunMetrics::hits,
    &RunMetrics::upstream_allocs,
    &RunMetrics::upstream_frees,
    &RunMetrics::evictions,
    &RunMetrics::peak_live_bytes,
    &RunMetrics::peak_reserved_bytes,
    &RunMetrics::slack_bytes,
};

// A label is any bytes: as one word, with '%', spaces, control characters and DEL as %XX.
bool escaped_in_label(unsigned char c) {
  return c <= ' ' || c == '%' || c == 0x7f;
}

void append_label(std::string& out, const std::string& label) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (const char c : label) {
    const auto byte = static_cast<unsigned char>(c);
    if (escaped_in_label(byte)) {
      out += '%';
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    } else {
      out += c;
    }
  }
}

// Names are single words: they never hold the separator.
bool is_word(std::string_view name) {
  if (name.empty()) return false;
  for (const char c : name)
    if (c == ' ' || c == '\n' || c == '\t') return false;
  return true;
}

void append_number(std::string& out, std::uint64_t value) {
  char buffer[24];
  const auto end = std::to_chars(buffer, buffer + sizeof buffer, value).ptr;
  out.append(buffer, end);
}

class Lines {
 public:
  Lines(std::string_view text, const std::string& source) : text_(text), source_(source) {}
  bool next() {
    if (pos_ >= text_.size()) return false;
    const std::size_t end = text_.find('\n', pos_);
    if (end == std::string_view::npos) fail("the file ends inside a line (cut short)");
    line_ = text_.substr(pos_, end - pos_);
    pos_ = end + 1;
    ++number_;
    words_ = 0;
    return true;
  }
  std::string_view line() const { return line_; }
  // The next space-separated word of the line.
  std::string_view word() {
    std::size_t start = words_;
    while (start < line_.size() && line_[start] == ' ') ++start;
    std::size_t end = line_.find(' ', start);
    if (end == std::string_view::npos) end = line_.size();
    words_ = end;
    if (start == end) fail("a field is missing");
    return line_.substr(start, end - start);
  }
  std::uint64_t number() {
    const std::string_view w = word();
    std::uint64_t value = 0;
    const auto [ptr, ec] = std::from_chars(w.data(), w.data() + w.size(), value);
    if (ec != std::errc() || ptr != w.data() + w.size())
      fail("\"" + std::string(w) + "\" is not a count");
    return value;
  }
  bool more() const { return line_.find_first_not_of(' ', words_) != std::string_view::npos; }
  void end_of_line() {
    if (line_.find_first_not_of(' ', words_) != std::string_view::npos)
      fail("unexpected text at the end of the line");
  }
  [[noreturn]] void fail(const std::string& why) const {
    throw std::runtime_error(source_ + ": line " + std::to_string(number_) + ": " + why);
  }

 private:
  std::string_view text_;
  const std::string& source_;
  std::size_t pos_ = 0;
  std::size_t number_ = 0;
  std::string_view line_;
  std::size_t words_ = 0;
};

std::string read_label(Lines& lines) {
  const std::string_view word = lines.word();
  std::string label;
  for (std::size_t i = 0; i < word.size(); ++i) {
    if (word[i] != '%') {
      label += word[i];
      continue;
    }
    unsigned value = 0;
    const char* begin = word.data() + i + 1;
    const char* end = begin + std::min<std::size_t>(2, word.size() - i - 1);
    const auto [ptr, ec] = std::from_chars(begin, end, value, 16);
    if (ec != std::errc() || ptr != begin + 2)
      lines.fail("a run label with a bad escape (%XX expected)");
    label += static_cast<char>(value);
    i += 2;
  }
  return label;
}

}  // namespace

LiveHistogram::Raw LiveHistogram::raw(double ns_per_unit) const {
  const auto scaled = [ns_per_unit](std::uint64_t units) {
    return static_cast<std::uint64_t>(std::llround(static_cast<double>(units) * ns_per_unit));
  };
  Raw r;
  std::map<std::size_t, std::uint64_t> buckets;
  for (std::size_t i = 0; i < buckets_.size(); ++i) {
    if (buckets_[i] == 0) continue;
    const std::uint64_t low = LatencyHistogram::bucket_low(i);
    const std::uint64_t middle = low + (LatencyHistogram::bucket_high(i) - low) / 2;
    buckets[LatencyHistogram::index_of(scaled(middle))] += buckets_[i];
  }
  r.buckets.assign(buckets.begin(), buckets.end());
  r.total = scaled(total_);
  r.max = scaled(max_);
  r.min = r.buckets.empty() ? 0 : scaled(min_);
  return r;
}

std::string to_text(const LiveReport& report) {
  std::string out(kMagic);
  out += "\nspec ";
  out += report.spec;  // the rest of its line: a spec may hold spaces (a plug-in's path)
  out += '\n';
  if (!report.device.empty()) {
    out += "device ";
    out += report.device;  // the rest of its line, as the spec
    out += '\n';
  }
  for (const CounterField& c : kCounters) {
    out += "counter ";
    out += c.name;
    out += ' ';
    append_number(out, counter(report, c));
    out += '\n';
  }
  for (const RunMetrics& run : report.run_metrics) {
    out += "run";
    for (const auto field : kRunFields) {
      out += ' ';
      append_number(out, run.*field);
    }
    // A live run times its strategy's calls: every run has an allocation time.
    out += ' ';
    append_number(out, run.allocation_time_ns.value_or(0));
    if (!run.label.empty()) {
      out += ' ';
      append_label(out, run.label);
    }
    out += '\n';
  }
  for (const auto& [name, value] : report.strategy_counters) {
    if (!is_word(name)) continue;
    out += "strategy_counter " + name + ' ';
    append_number(out, value);
    out += '\n';
  }
  for (const auto& [name, raw] : report.latency) {
    out += "latency " + name + ' ';
    append_number(out, raw.total);
    out += ' ';
    append_number(out, raw.max);
    out += ' ';
    append_number(out, raw.min);
    out += '\n';
    for (const auto& [index, count] : raw.buckets) {
      out += "bucket " + name + ' ';
      append_number(out, index);
      out += ' ';
      append_number(out, count);
      out += '\n';
    }
  }
  if (report.first_failure) {
    for (const FailureField& f : kFailure) {
      out += "failure ";
      out += f.name;
      out += ' ';
      append_number(out, (*report.first_failure).*f.field);
      out += '\n';
    }
  }
  out += "end\n";
  return out;
}

LiveReport parse_live_report(std::string_view text, const std::string& source) {
  Lines lines(text, source);
  if (!lines.next() || lines.line() != kMagic) lines.fail("not a live report of alloclab run");
  LiveReport report;
  bool ended = false;
  while (!ended && lines.next()) {
    const std::string_view kind = lines.word();
    if (kind == "spec") {
      const std::string_view line = lines.line();
      report.spec = std::string(line.substr(std::min(line.size(), std::size_t{5})));
      continue;
    }
    if (kind == "device") {
      const std::string_view line = lines.line();
      report.device = std::string(line.substr(std::min(line.size(), std::size_t{7})));
      if (report.device.empty()) lines.fail("a device line without a device");
      continue;
    }
    if (kind == "end") {
      lines.end_of_line();
      ended = true;
    } else if (kind == "counter") {
      const std::string_view name = lines.word();
      const std::uint64_t value = lines.number();
      const CounterField* found = nullptr;
      for (const CounterField& c : kCounters)
        if (c.name == name) found = &c;
      if (!found) lines.fail("unknown counter \"" + std::string(name) + "\"");
      counter(report, *found) = value;
    } else if (kind == "run") {
      if (report.run_metrics.size() >= LiveRuns::kMaxListed)
        lines.fail("more runs than a report lists (" + std::to_string(LiveRuns::kMaxListed) + ")");
      RunMetrics run;
      for (const auto field : kRunFields) run.*field = lines.number();
      run.allocation_time_ns = lines.number();
      if (lines.more()) run.label = read_label(lines);
      report.run_metrics.push_back(std::move(run));
    } else if (kind == "strategy_counter") {
      const std::string name(lines.word());
      report.strategy_counters[name] = lines.number();
    } else if (kind == "latency") {
      LiveHistogram::Raw& raw = report.latency[std::string(lines.word())];
      raw.total = lines.number();
      raw.max = lines.number();
      raw.min = lines.number();
    } else if (kind == "bucket") {
      const auto it = report.latency.find(std::string(lines.word()));
      if (it == report.latency.end()) lines.fail("a bucket of a latency not listed before it");
      const std::uint64_t index = lines.number();
      if (index >= LatencyHistogram::kBucketCount)
        lines.fail("bucket " + std::to_string(index) + " out of range");
      it->second.buckets.emplace_back(static_cast<std::size_t>(index), lines.number());
    } else if (kind == "failure") {
      const std::string_view name = lines.word();
      const std::uint64_t value = lines.number();
      const FailureField* found = nullptr;
      for (const FailureField& f : kFailure)
        if (f.name == name) found = &f;
      if (!found) lines.fail("unknown failure field \"" + std::string(name) + "\"");
      if (!report.first_failure) report.first_failure = LiveFailure{};
      (*report.first_failure).*found->field = value;
    } else {
      lines.fail("unknown line \"" + std::string(kind) + "\"");
    }
    lines.end_of_line();
  }
  if (!ended) lines.fail("no \"end\" line: the report was cut short");
  report.metrics.misses = report.metrics.requests - report.metrics.hits;
  return report;
}

}  // namespace alloclab::live
