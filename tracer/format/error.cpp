#include "alloclab/trace/error.hpp"

namespace alloclab {

void throw_at_line(const std::string& file, std::uint64_t line, const std::string& what) {
  throw InputError(file + ":" + std::to_string(line) + ": " + what);
}

void throw_at_offset(const std::string& file, std::uint64_t offset, std::int64_t chunk,
                     const std::string& what) {
  std::string where = file + "@" + std::to_string(offset);
  where += chunk < 0 ? ", header" : ", chunk " + std::to_string(chunk);
  throw InputError(where + ": " + what);
}

}  // namespace alloclab
