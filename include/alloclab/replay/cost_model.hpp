#pragma once
// Cost models: what allocation would have cost on a machine, for simulation (`--cost-model`).
// A model has, for upstream_allocate and upstream_deallocate, a list of (size, ns) points,
// linearly interpolated in log(size) between points and flat beyond the first and last; and
// `hit_ns`, the cost of serving a request from the cache. Built-ins `host` and `cuda` are
// documented in docs/report-schema.md ("Cost models"); `alloclab calibrate` writes a model
// measured on this machine.
//
// File format (JSON):
//   {"name": "…", "hit_ns": 20,
//    "upstream_allocate":   [{"size": 64, "ns": 20}, {"size": 1048576, "ns": 66000}, …],
//    "upstream_deallocate": [{"size": 64, "ns": 15}, …]}
// Other keys (calibrate's "p99_ns", "count", "source", …) are allowed and ignored.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "alloclab/replay/metrics.hpp"
#include "alloclab/strategies/strategy.hpp"

namespace alloclab {

struct CostCurve {
  std::vector<std::pair<std::uint64_t, double>> points;  // (size, ns), sizes strictly increasing
  double at(std::uint64_t size) const;
};

struct CostModel {
  std::string name;
  CostCurve allocate;
  CostCurve deallocate;
  double hit_ns = 0;
};

// "host" or "cuda"; nullopt for any other name.
std::optional<CostModel> builtin_cost_model(std::string_view name);
// A built-in name, or else a file. Throws InputError naming the file and the key.
CostModel load_cost_model(const std::string& name_or_path);
CostModel cost_model_from_json(const nlohmann::json& j, const std::string& source);
nlohmann::json cost_model_json(const CostModel& model);

// Charges each call that passes through it to a ModelledTime (an adaptor, like CountingUpstream).
class ModelledUpstream final : public Upstream {
 public:
  // `inner`, `model` and `time` must outlive this adaptor.
  ModelledUpstream(Upstream& inner, const CostModel& model, ModelledTime& time)
      : inner_(inner), model_(model), time_(time) {}
  std::optional<Block> allocate(std::uint64_t bytes) override;
  void deallocate(const Block& block) override;
  void touch(std::uint64_t address, std::uint64_t bytes) override { inner_.touch(address, bytes); }

 private:
  Upstream& inner_;
  const CostModel& model_;
  ModelledTime& time_;
};

}  // namespace alloclab
