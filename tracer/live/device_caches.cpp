#include "alloclab/live/device_caches.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>

namespace alloclab::live {

// The device allocator's real calls as the strategy's upstream. Notes the status of a failed
// call, which the program gets when the strategy then fails its request, and samples the
// device's memory in use after each allocation it made.
class DeviceCaches::RealUpstream final : public Upstream {
 public:
  explicit RealUpstream(const DeviceCalls& calls) : calls_(calls) {}
  std::optional<Block> allocate(std::uint64_t bytes) override {
    if (bytes > std::numeric_limits<std::size_t>::max()) {
      last_error_ = calls_.out_of_memory;
      return std::nullopt;
    }
    void* p = nullptr;
    const int status =
        calls_.allocate(&p, static_cast<std::size_t>(std::max<std::uint64_t>(bytes, 1)));
    if (status != calls_.success || p == nullptr) {
      if (calls_.clear_error != nullptr) calls_.clear_error();
      last_error_ = status != calls_.success ? status : calls_.out_of_memory;
      return std::nullopt;
    }
    std::uint64_t used = 0;
    if (calls_.used_bytes != nullptr && calls_.used_bytes(&used) == calls_.success)
      peak_device_bytes_ = std::max(peak_device_bytes_, used);
    return Block{reinterpret_cast<std::uintptr_t>(p), bytes};
  }
  void deallocate(const Block& block) override {
    calls_.deallocate(reinterpret_cast<void*>(static_cast<std::uintptr_t>(block.address)));
  }
  int take_last_error() { return std::exchange(last_error_, calls_.success); }
  std::uint64_t peak_device_bytes() const { return peak_device_bytes_; }

 private:
  const DeviceCalls& calls_;
  int last_error_ = 0;
  std::uint64_t peak_device_bytes_ = 0;
};

struct DeviceCaches::Device {
  Device(const std::string& spec, const DeviceCalls& calls, Clock clock, bool implicit_run)
      : upstream(calls), cache(spec, upstream, clock, implicit_run) {}
  RealUpstream upstream;
  LiveCache cache;  // after its upstream: destroyed first
};

DeviceCaches::DeviceCaches(std::string spec, std::string device_name, DeviceCalls calls,
                           Clock clock, bool implicit_run)
    : spec_(std::move(spec)),
      device_name_(std::move(device_name)),
      calls_(calls),
      clock_(clock),
      implicit_run_(implicit_run) {}

DeviceCaches::~DeviceCaches() = default;

int DeviceCaches::allocate(int device, std::size_t bytes, std::uint64_t stream, void** out) {
  if (bytes == 0 || device < 0 || device >= kMaxDevices) return calls_.allocate(out, bytes);
  *out = nullptr;
  if (bytes > std::numeric_limits<std::size_t>::max() - (kGranularity - 1))
    return calls_.out_of_memory;
  const std::size_t rounded = (bytes + kGranularity - 1) / kGranularity * kGranularity;
  const std::lock_guard<std::mutex> lock(mutex_);
  std::unique_ptr<Device>& slot = devices_[static_cast<std::size_t>(device)];
  if (!slot) {
    // A cache made inside a marked run is inside it, under its label, as the others are (with
    // no implicit run before it: nothing happened on the device before); one made outside any
    // starts as the others started.
    slot = std::make_unique<Device>(spec_, calls_, clock_, implicit_run_ && !in_marked_run_);
    if (in_marked_run_) slot->cache.begin_run(run_label_.c_str());
  }
  slot->upstream.take_last_error();
  void* p = slot->cache.allocate(rounded, stream);
  const int error = slot->upstream.take_last_error();
  if (p == nullptr) return error != calls_.success ? error : calls_.out_of_memory;
  *out = p;
  return calls_.success;
}

bool DeviceCaches::deallocate(void* p) {
  if (p == nullptr) return false;
  const std::lock_guard<std::mutex> lock(mutex_);
  for (const std::unique_ptr<Device>& device : devices_) {
    if (device && device->cache.may_own(p) && device->cache.deallocate_if_owned(p)) return true;
  }
  return false;
}

bool DeviceCaches::owns(const void* p) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  for (const std::unique_ptr<Device>& device : devices_)
    if (device && device->cache.may_own(p) && device->cache.owns(p)) return true;
  return false;
}

void DeviceCaches::begin_run(const char* label) {
  const std::lock_guard<std::mutex> lock(mutex_);
  in_marked_run_ = true;
  run_label_.assign(label != nullptr ? label : "");
  for (const std::unique_ptr<Device>& device : devices_)
    if (device) device->cache.begin_run(label);
}

void DeviceCaches::end_run() {
  const std::lock_guard<std::mutex> lock(mutex_);
  in_marked_run_ = false;
  for (const std::unique_ptr<Device>& device : devices_)
    if (device) device->cache.end_run();
}

std::vector<LiveReport> DeviceCaches::finish(std::uint64_t pid) {
  const std::lock_guard<std::mutex> lock(mutex_);
  std::vector<LiveReport> reports;
  for (std::size_t index = 0; index < devices_.size(); ++index) {
    Device* device = devices_[index].get();
    if (device == nullptr) continue;
    LiveReport report = device->cache.report();
    report.spec = spec_;
    report.device = device_name_ + std::to_string(index);
    report.pid = pid;
    report.peak_device_bytes = device->upstream.peak_device_bytes();
    device->cache.release();
    reports.push_back(std::move(report));
  }
  return reports;
}

}  // namespace alloclab::live
