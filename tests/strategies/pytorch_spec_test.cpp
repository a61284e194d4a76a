// The `pytorch` spec: its keys and values (make_pytorch_strategy).
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

#include "alloclab/strategies/params.hpp"
#include "alloclab/strategies/pytorch.hpp"

namespace {

using alloclab::PyTorchCachingStrategy;
using alloclab::SpecError;
using alloclab::StrategyParams;
namespace pt = alloclab::pytorch;

class NoUpstream final : public alloclab::Upstream {
 public:
  std::optional<alloclab::Block> allocate(std::uint64_t) override { return std::nullopt; }
  void deallocate(const alloclab::Block&) override {}
};

const alloclab::PyTorchOptions& options_of(const std::unique_ptr<alloclab::Strategy>& s) {
  auto* p = dynamic_cast<PyTorchCachingStrategy*>(s.get());
  EXPECT_NE(p, nullptr);
  return p->options();
}

TEST(PyTorchSpec, defaults_are_unlimited_split_and_no_power2_rounding) {
  NoUpstream up;
  auto s = alloclab::make_pytorch_strategy(StrategyParams("pytorch", {}), up);
  EXPECT_EQ(options_of(s).max_split_size, pt::kUnlimited);
  EXPECT_EQ(options_of(s).roundup_power2_divisions, 0u);
}

TEST(PyTorchSpec, accepts_max_split_size_with_units_and_divisions) {
  NoUpstream up;
  auto s = alloclab::make_pytorch_strategy(
      StrategyParams("pytorch", {{"max_split_size", "64MiB"}, {"roundup_power2_divisions", "4"}}),
      up);
  EXPECT_EQ(options_of(s).max_split_size, 64 * pt::kMiB);
  EXPECT_EQ(options_of(s).roundup_power2_divisions, 4u);
}

TEST(PyTorchSpec, rejects_unknown_keys_and_invalid_values) {
  NoUpstream up;
  auto make = [&](const char* key, const char* value) {
    return alloclab::make_pytorch_strategy(StrategyParams("pytorch", {{key, value}}), up);
  };
  EXPECT_THROW(make("round", "512"), SpecError);
  EXPECT_THROW(make("max_split_size", "16MiB"), SpecError);        // below 20 MiB
  EXPECT_THROW(make("max_split_size", "30MB"), SpecError);         // not a whole number of MiB
  EXPECT_THROW(make("roundup_power2_divisions", "3"), SpecError);  // not a power of two
  EXPECT_NO_THROW(make("max_split_size", "20MiB"));
  try {
    make("max_split_size", "16MiB");
  } catch (const SpecError& e) {
    EXPECT_EQ(std::string(e.what()),
              "pytorch: bad value '16MiB' for 'max_split_size': expected a whole number of MiB, at "
              "least 20MiB (PyTorch's max_split_size_mb >= 20)");
  }
}

}  // namespace
