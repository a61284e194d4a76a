#pragma once
// `per-run-pool` (rten's TensorPool / BufferPool; preset `rten`), per docs/strategy-contract.md: a
// pool that lives for one run (between begin_run() and end_run()).
// - inside a run: free(b) appends b to the pool; alloc(s) (s rounded up to a multiple of `round`)
//   takes the block of the smallest capacity >= s, ties going to the block added earliest: a hit.
//   Otherwise a miss asks the upstream for s bytes.
// - min_size: a request (after rounding) smaller than min_size is a miss without looking at the
//   pool; a freed block of capacity smaller than min_size goes straight back upstream.
// - end_run(): every pooled block goes back upstream, each an eviction. Live blocks stay live and,
//   freed during a later run, enter that run's pool.
// - outside a run: free goes straight upstream, alloc is a miss. begin_run() inside a run ends
//   that run first; end_run() outside a run does nothing.
// A trace with no run markers is one run: the replayer calls begin_run() first.
// Parameters: round=N (size, default 1), min_size=BYTES (size, default 0; rten uses 128).
#include <cstdint>
#include <memory>
#include <optional>

#include "alloclab/strategies/detail/capacity_index.hpp"
#include "alloclab/strategies/detail/strategy_base.hpp"
#include "alloclab/strategies/params.hpp"

namespace alloclab {

struct PerRunPoolOptions {
  std::uint64_t round = 1;
  std::uint64_t min_size = 0;
  static PerRunPoolOptions from_params(const StrategyParams& params);
  // `defaults` supplies the values of keys not given (the `rten` preset sets min_size=128).
  static PerRunPoolOptions from_params(const StrategyParams& params,
                                       const PerRunPoolOptions& defaults);
};

class PerRunPoolStrategy final : public detail::StrategyBase {
 public:
  explicit PerRunPoolStrategy(Upstream& upstream, PerRunPoolOptions options = {});
  static std::unique_ptr<Strategy> from_params(const StrategyParams& params, Upstream& upstream);

  std::optional<Block> allocate(std::uint64_t size, std::uint64_t stream) override;
  void deallocate(const Block& block) override;
  void begin_run() override;
  void end_run() override;

  bool in_run() const { return in_run_; }
  std::uint64_t pooled_blocks() const { return pool_.blocks(); }

 private:
  std::uint64_t return_cache(bool count_as_evictions) override;
  std::uint64_t largest_cached_block() const override { return pool_.largest(); }

  std::uint64_t min_size_;
  bool in_run_ = false;
  // Invariant: empty whenever !in_run_ (only frees inside a run add to it; end_run empties it).
  detail::OrderedIndex pool_;
};

}  // namespace alloclab
