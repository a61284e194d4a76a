#pragma once
// Measurement adaptors for real replay (STYLE.md: measurement is an adaptor around a strategy or
// an upstream, never code inside one). Both read std::chrono::steady_clock (the vDSO clock, some
// 20 ns per read on x86-64 Linux) around each call and record the duration in a histogram.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "alloclab/replay/latency.hpp"
#include "alloclab/strategies/strategy.hpp"

namespace alloclab {

// The distributions a real replay measures, under the names the report uses.
struct ReplayLatencies {
  LatencyHistogram strategy_allocate;    // Strategy::allocate, upstream call included on a miss
  LatencyHistogram strategy_deallocate;  // Strategy::deallocate, evictions included
  LatencyHistogram upstream_allocate;    // each upstream allocate (failed ones included)
  LatencyHistogram upstream_deallocate;  // each upstream deallocate
  LatencyHistogram touch;                // --touch: writing each page of a block handed out
  std::map<std::string, LatencySummary> summaries(bool with_touch) const;
};

inline std::uint64_t elapsed_ns(std::chrono::steady_clock::time_point from,
                                std::chrono::steady_clock::time_point to) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(to - from).count());
}

// Writes one byte in every 4 KiB page of [address, address + bytes): the first use of fresh
// memory, which pays one page fault per page; memory already used pays none.
void touch_pages(std::uint64_t address, std::uint64_t bytes);

class TimedUpstream final : public Upstream {
 public:
  // `inner` and `latencies` must outlive this adaptor.
  TimedUpstream(Upstream& inner, ReplayLatencies& latencies)
      : inner_(inner), latencies_(latencies) {}
  std::optional<Block> allocate(std::uint64_t bytes) override {
    const auto start = std::chrono::steady_clock::now();
    std::optional<Block> block = inner_.allocate(bytes);
    latencies_.upstream_allocate.record(elapsed_ns(start, std::chrono::steady_clock::now()));
    return block;
  }
  void deallocate(const Block& block) override {
    const auto start = std::chrono::steady_clock::now();
    inner_.deallocate(block);
    latencies_.upstream_deallocate.record(elapsed_ns(start, std::chrono::steady_clock::now()));
  }
  void touch(std::uint64_t address, std::uint64_t bytes) override { inner_.touch(address, bytes); }

 private:
  Upstream& inner_;
  ReplayLatencies& latencies_;
};

// Times each allocate/deallocate of the strategy it owns; with a `toucher`, touches the requested
// bytes of each block it hands out through Upstream::touch (host pages, or a device memset on a
// CUDA upstream), timed separately (ReplayLatencies::touch).
class TimedStrategy final : public Strategy {
 public:
  // `toucher` (the upstream under the strategy, or null for no touching) must outlive this.
  TimedStrategy(std::unique_ptr<Strategy> inner, ReplayLatencies& latencies, Upstream* toucher)
      : inner_(std::move(inner)), latencies_(latencies), toucher_(toucher) {}
  std::optional<Block> allocate(std::uint64_t size, std::uint64_t stream) override {
    const auto start = std::chrono::steady_clock::now();
    std::optional<Block> block = inner_->allocate(size, stream);
    const auto got = std::chrono::steady_clock::now();
    latencies_.strategy_allocate.record(elapsed_ns(start, got));
    if (toucher_ != nullptr && block) {
      toucher_->touch(block->address, std::min(size, block->capacity));
      latencies_.touch.record(elapsed_ns(got, std::chrono::steady_clock::now()));
    }
    return block;
  }
  void deallocate(const Block& block) override {
    const auto start = std::chrono::steady_clock::now();
    inner_->deallocate(block);
    latencies_.strategy_deallocate.record(elapsed_ns(start, std::chrono::steady_clock::now()));
  }
  void begin_run() override { inner_->begin_run(); }
  void end_run() override { inner_->end_run(); }
  void release() override { inner_->release(); }
  const StrategyStats& stats() const override { return inner_->stats(); }
  StrategyCounters counters() const override { return inner_->counters(); }
  FailureState failure_state(std::uint64_t size) const override {
    return inner_->failure_state(size);
  }
  bool hands_out_upstream_memory() const override { return inner_->hands_out_upstream_memory(); }
  bool adopts_segments() const override { return inner_->adopts_segments(); }
  std::optional<std::vector<Block>> adopt(const std::vector<HeldSegment>& segments) override {
    return inner_->adopt(segments);
  }

 private:
  std::unique_ptr<Strategy> inner_;
  ReplayLatencies& latencies_;
  Upstream* toucher_;
};

}  // namespace alloclab
