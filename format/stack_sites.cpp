#include <algorithm>
#include <cstdio>
#include <unordered_map>

#include "alloclab/format/stacks.hpp"
#include "alloclab/format/text_table.hpp"
#include "alloclab/format/units.hpp"

namespace alloclab {

StackSites top_stack_sites(const Trace& trace, std::size_t n) {
  StackSites sites;
  if (!trace.has_stacks()) return sites;
  std::unordered_map<std::uint32_t, StackSite> by_stack;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    // Program requests only: an allocator's own segment calls (a PyTorch snapshot's
    // segment_alloc, with the frames of the request behind it) would count those bytes twice.
    if (trace.op(i) != Op::alloc || trace.segment(i)) continue;
    const std::uint32_t id = trace.stack_id(i);
    if (id == 0) continue;
    StackSite& site = by_stack[id];
    site.stack = id;
    ++site.count;
    site.bytes += trace.size_of(i);
    ++sites.allocations_with_stack;
  }
  std::vector<StackSite> all;
  all.reserve(by_stack.size());
  for (const auto& [id, site] : by_stack) all.push_back(site);
  sites.distinct_stacks = all.size();
  // Ties broken by id, so the listing is the same on every run.
  auto top = [&](auto key) {
    std::vector<StackSite> sorted = all;
    std::sort(sorted.begin(), sorted.end(), [&](const StackSite& a, const StackSite& b) {
      return key(a) != key(b) ? key(a) > key(b) : a.stack < b.stack;
    });
    if (sorted.size() > n) sorted.resize(n);
    return sorted;
  };
  sites.by_count = top([](const StackSite& s) { return s.count; });
  sites.by_bytes = top([](const StackSite& s) { return s.bytes; });
  return sites;
}

namespace {

std::string file_name(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

namespace {

// The function's name, or the frame's address in hex when the recorder could not name it.
std::string function_or_address(const StackFrame& frame) {
  if (!frame.function.empty()) return frame.function;
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(frame.address));
  return hex;
}

}  // namespace

std::string describe_frame(const StackFrame& frame) {
  std::string text = function_or_address(frame);
  // The source location says more than the object it was built into: it replaces the module.
  std::string where = file_name(frame.file.empty() ? frame.module : frame.file);
  if (!frame.file.empty() && frame.line != 0) where += ":" + std::to_string(frame.line);
  if (!where.empty()) text += " (" + where + ")";
  return text;
}

std::string describe_function(const StackFrame& frame) {
  std::string text = function_or_address(frame);
  const std::string where = file_name(frame.module.empty() ? frame.file : frame.module);
  if (!where.empty()) text += " (" + where + ")";
  return text;
}

namespace {

std::string sites_text(const Trace& trace, const char* title, const std::vector<StackSite>& sites) {
  std::string text = "\n" + std::string(title) + "\n";
  for (const StackSite& site : sites) {
    text += string_printf("  %s, %s\n", counted(site.count, "allocation").c_str(),
                          human_bytes(site.bytes).c_str());
    for (std::uint32_t f : trace.stacks()[site.stack - 1])
      text += string_printf("      %s\n", describe_frame(trace.frames()[f]).c_str());
  }
  return text;
}

nlohmann::json sites_json(const Trace& trace, const std::vector<StackSite>& sites) {
  nlohmann::json list = nlohmann::json::array();
  for (const StackSite& site : sites) {
    nlohmann::json frames = nlohmann::json::array();
    for (std::uint32_t f : trace.stacks()[site.stack - 1]) {
      const StackFrame& frame = trace.frames()[f];
      frames.push_back({{"address", frame.address},
                        {"function", frame.function},
                        {"module", frame.module},
                        {"file", frame.file},
                        {"line", frame.line}});
    }
    list.push_back(
        {{"stack", site.stack}, {"count", site.count}, {"bytes", site.bytes}, {"frames", frames}});
  }
  return list;
}

}  // namespace

std::string stack_sites_text(const Trace& trace, const StackSites& sites) {
  if (!trace.has_stacks())
    return "\nno call stacks in this trace (record with `alloclab record --stacks N`)\n";
  return string_printf("\ncall stacks  %s with a stack, %s\n",
                       counted(sites.allocations_with_stack, "allocation").c_str(),
                       counted(sites.distinct_stacks, "distinct stack").c_str()) +
         sites_text(trace, "top allocation stacks by count", sites.by_count) +
         sites_text(trace, "top allocation stacks by bytes", sites.by_bytes);
}

nlohmann::json stack_sites_json(const Trace& trace, const StackSites& sites) {
  return {{"allocations_with_stack", sites.allocations_with_stack},
          {"distinct_stacks", sites.distinct_stacks},
          {"top_stacks_by_count", sites_json(trace, sites.by_count)},
          {"top_stacks_by_bytes", sites_json(trace, sites.by_bytes)}};
}

}  // namespace alloclab
