// `alloclab merge OUT.json IN.json...`: joins the shard reports of one sweep (or plain replay
// reports of one trace) into one report (merge.hpp has the rules).
#include <CLI/CLI.hpp>

#include "alloclab/format/output_files.hpp"
#include "alloclab/replay/merge.hpp"
#include "alloclab/replay/report.hpp"
#include "alloclab/replay/report_table.hpp"
#include "commands.hpp"

namespace alloclab::cli {
namespace {

struct MergeCommand {
  std::string out;
  std::vector<std::string> inputs;
  bool allow_partial = false;
  bool force = false;
};

void run_merge(const MergeCommand& cmd, const std::string& command_line) {
  // The output comes first, so `merge a.json b.json` would silently overwrite a shard.
  OutputPlan outputs(cmd.force);
  for (const std::string& path : cmd.inputs) outputs.input(path);
  outputs.output("OUT", cmd.out).check();
  std::vector<MergeInput> inputs;
  for (const std::string& path : cmd.inputs)
    inputs.push_back(MergeInput{path, read_report_file(path)});
  MergeOptions options;
  options.allow_partial = cmd.allow_partial;
  options.command_line = command_line;
  const nlohmann::json merged = merge_reports(inputs, options);

  print(merged_report_text(merged, cmd.out));
  write_json_file(cmd.out, merged);
}

}  // namespace

void add_merge_command(CLI::App& app) {
  auto cmd = std::make_shared<MergeCommand>();
  CLI::App* sub = app.add_subcommand(
      "merge", "Join the shard reports of one sweep (or replay reports of one trace) into one");
  sub->add_option("out", cmd->out, "merged report to write (JSON)")->required();
  sub->add_option("inputs", cmd->inputs, "reports to merge (JSON)")->required();
  sub->add_flag("--allow-partial", cmd->allow_partial,
                "write the merged report even when sweep points are missing (it says "
                "\"partial\": true)");
  sub->add_flag("-f,--force", cmd->force, "replace OUT if it exists");
  sub->callback([cmd] { run_merge(*cmd, command_line()); });
}

}  // namespace alloclab::cli
