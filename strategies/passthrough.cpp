#include "alloclab/strategies/passthrough.hpp"

namespace alloclab {

std::unique_ptr<Strategy> PassthroughStrategy::from_params(const StrategyParams&,
                                                           Upstream& upstream) {
  return std::make_unique<PassthroughStrategy>(upstream);
}

std::optional<Block> PassthroughStrategy::allocate(std::uint64_t size, std::uint64_t) {
  ++stats_.requests;
  return allocate_upstream(size);  // nothing cached, so a failure is final (no retry)
}

void PassthroughStrategy::deallocate(const Block& block) {
  upstream_.deallocate(block);
}

}  // namespace alloclab
