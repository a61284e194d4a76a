// `alloclab strategies`: what can be passed to -s.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "alloclab/strategies/registry.hpp"
#include "commands.hpp"

namespace alloclab::cli {

void add_strategies_command(CLI::App& app) {
  CLI::App* sub =
      app.add_subcommand("strategies", "List the built-in strategies and their parameters");
  sub->callback([] {
    for (const StrategyInfo& info : builtin_strategies()) {
      std::string keys;
      for (const std::string& key : info.keys) keys += (keys.empty() ? "" : ", ") + key;
      std::printf("%-14s %s\n%-14s parameters: %s\n", info.name.c_str(), info.summary.c_str(), "",
                  keys.empty() ? "none" : keys.c_str());
    }
    std::printf(
        "\nSpecs look like name:key=value,... e.g. fifo-shrink:max=64MiB,match=best-fit\n"
        "Sizes take KB MB GB TB (decimal) or KiB MiB GiB TiB (binary).\n");
  });
}

}  // namespace alloclab::cli
