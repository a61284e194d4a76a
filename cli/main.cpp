// alloclab: record, replay and compare memory-allocation strategies.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"

namespace {

// Edits (insertion, deletion, substitution, swap of neighbours) from `a` to `b`: a swap is the
// commonest typo ("replya").
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min(
          {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// Why no command ran, when none was named: CLI11 says only "A subcommand is required".
std::string missing_command(const CLI::App& app, int argc, char** argv) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    names.push_back(sub->get_name());
  std::string known;
  for (const std::string& name : names) known += (known.empty() ? "" : ", ") + name;
  if (argc < 2) return "no command given (commands: " + known + ")";
  const std::string word = argv[1];
  if (word.starts_with("-")) return "unknown option '" + word + "' (commands: " + known + ")";
  std::string closest;
  std::size_t best = 3;  // more edits than this is another word, not a typo
  for (const std::string& name : names)
    if (const std::size_t d = edit_distance(word, name); d < best && d < name.size()) {
      best = d;
      closest = name;
    }
  return "unknown command '" + word + "'" +
         (closest.empty() ? " (commands: " + known + ")" : " (did you mean '" + closest + "'?)");
}

// A usage error as alloclab reports every error (one line, `alloclab: error:`), then the usage
// of the command concerned. Status 2, like any other bad input.
int usage_error(const CLI::App& app, const CLI::ParseError& error, int argc, char** argv) {
  const CLI::App* concerned = &app;
  std::string name = "alloclab";
  for (std::vector<CLI::App*> parsed = app.get_subcommands(); !parsed.empty();
       parsed = concerned->get_subcommands()) {
    concerned = parsed.front();
    name += " " + concerned->get_name();
  }
  std::string message =
      concerned == &app ? missing_command(app, argc, argv) : std::string(error.what());
  std::replace(message.begin(), message.end(), '\n', ' ');
  std::fprintf(stderr, "alloclab: error: %s\n%sRun '%s --help' for more.\n", message.c_str(),
               CLI::Formatter().make_usage(concerned, name).c_str(), name.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"alloclab: which allocation cache, with which limit, for my workload?"};
  app.require_subcommand(1);
  app.set_version_flag("--version", ALLOCLAB_VERSION);
  alloclab::cli::add_all_commands(app);
  alloclab::cli::set_command_line(argc, argv);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version are "errors" with status 0: printed to stdout by CLI11.
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    return usage_error(app, e, argc, argv);
  } catch (const std::exception& e) {
    // Bad input of any kind (a file, a spec, a value) is one clear line and status 2.
    std::fprintf(stderr, "alloclab: error: %s\n", e.what());
    return 2;
  }
  return alloclab::cli::exit_status();
}
