#pragma once
// Checks shared by the subcommands' options.
#include <CLI/CLI.hpp>

#include <string>

namespace alloclab::cli {

// CLI11 (2.1) reads "-3" into an unsigned option as 2^64 - 3: a count, a size or a seed would
// then ask for the impossible (generate --runs -3 allocated until the kernel killed it).
inline CLI::Validator not_negative() {
  return CLI::Validator(
      [](std::string& text) {
        return text.find('-') == std::string::npos ? std::string()
                                                   : "must not be negative: " + text;
      },
      "NOT_NEGATIVE");
}

}  // namespace alloclab::cli
