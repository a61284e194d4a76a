// `alloclab calibrate --upstream NAME [-o cost.json] [--touch]`: measures an allocator's latency
// by size on this machine and writes the cost model `replay --cost-model FILE` reads.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "alloclab/format/output_files.hpp"
#include "alloclab/replay/calibrate.hpp"
#include "alloclab/replay/report.hpp"
#include "alloclab/replay/report_table.hpp"
#include "commands.hpp"

namespace alloclab::cli {
namespace {

struct CalibrateCommand {
  std::string upstream = "host-malloc";
  std::string out;
  bool touch = false;
  double budget_ms = 50;
  bool force = false;
};

void run_calibrate(const CalibrateCommand& cmd) {
  if (!(cmd.budget_ms > 0 && cmd.budget_ms <= 10'000))
    throw std::invalid_argument("--budget-ms must be in (0, 10000]");
  OutputPlan(cmd.force).output("-o", cmd.out).check();
  CalibrateOptions options;
  options.upstream = cmd.upstream;
  options.touch = cmd.touch;
  options.budget_seconds_per_size = cmd.budget_ms / 1000.0;
  const Calibration c = calibrate(options);
  print(calibration_text(c));
  if (!cmd.out.empty()) {
    write_json_file(cmd.out, calibration_json(c));
    std::printf("wrote %s (use: alloclab replay TRACE -s SPEC --cost-model %s)\n", cmd.out.c_str(),
                cmd.out.c_str());
  }
}

}  // namespace

void add_calibrate_command(CLI::App& app) {
  auto cmd = std::make_shared<CalibrateCommand>();
  CLI::App* sub = app.add_subcommand(
      "calibrate",
      "Measure an allocator's latency by size and write a cost model for --cost-model");
  sub->add_option("--upstream", cmd->upstream,
                  "host-malloc (default), host-mmap, host-jemalloc, host-mimalloc, cuda, "
                  "cuda-async[:release_threshold=SIZE] or cuda-host")
      ->type_name("NAME");
  sub->add_option("-o,--output", cmd->out, "write the cost-model JSON here")->type_name("FILE");
  sub->add_flag("-f,--force", cmd->force, "replace the -o file if it exists");
  sub->add_flag("--touch", cmd->touch,
                "write every 4 KiB page of each block (counted in allocate)");
  sub->add_option("--budget-ms", cmd->budget_ms,
                  "time spent per size, in milliseconds (default 50; 12 sizes, 64 B to 256 MiB)")
      ->type_name("MS");
  sub->callback([cmd] { run_calibrate(*cmd); });
}

}  // namespace alloclab::cli
