// `alloclab record -- CMD ARGS...`: the options; alloclab_launch runs the program.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "alloclab/launch/record.hpp"
#include "commands.hpp"

namespace alloclab::cli {

void add_record_command(CLI::App& app) {
  auto options = std::make_shared<launch::RecordOptions>();
  CLI::App* cmd = app.add_subcommand(
      "record", "Run a program and record its allocations (record [-o FILE.alt] -- CMD ARGS...)");
  cmd->add_option("-o,--output", options->output,
                  "trace file to create (default: alloclab.CMD.PID.alt here)")
      ->type_name("FILE");
  cmd->add_flag("-f,--force", options->force,
                "replace the -o file if it exists (it is removed before the program runs)");
  cmd->add_option("--min-size", options->min_size,
                  "record only blocks of at least this many usable bytes")
      ->check(not_negative())
      ->type_name("BYTES");
  cmd->add_option(
         "--stacks", options->stacks,
         "record up to N frames (at most 64) of the call stack of every allocation (slow: ~1 us "
         "each; with --cuda: of each CUDA allocation's host call, named after the program ends)")
      ->check(CLI::Range(0, 64))
      ->type_name("N");
  cmd->add_option("--time-resolution", options->time_resolution,
                  "round timestamps down to this many nanoseconds, a power of two from 1 to 2^30 "
                  "(default 64)")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 30) &
              CLI::Validator(
                  [](const std::string& text) {
                    const std::uint64_t v = std::strtoull(text.c_str(), nullptr, 10);
                    return v != 0 && (v & (v - 1)) == 0 ? std::string()
                                                        : std::string("not a power of two");
                  },
                  "POWER_OF_TWO"))
      ->type_name("NS");
  cmd->add_flag("--follow-fork", options->follow_fork,
                "trace forked children too, each into <output stem>.<pid>.alt (with --cuda: "
                "also every other process that initialises CUDA, <stem>.<pid>.cuda.alt)");
  cmd->add_flag("--follow-exec", options->follow_exec,
                "trace programs started by exec too, each into <output stem>.<pid>.alt (with "
                "--cuda: as --follow-fork)");
  cmd->add_flag("--cuda", options->cuda.cuda,
                "record CUDA allocations (CUPTI injection; see docs/cuda-tracer.md)");
  cmd->add_flag("--cpu", options->cuda.cpu,
                "with --cuda: record host allocations into the same trace too");
  cmd->add_option("--run-range", options->cuda.run_range,
                  "with --cuda: each NVTX range whose name matches (a glob) is a run")
      ->type_name("GLOB");
  cmd->add_option("command", options->command, "the program and its arguments, after --")
      ->required();
  cmd->callback([options] { set_exit_status(launch::record(*options)); });
}

}  // namespace alloclab::cli
