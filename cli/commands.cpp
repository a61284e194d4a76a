#include "commands.hpp"

#include "alloclab/strategies/params.hpp"

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <vector>

#include "alloclab/cli/help_format.hpp"

namespace alloclab::cli {
namespace {

int g_exit_status = 0;
std::string g_command_line;

void print_warnings(const std::vector<std::string>& warnings) {
  for (const std::string& warning : warnings)
    std::fprintf(stderr, "alloclab: warning: %s\n", warning.c_str());
}

}  // namespace

void add_all_commands(CLI::App& app) {
  // Subcommands take their parent's formatter when they are added: set it first.
  app.formatter(std::make_shared<HelpFormatter>());
  add_info_command(app);
  add_convert_command(app);
  add_generate_command(app);
  add_replay_command(app);
  add_strategies_command(app);
  add_sweep_command(app);
  add_merge_command(app);
  add_advise_command(app);
  add_sites_command(app);
  add_record_command(app);
  add_run_command(app);
  add_calibrate_command(app);
  add_gui_command(app);
}

void set_command_line(int argc, char** argv) {
  g_command_line.clear();
  for (int i = 0; i < argc; ++i) {
    if (i) g_command_line += ' ';
    g_command_line += argv[i];
  }
}
const std::string& command_line() {
  return g_command_line;
}

int exit_status() {
  return g_exit_status;
}
void set_exit_status(int status) {
  g_exit_status = status;
}

CLI::Option* add_min_size_option(CLI::App* command, std::uint64_t& target,
                                 const std::string& what) {
  return command
      ->add_option_function<std::string>(
          "--min-size", [&target](const std::string& text) { target = parse_size(text); }, what)
      ->type_name("SIZE");
}

CLI::Validator not_negative() {
  return CLI::Validator(
      [](std::string& text) {
        return text.find('-') == std::string::npos ? std::string()
                                                   : "must not be negative: " + text;
      },
      "NOT_NEGATIVE");
}

std::optional<TraceFormat> from_option(const std::string& from) {
  if (from.empty()) return std::nullopt;
  const std::optional<TraceFormat> chosen = parse_format(from);
  if (!chosen)
    throw std::invalid_argument("unknown format '" + from +
                                "' (accepted: alt, csv, rmm, torch, chrome)");
  return chosen;
}

LoadedTrace load_input(const std::string& path, const std::string& from) {
  LoadedTrace loaded = load_trace(path, from_option(from));
  print_warnings(loaded.trace.warnings);
  return loaded;
}

ResolvedLoad load_replay_input(const std::string& path, const std::string& from,
                               std::uint64_t min_size) {
  ResolveOptions options;
  options.min_size = min_size;
  ResolvedLoad loaded = load_resolved(path, from_option(from), options);
  print_warnings(loaded.summary.warnings);
  return loaded;
}

void print(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
}

}  // namespace alloclab::cli
