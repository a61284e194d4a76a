// The `pytorch` spec: its keys and values (make_pytorch_strategy).
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

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

TEST(PyTorchSpec, accepts_the_list_form_of_roundup_power2_divisions_with_slashes) {
  NoUpstream up;
  auto s = alloclab::make_pytorch_strategy(
      StrategyParams("pytorch", {{"roundup_power2_divisions", "256:1/512:2/1024:4/>:8"}}), up);
  std::vector<std::uint64_t> want(16, 8);
  for (int k = 0; k <= 8; ++k) want[k] = 1;
  want[9] = 2;
  EXPECT_EQ(options_of(s).roundup_power2_division_list, want);
  EXPECT_EQ(options_of(s).roundup_power2_divisions, 0u);
  auto make = [&](const char* value) {
    return alloclab::make_pytorch_strategy(
        StrategyParams("pytorch", {{"roundup_power2_divisions", value}}), up);
  };
  try {
    make("256:1/300:2");
    ADD_FAILURE() << "300 is not a power of two";
  } catch (const SpecError& e) {
    EXPECT_EQ(std::string(e.what()),
              "pytorch: roundup_power2_divisions: item '300:2': the bound must be a power of two "
              "(a size in MiB)");
  }
  EXPECT_THROW(make("256:1/512"), SpecError);
  EXPECT_THROW(make("256:3"), SpecError);
  EXPECT_THROW(make("x:2"), SpecError);
  EXPECT_THROW(make("256:1/"), SpecError);
}

TEST(PyTorchSpec, accepts_memory_fraction_device_memory_gc_and_non_split_rounding) {
  NoUpstream up;
  auto s = alloclab::make_pytorch_strategy(
      StrategyParams("pytorch", {{"per_process_memory_fraction", "0.75"},
                                 {"device_memory", "80GiB"},
                                 {"garbage_collection_threshold", "0.6"},
                                 {"max_non_split_rounding", "32MiB"}}),
      up);
  EXPECT_EQ(options_of(s).allowed_memory(), 60 * 1024 * pt::kMiB);
  EXPECT_EQ(options_of(s).garbage_collection_threshold, (alloclab::Ratio{6, 10}));
  EXPECT_EQ(options_of(s).max_non_split_rounding, 32 * pt::kMiB);
  EXPECT_EQ(options_of(alloclab::make_pytorch_strategy(StrategyParams("pytorch", {}), up))
                .max_non_split_rounding,
            pt::kLargeBuffer);
}

TEST(PyTorchSpec, memory_keys_are_refused_alone_or_out_of_range) {
  NoUpstream up;
  auto make = [&](std::vector<std::pair<std::string, std::string>> kv) {
    return alloclab::make_pytorch_strategy(StrategyParams("pytorch", std::move(kv)), up);
  };
  auto message = [&](std::vector<std::pair<std::string, std::string>> kv) -> std::string {
    try {
      make(std::move(kv));
    } catch (const SpecError& e) {
      return e.what();
    }
    return "(accepted)";
  };
  EXPECT_EQ(message({{"per_process_memory_fraction", "0.5"}}),
            "pytorch: 'per_process_memory_fraction' needs 'device_memory' (the device's memory, "
            "e.g. device_memory=80GiB)");
  EXPECT_EQ(message({{"device_memory", "80GiB"}}),
            "pytorch: 'device_memory' is only used with 'per_process_memory_fraction'");
  EXPECT_EQ(message({{"garbage_collection_threshold", "0.5"}}),
            "pytorch: 'garbage_collection_threshold' needs 'per_process_memory_fraction' "
            "(PyTorch collects only once a memory fraction is set)");
  EXPECT_EQ(message({{"per_process_memory_fraction", "1.5"}, {"device_memory", "8GiB"}}),
            "pytorch: bad value '1.5' for 'per_process_memory_fraction': expected a fraction "
            "from 0 to 1 (PyTorch's set_per_process_memory_fraction)");
  EXPECT_EQ(message({{"per_process_memory_fraction", "1"},
                     {"device_memory", "8GiB"},
                     {"garbage_collection_threshold", "1.0"}}),
            "pytorch: bad value '1.0' for 'garbage_collection_threshold': expected a fraction "
            "strictly between 0 and 1 (PyTorch refuses others)");
  EXPECT_EQ(message({{"max_non_split_rounding", "16MiB"}}),
            "pytorch: bad value '16MiB' for 'max_non_split_rounding': expected a whole number of "
            "MiB, at least 20MiB (PyTorch's max_non_split_rounding_mb >= 20)");
  EXPECT_THROW(make({{"per_process_memory_fraction", "0.5"}, {"device_memory", "0"}}), SpecError);
}

}  // namespace
