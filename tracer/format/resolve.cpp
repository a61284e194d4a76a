#include "alloclab/trace/resolve.hpp"

#include <limits>
#include <map>
#include <stdexcept>

#include "address_map.hpp"

namespace alloclab {
namespace {

constexpr std::uint64_t never = std::numeric_limits<std::uint64_t>::max();

// Live and recently freed addresses, one pair of maps per device: an address means nothing
// across devices (cuda:0 and cuda:1 can hand out the same one).
struct DeviceAddresses {
  detail::AddressMap live;   // address -> allocation id
  detail::AddressMap freed;  // addresses freed and not reallocated since (double-free detection)
};

class Resolver {
 public:
  explicit Resolver(const Trace& trace) : trace_(trace) {}

  ResolvedTrace run() {
    out_.origins = trace_.origins();
    bool has_markers = false;
    for (std::size_t i = 0; i < trace_.size() && !has_markers; ++i) {
      const Op op = trace_.op(i);
      has_markers = (op == Op::run_begin || op == Op::run_end) && !trace_.segment(i);
    }
    out_.implicit_run = !has_markers && !trace_.empty();
    out_.ops.reserve(trace_.size() + 2);
    out_.op_time_ns.reserve(trace_.size() + 2);
    if (out_.implicit_run) begin_run(trace_.time_ns(0), "");

    for (std::size_t i = 0; i < trace_.size(); ++i) step(i);

    if (in_run_) {
      // The implicit run spans the whole trace and so never ends inside it: what a pool holds
      // at the end is released by the final clean-up, which no metric counts.
      if (!out_.implicit_run) ++out_.anomalies.unterminated_runs;
      out_.runs.back().end_op = out_.ops.size();
      out_.runs.back().end_time_ns = trace_.empty() ? 0 : trace_.time_ns(trace_.size() - 1);
    }
    for (auto& entry : devices_)
      entry.second.live.for_each([&](std::uint64_t, std::uint32_t id) {
        ++out_.anomalies.leaks;
        out_.anomalies.leaked_bytes += out_.alloc_size[id];
      });
    return std::move(out_);
  }

 private:
  DeviceAddresses& addresses(DeviceId device) {
    if (last_device_ && last_device_id_ == device) return *last_device_;
    last_device_id_ = device;
    last_device_ = &devices_[device];
    return *last_device_;
  }

  void emit(ReplayOp op, std::uint32_t id, std::uint64_t time) {
    out_.ops.push_back(ResolvedOp{id, op});
    out_.op_time_ns.push_back(time);
  }

  void begin_run(std::uint64_t time, std::string_view label) {
    const auto run = static_cast<std::uint32_t>(out_.runs.size());
    out_.runs.push_back(RunInfo{std::string(label), out_.ops.size(), 0, time, 0});
    emit(ReplayOp::run_begin, run, time);
    in_run_ = true;
  }

  void end_run(std::uint64_t time) {
    RunInfo& run = out_.runs.back();
    run.end_op = out_.ops.size();
    run.end_time_ns = time;
    emit(ReplayOp::run_end, static_cast<std::uint32_t>(out_.runs.size() - 1), time);
    in_run_ = false;
  }

  void free_id(DeviceAddresses& device, std::uint64_t address, std::uint32_t id,
               std::uint64_t time) {
    device.live.erase(address);
    device.freed.put(address, 0);
    out_.free_time_ns[id] = time;
    emit(ReplayOp::free, id, time);
  }

  void step(std::size_t i) {
    const Op op = trace_.op(i);
    const std::uint64_t time = trace_.time_ns(i);
    if (trace_.segment(i)) {
      if (op == Op::alloc) {
        ++out_.segment_allocs;
        out_.segment_bytes_allocated += trace_.size_of(i);
      } else if (op == Op::free) {
        ++out_.segment_frees;
      }
      return;
    }
    switch (op) {
      case Op::alloc:
        return alloc(i, time);
      case Op::free:
        return free(i, time);
      case Op::run_begin:
        if (in_run_) {
          ++out_.anomalies.nested_run_begin;
          end_run(time);
        }
        return begin_run(time, trace_.label(i));
      case Op::run_end:
        if (!in_run_) {
          ++out_.anomalies.run_end_outside_run;
          return;
        }
        return end_run(time);
      case Op::mark:
        return;
    }
  }

  void alloc(std::size_t i, std::uint64_t time) {
    const std::uint64_t address = trace_.address(i);
    if (address == 0) {
      ++out_.anomalies.failed_allocs;
      return;
    }
    DeviceAddresses& device = addresses(trace_.device(i));
    if (const std::uint32_t* older = device.live.find(address)) {
      ++out_.anomalies.alloc_over_live;
      free_id(device, address, *older, time);
    }
    if (out_.alloc_size.size() >= std::numeric_limits<std::uint32_t>::max())
      throw std::length_error("more than 2^32-1 allocations in one trace");
    const auto id = static_cast<std::uint32_t>(out_.alloc_size.size());
    out_.alloc_size.push_back(trace_.size_of(i));
    out_.alloc_origin.push_back(trace_.origin_index(i));
    out_.alloc_time_ns.push_back(time);
    out_.free_time_ns.push_back(never);
    device.live.put(address, id);
    device.freed.erase(address);
    emit(ReplayOp::alloc, id, time);
  }

  void free(std::size_t i, std::uint64_t time) {
    const std::uint64_t address = trace_.address(i);
    if (address == 0) {
      ++out_.anomalies.free_null;
      return;
    }
    DeviceAddresses& device = addresses(trace_.device(i));
    if (const std::uint32_t* id = device.live.find(address))
      return free_id(device, address, *id, time);
    if (device.freed.find(address))
      ++out_.anomalies.double_free;
    else
      ++out_.anomalies.free_unknown;
  }

  const Trace& trace_;
  ResolvedTrace out_;
  std::map<DeviceId, DeviceAddresses> devices_;  // node-based: pointers stay valid
  DeviceAddresses* last_device_ = nullptr;
  DeviceId last_device_id_ = 0;
  bool in_run_ = false;
};

}  // namespace

ResolvedTrace resolve(const Trace& trace) {
  return Resolver(trace).run();
}

}  // namespace alloclab
