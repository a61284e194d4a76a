// The `pytorch` spec: its keys and values (make_pytorch_strategy).
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "alloclab/strategies/params.hpp"
#include "alloclab/strategies/pytorch.hpp"
#include "alloclab/strategies/registry.hpp"

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

TEST(PyTorchSpec, expandable_segments_is_true_or_false) {
  NoUpstream up;
  EXPECT_FALSE(options_of(alloclab::make_pytorch_strategy(StrategyParams("pytorch", {}), up))
                   .expandable_segments);
  auto on = alloclab::make_strategy("pytorch:expandable_segments=true", up);
  EXPECT_TRUE(options_of(on).expandable_segments);
  auto off = alloclab::make_strategy("pytorch:expandable_segments=false", up);
  EXPECT_FALSE(options_of(off).expandable_segments);
  try {
    alloclab::make_strategy("pytorch:expandable_segments=yes", up);
    ADD_FAILURE() << "accepted";
  } catch (const SpecError& e) {
    EXPECT_STREQ(e.what(),
                 "pytorch: bad value 'yes' for 'expandable_segments': expected true or false");
  }
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

// --- pytorch-conf: PYTORCH_CUDA_ALLOC_CONF as a spec ----------------------------------------

const alloclab::PyTorchOptions& conf_options(std::string_view spec) {
  static NoUpstream up;
  static std::unique_ptr<alloclab::Strategy> kept;
  kept = alloclab::make_strategy(spec, up);
  return options_of(kept);
}

std::string conf_error(std::string_view spec) {
  NoUpstream up;
  try {
    alloclab::make_strategy(spec, up);
  } catch (const SpecError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(PyTorchConf, maps_a_pasted_conf_onto_the_model_options) {
  const auto& o = conf_options(
      "pytorch-conf:\"expandable_segments:False,max_split_size_mb:128,"
      "roundup_power2_divisions:4\"");
  EXPECT_EQ(o.max_split_size, 128 * pt::kMiB);
  EXPECT_EQ(o.roundup_power2_division_list, std::vector<std::uint64_t>(16, 4));
  EXPECT_EQ(o.divisions_for(5 * pt::kMiB), 4u);
  // PyTorch drops spaces; the list form keeps its commas inside the quotes.
  const auto& l = conf_options(
      "pytorch-conf:\" roundup_power2_divisions:[256:1, 512:2,1024:4,>:8], "
      "max_non_split_rounding_mb:64,backend:native,release_lock_on_cudamalloc:True\"");
  std::vector<std::uint64_t> want(16, 8);
  for (int k = 0; k <= 8; ++k) want[k] = 1;
  want[9] = 2;
  EXPECT_EQ(l.roundup_power2_division_list, want);
  EXPECT_EQ(l.max_non_split_rounding, 64 * pt::kMiB);
  EXPECT_EQ(l.max_split_size, pt::kUnlimited);
  // Unquoted: everything after the ':' is the conf (as in "pytorch-conf:$PYTORCH_CUDA_ALLOC_CONF").
  EXPECT_EQ(conf_options("pytorch-conf:max_split_size_mb:20").max_split_size, 20 * pt::kMiB);
  EXPECT_EQ(conf_options("pytorch-conf").max_split_size, pt::kUnlimited);
  // A repeated roundup key applies on top of the earlier one, as in PyTorch: all 4, then
  // interval 0 set to 2.
  std::vector<std::uint64_t> again(16, 4);
  again[0] = 2;
  EXPECT_EQ(conf_options("pytorch-conf:\"roundup_power2_divisions:[>:4],"
                         "roundup_power2_divisions:[1:2]\"")
                .roundup_power2_division_list,
            again);
}

TEST(PyTorchConf, takes_the_memory_fraction_after_the_quoted_conf) {
  const auto& o = conf_options(
      "pytorch-conf:\"garbage_collection_threshold:0.6\",per_process_memory_fraction=0.5,"
      "device_memory=80GiB");
  EXPECT_EQ(o.allowed_memory(), 40 * 1024 * pt::kMiB);
  EXPECT_EQ(o.garbage_collection_threshold, (alloclab::Ratio{6, 10}));
  EXPECT_EQ(conf_error("pytorch-conf:\"garbage_collection_threshold:0.6\""),
            "pytorch-conf: 'garbage_collection_threshold' needs 'per_process_memory_fraction' "
            "(PyTorch collects only once a memory fraction is set)");
  EXPECT_EQ(conf_error("pytorch-conf:\"max_split_size_mb:128\",max_split_size=64MiB"),
            "pytorch-conf: unknown parameter 'max_split_size' (accepted: conf, "
            "per_process_memory_fraction, device_memory)");
  EXPECT_EQ(conf_error("pytorch-conf:\"max_split_size_mb:128"),
            "strategy spec 'pytorch-conf:\"max_split_size_mb:128' has no closing '\"' after the "
            "conf");
}

TEST(PyTorchConf, takes_expandable_segments) {
  EXPECT_TRUE(conf_options("pytorch-conf:\"expandable_segments:True\"").expandable_segments);
  EXPECT_TRUE(conf_options("pytorch-conf:\"max_split_size_mb:64, expandable_segments:True\"")
                  .expandable_segments);
  EXPECT_FALSE(conf_options("pytorch-conf:\"expandable_segments:False\"").expandable_segments);
  EXPECT_FALSE(conf_options("pytorch-conf:\"max_split_size_mb:64\"").expandable_segments);
}

TEST(PyTorchConf, refuses_what_pytorch_refuses_and_what_the_model_lacks) {
  EXPECT_EQ(conf_error("pytorch-conf:\"max_split_size_mb:64,pinned_use_cuda_host_register:True\""),
            "pytorch-conf: 'pinned_use_cuda_host_register' is not modelled (it configures "
            "PyTorch's pinned host memory allocator)");
  EXPECT_EQ(conf_error("pytorch-conf:\"backend:cudaMallocAsync\""),
            "pytorch-conf: 'backend:cudaMallocAsync' is not modelled (the model is the native "
            "caching allocator)");
  EXPECT_EQ(conf_error("pytorch-conf:\"max_split_mb:64\""),
            "pytorch-conf: 'max_split_mb': unknown key (PyTorch: Unrecognized CachingAllocator "
            "option)");
  EXPECT_EQ(conf_error("pytorch-conf:\"max_split_size_mb:16\""),
            "pytorch-conf: 'max_split_size_mb': too small, must be >= 20 (as in PyTorch)");
  EXPECT_EQ(conf_error("pytorch-conf:\"roundup_power2_divisions:3\""),
            "pytorch-conf: 'roundup_power2_divisions': the divisions must be a power of two up to "
            "2^30, found '3'");
  EXPECT_EQ(conf_error("pytorch-conf:\"roundup_power2_divisions:[300:2]\""),
            "pytorch-conf: roundup_power2_divisions: item '300:2': the bound must be a power of "
            "two (a size in MiB)");
  EXPECT_EQ(conf_error("pytorch-conf:\"garbage_collection_threshold:1.0\""),
            "pytorch-conf: 'garbage_collection_threshold': must be in (0.0, 1.0), found '1.0'");
  EXPECT_EQ(conf_error("pytorch-conf:\"expandable_segments:maybe\""),
            "pytorch-conf: 'expandable_segments': expected True or False, found 'maybe'");
  EXPECT_EQ(conf_error("pytorch-conf:\"max_split_size_mb\""),
            "pytorch-conf: 'max_split_size_mb': the value is missing");
  EXPECT_EQ(conf_error("pytorch-conf:\"max_split_size_mb:64 max_non_split_rounding_mb:64\""),
            "pytorch-conf: 'max_split_size_mb': expected a whole number, found "
            "'64max_non_split_rounding_mb'");
  EXPECT_EQ(
      conf_error("pytorch-conf:\"max_split_size_mb:64;expandable_segments:False\""),
      "pytorch-conf: 'max_split_size_mb': expected a whole number, found '64;expandable_segments'");
}

TEST(PyTorchConfSettings, lists_each_key_and_value_as_pytorch_reads_them) {
  using Settings = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(alloclab::pytorch_conf_settings(
                " max_split_size_mb : 64, roundup_power2_divisions:[256:1,>:4],"
                "expandable_segments:True"),
            (Settings{{"max_split_size_mb", "64"},
                      {"roundup_power2_divisions", "[256:1,>:4]"},
                      {"expandable_segments", "True"}}));
  EXPECT_EQ(alloclab::pytorch_conf_settings(""), Settings{});
  EXPECT_EQ(alloclab::pytorch_conf_settings("lonely,a:1"), (Settings{{"a", "1"}}));
}

}  // namespace
