#include "saved_maps.hpp"

#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace alloclab::cuda {

std::string saved_maps_path(const std::string& trace_path) {
  return trace_path + ".maps";
}

std::string saved_maps_line(const SavedMaps& maps) {
  return nlohmann::json{{"first_frame", maps.first_frame}, {"maps", maps.text}}.dump() + "\n";
}

std::vector<SavedMaps> read_saved_maps(const std::string& path,
                                       std::vector<std::string>& warnings) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::vector<SavedMaps> snapshots;
  std::string line;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    const nlohmann::json parsed = nlohmann::json::parse(line, nullptr, false);
    if (!parsed.is_object() || !parsed.contains("first_frame") ||
        !parsed["first_frame"].is_number_unsigned() || !parsed.contains("maps") ||
        !parsed["maps"].is_string()) {
      warnings.push_back(path + ":" + std::to_string(number) + ": not a saved maps line, skipped");
      continue;
    }
    snapshots.push_back(
        {parsed["first_frame"].get<std::size_t>(), parsed["maps"].get<std::string>()});
  }
  return snapshots;
}

}  // namespace alloclab::cuda
