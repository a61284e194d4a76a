#pragma once
// `record --run-range NAME`: NVTX ranges whose name matches become runs. Pure, like the
// translation: injection.cpp feeds it the NVTX calls CUPTI reports.
//
// Runs do not nest, ranges do: only the outermost matching range opens a run, and only its own
// end closes it. Push/pop ranges belong to their thread (a pop closes the thread's innermost
// push); start/end ranges are process-wide and identified by the id nvtxRangeStart returned.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "alloclab/format/event.hpp"

namespace alloclab::cuda {

class RunRanges {
 public:
  // `pattern` is a shell glob (fnmatch): "step", "run*", "*".
  explicit RunRanges(std::string pattern);

  std::optional<Event> push(std::uint64_t thread, std::uint64_t time_ns, std::string_view name);
  std::optional<Event> pop(std::uint64_t thread, std::uint64_t time_ns);
  std::optional<Event> start(std::uint64_t id, std::uint64_t thread, std::uint64_t time_ns,
                             std::string_view name);
  std::optional<Event> end(std::uint64_t id, std::uint64_t thread, std::uint64_t time_ns);

  bool matches(std::string_view name) const;
  bool in_run() const { return open_.has_value(); }

 private:
  struct Owner {
    bool pushed;        // push/pop (else start/end)
    std::uint64_t key;  // thread for push/pop, range id for start/end
    std::size_t depth;  // push/pop: the stack depth of the opening push
    bool operator==(const Owner&) const = default;
  };
  std::optional<Event> begin_run(const Owner& owner, std::uint64_t thread, std::uint64_t time_ns,
                                 std::string_view name);
  Event end_run(std::uint64_t thread, std::uint64_t time_ns);

  std::string pattern_;
  std::optional<Owner> open_;
  std::unordered_map<std::uint64_t, std::size_t> depth_;  // thread -> open pushes
};

}  // namespace alloclab::cuda
