#pragma once
// Reading and writing the counts of a report's JSON, shared by the report's own sections
// (report.cpp) and the ones that live beside it (first_failure.cpp).
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "alloclab/format/error.hpp"

namespace alloclab::report_fields {

inline std::uint64_t read_u64(const nlohmann::json& j, const char* key, const std::string& source) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number_unsigned())
    throw InputError(source + ": key '" + key + "' is missing or not a non-negative integer");
  return it->get<std::uint64_t>();
}

// A count or null; absent (an older report) reads as null.
inline std::optional<std::uint64_t> read_optional_u64(const nlohmann::json& j, const char* key,
                                                      const std::string& where) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return read_u64(j, key, where);
}

inline nlohmann::json optional_json(const std::optional<std::uint64_t>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

}  // namespace alloclab::report_fields
