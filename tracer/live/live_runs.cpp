#include "alloclab/live/live_runs.hpp"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

namespace alloclab::live {
namespace {

// The system call itself: a recorder interposes mmap and munmap, and would record the list's
// pages as a mapping of the program. Pages are touched (and so take memory) only as runs fill
// them.
void* map_pages(std::size_t bytes) {
  const long p = syscall(SYS_mmap, nullptr, bytes, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == -1 ? nullptr : reinterpret_cast<void*>(p);
}

}  // namespace

LiveRuns::~LiveRuns() {
  if (listed_ != nullptr) syscall(SYS_munmap, listed_, kMaxListed * sizeof(Listed));
}

void LiveRuns::open(const char* label, const RunTotals& now, std::uint64_t live,
                    std::uint64_t reserved) {
  const std::size_t n = protocol::kept_label_length(label);
  if (n > 0) std::memcpy(label_, label, n);
  label_[n] = '\0';
  tally_.open(std::string(), now, live, reserved);
  open_ = true;
}

void LiveRuns::close(const RunTotals& now) {
  open_ = false;
  if (listed_ == nullptr && !unmappable_) {
    listed_ = static_cast<Listed*>(map_pages(kMaxListed * sizeof(Listed)));
    unmappable_ = listed_ == nullptr;
  }
  if (count_ >= kMaxListed || listed_ == nullptr) {
    ++not_listed_;
    return;
  }
  const RunMetrics m = tally_.close(now);
  Listed& run = listed_[count_++];
  run = Listed{m.requests,
               m.hits,
               m.upstream_allocs,
               m.upstream_frees,
               m.evictions,
               m.peak_live_bytes,
               m.peak_reserved_bytes,
               m.slack_bytes,
               m.allocation_time_ns.value_or(0),
               {}};
  std::memcpy(run.label, label_, sizeof run.label);
}

RunMetrics LiveRuns::metrics_of(const Listed& run) {
  RunMetrics m;
  m.label = run.label;
  m.requests = run.requests;
  m.hits = run.hits;
  m.upstream_allocs = run.upstream_allocs;
  m.upstream_frees = run.upstream_frees;
  m.evictions = run.evictions;
  m.peak_live_bytes = run.peak_live_bytes;
  m.peak_reserved_bytes = run.peak_reserved_bytes;
  m.slack_bytes = run.slack_bytes;
  m.allocation_time_ns = run.allocation_ticks;  // LiveCache::report() scales it
  return m;
}

std::vector<RunMetrics> LiveRuns::listed(const RunTotals& now) const {
  std::vector<RunMetrics> runs;
  runs.reserve(count_ + 1);
  for (std::size_t k = 0; k < count_; ++k) runs.push_back(metrics_of(listed_[k]));
  if (open_ && count_ < kMaxListed && !unmappable_) {
    runs.push_back(tally_.close(now));
    runs.back().label = label_;
  }
  return runs;
}

std::uint64_t LiveRuns::not_listed() const {
  const bool open_unlisted = open_ && (count_ >= kMaxListed || unmappable_);
  return not_listed_ + (open_unlisted ? 1 : 0);
}

}  // namespace alloclab::live
