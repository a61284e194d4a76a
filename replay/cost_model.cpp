#include "alloclab/replay/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>

#include "alloclab/format/error.hpp"

namespace alloclab {
namespace {

constexpr std::uint64_t KiB = 1024, MiB = 1024 * KiB, GiB = 1024 * MiB;

// Every number below and where it comes from is listed in docs/report-schema.md ("Cost models").
CostModel host_model() {
  CostModel m;
  m.name = "host";
  m.hit_ns = 20;
  // Small sizes: glibc's thread cache and bins (~20 ns). From 128 KiB (glibc's initial mmap
  // threshold) a fresh mapping: ~2 µs of mmap plus ~0.25 µs per 4 KiB page faulted on first use.
  m.allocate.points = {
      {64, 20},          {4 * KiB, 25},         {64 * KiB, 100},        {128 * KiB, 10'000},
      {1 * MiB, 66'000}, {16 * MiB, 1'026'000}, {256 * MiB, 16'386'000}};
  // Small frees ~15 ns; munmap ~5 µs plus ~60 ns per page returned (TLB shootdown, page freeing).
  m.deallocate.points = {
      {64, 15},          {4 * KiB, 20},       {64 * KiB, 50},        {128 * KiB, 5'000},
      {1 * MiB, 20'000}, {16 * MiB, 250'000}, {256 * MiB, 4'000'000}};
  return m;
}

CostModel cuda_model() {
  CostModel m;
  m.name = "cuda";
  m.hit_ns = 20;  // the cache is host code, as for `host`
  // cudaMalloc ~50 µs for 4–512 KB, more for larger (PLATFORM.md); the growth above 512 KiB is
  // an estimate. cudaFree synchronises the device: modelled as the same cost.
  m.allocate.points = {{4 * KiB, 50'000},
                       {512 * KiB, 50'000},
                       {2 * MiB, 60'000},
                       {64 * MiB, 150'000},
                       {1 * GiB, 1'000'000}};
  m.deallocate.points = m.allocate.points;
  return m;
}

[[noreturn]] void fail(const std::string& source, const std::string& key, const std::string& what) {
  throw InputError(source + ": cost model key '" + key + "' " + what);
}

CostCurve curve_from_json(const nlohmann::json& j, const char* key, const std::string& source) {
  const auto it = j.find(key);
  if (it == j.end()) fail(source, key, "is missing");
  if (!it->is_array() || it->empty())
    fail(source, key, "must be a non-empty list of {\"size\": BYTES, \"ns\": NANOSECONDS}");
  CostCurve curve;
  for (std::size_t i = 0; i < it->size(); ++i) {
    const nlohmann::json& p = (*it)[i];
    const std::string where = std::string(key) + "[" + std::to_string(i) + "]";
    if (!p.is_object()) fail(source, where, "must be an object {\"size\": …, \"ns\": …}");
    if (!p.contains("size") || !p["size"].is_number_unsigned())
      fail(source, where + ".size", "is missing or not a non-negative integer");
    if (!p.contains("ns") || !p["ns"].is_number() || p["ns"].get<double>() < 0 ||
        !std::isfinite(p["ns"].get<double>()))
      fail(source, where + ".ns", "is missing or not a non-negative number");
    const auto size = p["size"].get<std::uint64_t>();
    if (!curve.points.empty() && size <= curve.points.back().first)
      fail(source, where + ".size", "must be larger than the size before it (sizes ascending)");
    curve.points.emplace_back(size, p["ns"].get<double>());
  }
  return curve;
}

nlohmann::json curve_json(const CostCurve& curve) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [size, ns] : curve.points) out.push_back({{"size", size}, {"ns", ns}});
  return out;
}

}  // namespace

double CostCurve::at(std::uint64_t size) const {
  if (points.empty()) return 0;
  if (size <= points.front().first) return points.front().second;
  if (size >= points.back().first) return points.back().second;
  // First point with a size above `size`; the one before it is at or below.
  const auto hi = std::upper_bound(points.begin(), points.end(), size,
                                   [](std::uint64_t s, const auto& p) { return s < p.first; });
  const auto lo = hi - 1;
  // log(0) is undefined: between a point at size 0 and the next, interpolate linearly in size.
  if (lo->first == 0) {
    const double t = static_cast<double>(size) / static_cast<double>(hi->first);
    return lo->second + t * (hi->second - lo->second);
  }
  const double t = std::log(static_cast<double>(size) / static_cast<double>(lo->first)) /
                   std::log(static_cast<double>(hi->first) / static_cast<double>(lo->first));
  return lo->second + t * (hi->second - lo->second);
}

std::optional<CostModel> builtin_cost_model(std::string_view name) {
  if (name == "host") return host_model();
  if (name == "cuda") return cuda_model();
  return std::nullopt;
}

CostModel cost_model_from_json(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object()) throw InputError(source + ": a cost model must be a JSON object");
  CostModel m;
  m.name = j.contains("name") && j["name"].is_string() ? j["name"].get<std::string>() : source;
  m.allocate = curve_from_json(j, "upstream_allocate", source);
  m.deallocate = curve_from_json(j, "upstream_deallocate", source);
  if (!j.contains("hit_ns")) fail(source, "hit_ns", "is missing");
  if (!j["hit_ns"].is_number() || j["hit_ns"].get<double>() < 0 ||
      !std::isfinite(j["hit_ns"].get<double>()))
    fail(source, "hit_ns", "is not a non-negative number");
  m.hit_ns = j["hit_ns"].get<double>();
  return m;
}

CostModel load_cost_model(const std::string& name_or_path) {
  if (std::optional<CostModel> builtin = builtin_cost_model(name_or_path)) return *builtin;
  refuse_directory(name_or_path);
  std::ifstream in(name_or_path);
  if (!in)
    throw InputError(name_or_path + ": cannot read the cost model (built-in models: host, cuda)");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for 1e999
    throw InputError(name_or_path + ": not JSON: " + e.what());
  }
  return cost_model_from_json(j, name_or_path);
}

nlohmann::json cost_model_json(const CostModel& model) {
  return {{"name", model.name},
          {"hit_ns", model.hit_ns},
          {"upstream_allocate", curve_json(model.allocate)},
          {"upstream_deallocate", curve_json(model.deallocate)}};
}

std::optional<Block> ModelledUpstream::allocate(std::uint64_t bytes) {
  time_.upstream_allocate += static_cast<std::uint64_t>(std::llround(model_.allocate.at(bytes)));
  return inner_.allocate(bytes);
}

void ModelledUpstream::deallocate(const Block& block) {
  time_.upstream_deallocate +=
      static_cast<std::uint64_t>(std::llround(model_.deallocate.at(block.capacity)));
  inner_.deallocate(block);
}

}  // namespace alloclab
