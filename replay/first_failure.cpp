#include "alloclab/replay/first_failure.hpp"

#include <cstdio>
#include <optional>

#include "alloclab/format/error.hpp"
#include "alloclab/format/event.hpp"
#include "alloclab/format/text_table.hpp"
#include "alloclab/format/units.hpp"
#include "report_fields.hpp"

namespace alloclab {
namespace {

using report_fields::optional_json;
using report_fields::read_optional_u64;
using report_fields::read_u64;

std::string percent(double fraction) {
  return string_printf("%.2f%%", 100.0 * fraction);
}

}  // namespace

std::string first_failure_text(const StrategyResult& r) {
  const FirstFailure& f = *r.first_failure;
  std::string text = "first failure of " + r.strategy + ": a request of " +
                     human_bytes(f.requested_bytes) + " on " + device_name(f.device) + ", stream " +
                     std::to_string(f.stream) + ", at operation " + grouped(f.op_index);
  if (f.event_index) text += " (trace event " + grouped(*f.event_index) + ")";
  text += ", +" + human_duration(f.since_start_ns) + "\n";
  text += "  live " + human_bytes(f.live_bytes) + ", handed out " + human_bytes(f.allocated_bytes) +
          ", reserved " + human_bytes(f.reserved_bytes) + " (cached " +
          human_bytes(f.cached_bytes()) + ", largest cached block " +
          (f.largest_cached_block ? human_bytes(*f.largest_cached_block) : "unknown") + ")";
  if (f.memory_limit) text += ", limit " + human_bytes(*f.memory_limit);
  if (f.allowed_bytes) text += ", allowed " + human_bytes(*f.allowed_bytes);
  text += "\n  fragmentation " + percent(f.fragmentation()) + " (1 - handed out/reserved); " +
          "GMLake's " + percent(f.gmlake_fragmentation()) + " (1 - peak handed out/peak reserved)";
  return text + "\n  " + out_of_memory_message(f) + "\n";
}

std::string pytorch_format_size(std::uint64_t bytes) {
  constexpr std::uint64_t kKiB = 1024, kMiB = kKiB * 1024, kGiB = kMiB * 1024;
  if (bytes <= kKiB) return std::to_string(bytes) + " bytes";
  const double b = static_cast<double>(bytes);
  if (bytes <= kMiB) return string_printf("%.2f KiB", b / static_cast<double>(kKiB));
  if (bytes <= kGiB) return string_printf("%.2f MiB", b / static_cast<double>(kMiB));
  return string_printf("%.2f GiB", b / static_cast<double>(kGiB));
}

std::string out_of_memory_message(const FirstFailure& f) {
  const std::uint64_t tried = f.upstream_request_bytes.value_or(f.requested_bytes);
  std::string allowed;
  if (f.allowed_bytes) allowed = pytorch_format_size(*f.allowed_bytes) + " allowed; ";
  return "CUDA out of memory. Tried to allocate " + pytorch_format_size(tried) + ". " + allowed +
         "Of the allocated memory " + pytorch_format_size(f.allocated_bytes) +
         " is allocated by PyTorch, and " + pytorch_format_size(f.cached_bytes()) +
         " is reserved by PyTorch but unallocated. If reserved but unallocated memory is large "
         "try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  "
         "See documentation for Memory Management  "
         "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)";
}

nlohmann::json first_failure_json(const FirstFailure& f) {
  return {{"op_index", f.op_index},
          {"event_index", optional_json(f.event_index)},
          {"time_ns", f.time_ns},
          {"since_start_ns", f.since_start_ns},
          {"requested_bytes", f.requested_bytes},
          {"upstream_request_bytes", optional_json(f.upstream_request_bytes)},
          {"device", device_name(f.device)},
          {"stream", f.stream},
          {"live_bytes", f.live_bytes},
          {"allocated_bytes", f.allocated_bytes},
          {"reserved_bytes", f.reserved_bytes},
          {"cached_bytes", f.cached_bytes()},
          {"largest_cached_block_bytes", optional_json(f.largest_cached_block)},
          {"memory_limit_bytes", optional_json(f.memory_limit)},
          {"allowed_bytes", optional_json(f.allowed_bytes)},
          {"fragmentation", f.fragmentation()},
          {"peak_allocated_bytes", f.peak_allocated_bytes},
          {"peak_reserved_bytes", f.peak_reserved_bytes},
          {"gmlake_fragmentation", f.gmlake_fragmentation()},
          {"message", out_of_memory_message(f)}};
}

FirstFailure first_failure_from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw InputError(where + ": not an object");
  FirstFailure f;
  f.op_index = read_u64(j, "op_index", where);
  f.event_index = read_optional_u64(j, "event_index", where);
  f.time_ns = read_u64(j, "time_ns", where);
  f.since_start_ns = read_u64(j, "since_start_ns", where);
  f.requested_bytes = read_u64(j, "requested_bytes", where);
  f.upstream_request_bytes = read_optional_u64(j, "upstream_request_bytes", where);
  const auto device = j.find("device");
  std::optional<DeviceId> id;
  if (device != j.end() && device->is_string()) id = parse_device(device->get<std::string>());
  if (!id) throw InputError(where + ": key 'device' is missing or not a device (cpu, cuda:N)");
  f.device = *id;
  f.stream = read_u64(j, "stream", where);
  f.live_bytes = read_u64(j, "live_bytes", where);
  f.allocated_bytes = read_u64(j, "allocated_bytes", where);
  f.reserved_bytes = read_u64(j, "reserved_bytes", where);
  f.largest_cached_block = read_optional_u64(j, "largest_cached_block_bytes", where);
  f.memory_limit = read_optional_u64(j, "memory_limit_bytes", where);
  f.allowed_bytes = read_optional_u64(j, "allowed_bytes", where);
  f.peak_allocated_bytes = read_u64(j, "peak_allocated_bytes", where);
  f.peak_reserved_bytes = read_u64(j, "peak_reserved_bytes", where);
  return f;
}

std::string first_failures_text(const std::vector<StrategyResult>& results) {
  std::string text;
  bool stopped = false;
  for (const StrategyResult& r : results) {
    if (!r.first_failure) continue;
    text += first_failure_text(r);
    stopped = stopped || r.stopped_at_first_failure;
  }
  if (stopped)
    text +=
        "(a replay stops at its strategy's first failed request, as the program would have; "
        "--keep-going replays every request)\n";
  return text;
}

}  // namespace alloclab
