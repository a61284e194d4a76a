// alloclab: record, replay and compare memory-allocation strategies.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>

#include "cli_common.hpp"

int main(int argc, char** argv) {
  CLI::App app{"alloclab: which allocation cache, with which limit, for my workload?"};
  app.require_subcommand(1);
  app.set_version_flag("--version", ALLOCLAB_VERSION);
  alloclab::cli::add_all_commands(app);
  alloclab::cli::set_command_line(argc, argv);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    // Bad input of any kind (a file, a spec, a value) is one clear line and status 2.
    std::fprintf(stderr, "alloclab: error: %s\n", e.what());
    return 2;
  }
  return alloclab::cli::exit_status();
}
