// `alloclab generate`: deterministic synthetic traces for benchmarks, demos and tests.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "alloclab/format/formats.hpp"
#include "alloclab/format/output_files.hpp"
#include "alloclab/format/synthetic.hpp"
#include "alloclab/format/units.hpp"
#include "commands.hpp"

namespace alloclab::cli {
namespace {

struct GenerateOptions {
  std::string shape = "cnn";
  std::string output;
  std::uint64_t runs = 10;
  std::uint64_t seed = 1;
  std::uint64_t events = 0;
  std::uint32_t stacks = 0;
  std::uint32_t stack_depth = 16;
  bool force = false;
};

void run_generate(const GenerateOptions& options) {
  SyntheticOptions synthetic;
  const auto shape = parse_synthetic_shape(options.shape);
  if (!shape)
    throw std::invalid_argument("unknown shape '" + options.shape +
                                "' (accepted: cnn, transformer, random)");
  synthetic.shape = *shape;
  OutputPlan(options.force).output("-o", options.output).check();
  synthetic.runs = options.runs;
  synthetic.seed = options.seed;
  synthetic.min_events = options.events;
  synthetic.stacks = options.stacks;
  synthetic.stack_depth = options.stack_depth;
  const Trace trace = generate_synthetic(synthetic);
  const TraceFormat format = output_format_from_path(options.output);
  write_atomically(options.output,
                   [&](const std::string& temporary) { write_trace(trace, temporary, format); });
  std::fprintf(stderr, "alloclab: wrote %s to %s\n", counted(trace.size(), "event").c_str(),
               options.output.c_str());
}

}  // namespace

void add_generate_command(CLI::App& app) {
  auto options = std::make_shared<GenerateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "generate", "Write a deterministic synthetic trace shaped like a workload");
  cmd->add_option("-o,--output", options->output, "output file (.alt, .csv, .csv.gz, .json)")
      ->required()
      ->type_name("FILE");
  cmd->add_flag("-f,--force", options->force, "replace the output file if it exists");
  cmd->add_option("--shape", options->shape, "cnn, transformer or random")
      ->capture_default_str()
      ->type_name("SHAPE");
  cmd->add_option("--runs", options->runs, "number of runs (forward passes)")
      ->check(not_negative())
      ->capture_default_str()
      ->type_name("N");
  cmd->add_option("--events", options->events, "generate at least this many events instead")
      ->check(not_negative())
      ->type_name("N");
  cmd->add_option("--stacks", options->stacks,
                  "give the allocations call stacks: this many distinct ones (at most 1000000)")
      ->check(not_negative())
      ->check(CLI::Range(0, 1'000'000))
      ->type_name("N");
  cmd->add_option("--stack-depth", options->stack_depth, "frames per stack (1 to 64)")
      ->check(not_negative())
      ->check(CLI::Range(1, 64))
      ->capture_default_str()
      ->type_name("N");
  cmd->add_option("--seed", options->seed, "random seed")
      ->check(not_negative())
      ->capture_default_str()
      ->type_name("N");
  cmd->callback([options] { run_generate(*options); });
}

}  // namespace alloclab::cli
