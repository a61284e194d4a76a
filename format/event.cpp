#include "alloclab/format/event.hpp"

#include <array>
#include <charconv>

namespace alloclab {
namespace {
constexpr std::array<std::string_view, op_count> op_names = {"alloc", "free", "run_begin",
                                                             "run_end", "mark"};
constexpr std::array<std::string_view, memory_kind_count> kind_names = {
    "host", "device", "managed", "pinned", "mapped", "async-pool", "vmm"};
}  // namespace

std::string_view to_string(Op op) {
  return op_names.at(static_cast<std::size_t>(op));
}
std::string_view to_string(MemoryKind kind) {
  return kind_names.at(static_cast<std::size_t>(kind));
}

std::optional<Op> parse_op(std::string_view text) {
  for (std::size_t i = 0; i < op_names.size(); ++i)
    if (op_names[i] == text) return static_cast<Op>(i);
  return std::nullopt;
}

std::optional<MemoryKind> parse_memory_kind(std::string_view text) {
  for (std::size_t i = 0; i < kind_names.size(); ++i)
    if (kind_names[i] == text) return static_cast<MemoryKind>(i);
  return std::nullopt;
}

std::string device_name(DeviceId device) {
  return device < 0 ? std::string("cpu") : "cuda:" + std::to_string(device);
}

std::optional<DeviceId> parse_device(std::string_view text) {
  if (text == "cpu" || text == "-1") return cpu_device;
  if (text.starts_with("cuda:")) text.remove_prefix(5);
  DeviceId id = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (ec != std::errc{} || end != text.data() + text.size() || id < 0 || text.empty())
    return std::nullopt;
  return id;
}

}  // namespace alloclab
