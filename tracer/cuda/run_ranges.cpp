#include "run_ranges.hpp"

#include <fnmatch.h>

namespace alloclab::cuda {

RunRanges::RunRanges(std::string pattern) : pattern_(std::move(pattern)) {}

bool RunRanges::matches(std::string_view name) const {
  return !pattern_.empty() && fnmatch(pattern_.c_str(), std::string(name).c_str(), 0) == 0;
}

std::optional<Event> RunRanges::begin_run(const Owner& owner, std::uint64_t thread,
                                          std::uint64_t time_ns, std::string_view name) {
  if (open_ || !matches(name)) return std::nullopt;
  open_ = owner;
  Event event;
  event.op = Op::run_begin;
  event.thread = thread;
  event.time_ns = time_ns;
  event.label = std::string(name);
  return event;
}

Event RunRanges::end_run(std::uint64_t thread, std::uint64_t time_ns) {
  open_.reset();
  Event event;
  event.op = Op::run_end;
  event.thread = thread;
  event.time_ns = time_ns;
  return event;
}

std::optional<Event> RunRanges::push(std::uint64_t thread, std::uint64_t time_ns,
                                     std::string_view name) {
  const std::size_t depth = depth_[thread]++;
  return begin_run(Owner{true, thread, depth}, thread, time_ns, name);
}

std::optional<Event> RunRanges::pop(std::uint64_t thread, std::uint64_t time_ns) {
  auto it = depth_.find(thread);
  if (it == depth_.end() || it->second == 0) return std::nullopt;  // a pop without its push
  const std::size_t depth = --it->second;
  if (open_ && *open_ == Owner{true, thread, depth}) return end_run(thread, time_ns);
  return std::nullopt;
}

std::optional<Event> RunRanges::start(std::uint64_t id, std::uint64_t thread, std::uint64_t time_ns,
                                      std::string_view name) {
  return begin_run(Owner{false, id, 0}, thread, time_ns, name);
}

std::optional<Event> RunRanges::end(std::uint64_t id, std::uint64_t thread, std::uint64_t time_ns) {
  if (open_ && *open_ == Owner{false, id, 0}) return end_run(thread, time_ns);
  return std::nullopt;
}

}  // namespace alloclab::cuda
