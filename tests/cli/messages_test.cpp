// What the CLI prints besides its numbers: notes, tables, plurals and help text, read as a user
// reads them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "cli_test_util.hpp"

namespace alloclab::test {
namespace {

std::string tiny() {
  return std::string(ALLOCLAB_TRACES_DIR) + "/tiny.csv";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("alloclab-messages-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

// The cells of a table line: the runs of text between gaps of two or more spaces (a cell such
// as "2.00 GiB" or "hit rate" holds single spaces only).
std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  std::size_t i = line.find_first_not_of(' ');
  while (i != std::string::npos && i < line.size()) {
    std::size_t end = line.find("  ", i);
    if (end == std::string::npos) end = line.size();
    out.push_back(line.substr(i, end - i));
    i = line.find_first_not_of(' ', end);
  }
  return out;
}

// The lines of `output` from the one whose text starts with `header` to the first empty one.
std::vector<std::string> table_at(const std::string& output, const std::string& header) {
  std::vector<std::string> lines;
  std::istringstream in(output);
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    const std::size_t text = line.find_first_not_of(' ');
    if (!inside && text != std::string::npos && line.compare(text, header.size(), header) == 0)
      inside = true;
    if (!inside) continue;
    if (line.empty()) break;
    lines.push_back(line);
  }
  return lines;
}

// Every line of the table that starts with `header` has `columns` cells: no two columns touch
// (one space between them would join two cells), and `rows` rows follow the header.
void expect_columns_apart(const std::string& output, const std::string& header, std::size_t columns,
                          std::size_t rows) {
  const std::vector<std::string> table = table_at(output, header);
  ASSERT_EQ(table.size(), rows + 1) << "table '" << header << "' in\n" << output;
  for (const std::string& line : table)
    EXPECT_EQ(cells(line).size(), columns) << "'" << line << "' in\n" << output;
}

// 1,030 blocks of distinct sizes just over 2 MiB, each freed before the next: `exact` caches
// them all, so it reserves ~2 GiB for a peak of ~2 MiB live, and the ratio fills "1025.99x".
std::string wide_ratio_trace() {
  const std::string path = temp_path("wide-ratio.csv");
  std::ofstream out(path);
  out << "time_ns,thread,action,address,size\n";
  for (int i = 0; i < 1030; ++i) {
    const std::uint64_t address = 0x100000000ull + static_cast<std::uint64_t>(i) * 0x400000;
    out << 10 * i << ",1,alloc,0x" << std::hex << address << std::dec << ","
        << (2ull << 20) + 16ull * static_cast<std::uint64_t>(i) << "\n";
    out << 10 * i + 5 << ",1,free,0x" << std::hex << address << std::dec << ",\n";
  }
  return path;
}

TEST(Messages, table_columns_are_two_spaces_apart_in_every_command) {
  const std::string trace = wide_ratio_trace();
  const std::string report = temp_path("wide.json"), merged = temp_path("merged.json");
  std::filesystem::remove(merged);
  const CliResult replay = run_cli("replay " + trace + " -s exact -s passthrough --json " + report);
  ASSERT_EQ(replay.status, 0) << replay.output;
  EXPECT_TRUE(contains(replay.output, "2.02 GiB")) << replay.output;
  EXPECT_TRUE(contains(replay.output, "1025.99x")) << replay.output;
  expect_columns_apart(replay.output, "strategy", 11, 2);
  const CliResult merge = run_cli("merge " + merged + " " + report);
  ASSERT_EQ(merge.status, 0) << merge.output;
  expect_columns_apart(merge.output, "strategy", 11, 2);

  const CliResult real = run_cli("replay " + trace + " -s exact --upstream host-malloc");
  ASSERT_EQ(real.status, 0) << real.output;
  expect_columns_apart(real.output, "strategy", 13, 1);

  const CliResult sweep = run_cli("sweep " + trace + " -s 'fifo-shrink:max={1GiB..4GiB:x2}'");
  ASSERT_EQ(sweep.status, 0) << sweep.output;
  expect_columns_apart(sweep.output, "point", 6, 3);

  const CliResult advise =
      run_cli("advise " + std::string(ALLOCLAB_TRACES_DIR) + "/cnn-inference.alt");
  ASSERT_EQ(advise.status, 0) << advise.output;
  expect_columns_apart(advise.output, "family", 9, 2);

  const CliResult info = run_cli("info " + std::string(ALLOCLAB_TRACES_DIR) + "/cnn-inference.alt");
  ASSERT_EQ(info.status, 0) << info.output;
  expect_columns_apart(info.output, "# ", 6, 20);
  expect_columns_apart(info.output, "size  count", 3, 10);

  const CliResult calibrate = run_cli("calibrate --budget-ms 1");
  ASSERT_EQ(calibrate.status, 0) << calibrate.output;
  // 12 sizes, 64 B to 256 MiB; a size the machine cannot allocate says "failed" in one cell.
  const std::vector<std::string> sizes = table_at(calibrate.output, "size");
  ASSERT_GE(sizes.size(), 13u) << calibrate.output;
  for (std::size_t k = 0; k < 13; ++k)
    EXPECT_EQ(cells(sizes[k]).size(), contains(sizes[k], "failed") ? 2u : 6u) << sizes[k];
}

// "saved -51.67 KiB (-1%)": a recommendation that reserves more than the unbounded cache (here,
// best-fit at a 90% target) saves nothing, and the table says so in words.
TEST(Messages, advise_says_plainly_when_a_recommendation_saves_nothing) {
  const CliResult r =
      run_cli("advise " + std::string(ALLOCLAB_TRACES_DIR) + "/cnn-inference.alt --target 0.9");
  ASSERT_EQ(r.status, 0) << r.output;
  const std::vector<std::string> table = table_at(r.output, "family");
  ASSERT_EQ(table.size(), 3u) << r.output;
  EXPECT_EQ(cells(table[1])[7], "nothing") << r.output;  // exact: the same peak
  EXPECT_TRUE(contains(cells(table[2])[7], "none (")) << r.output;
  EXPECT_TRUE(contains(cells(table[2])[7], " more)")) << r.output;
  EXPECT_FALSE(contains(r.output, "-0%")) << r.output;
  EXPECT_FALSE(contains(r.output, " -")) << r.output;

  // A saving under 1% is not "(0%)", and the summary gives it in bytes, not as two equal sizes.
  const CliResult small = run_cli("advise " + std::string(ALLOCLAB_TRACES_DIR) +
                                  "/torch-cnn-training.alt --target 0.999");
  ASSERT_EQ(small.status, 0) << small.output;
  const std::vector<std::string> rows = table_at(small.output, "family");
  ASSERT_EQ(rows.size(), 3u) << small.output;
  EXPECT_EQ(cells(rows[2])[7], "56 B (<1%)") << small.output;
  EXPECT_TRUE(
      contains(small.output, "reserves 45.7 MiB at peak, 56 B less than best-fit (45.7 MiB)."))
      << small.output;
}

// "converted 1 events", "1 points in all": one of a thing is singular.
TEST(Messages, a_count_of_one_takes_the_singular) {
  const std::string csv = temp_path("one.csv");
  std::ofstream(csv) << "time_ns,thread,action,address,size\n100,1,alloc,0x1000,64\n";
  const std::string alt = temp_path("one.alt");
  std::filesystem::remove(alt);
  const CliResult convert = run_cli("convert " + csv + " " + alt);
  ASSERT_EQ(convert.status, 0) << convert.output;
  EXPECT_TRUE(contains(convert.output, "alloclab: converted 1 event: ")) << convert.output;
  const CliResult sweep = run_cli("sweep " + csv + " -s 'fifo-shrink:max={1MiB}'");
  ASSERT_EQ(sweep.status, 0) << sweep.output;
  EXPECT_TRUE(contains(sweep.output, "1 point in all")) << sweep.output;
  const CliResult two = run_cli("sweep " + csv + " -s 'fifo-shrink:max={1MiB,2MiB}'");
  EXPECT_TRUE(contains(two.output, "2 points in all")) << two.output;
  // One request that the upstream cannot satisfy.
  const CliResult failed = run_cli("replay " + csv + " -s exact --memory-limit 32");
  EXPECT_TRUE(contains(failed.output, "^ 1 request failed (upstream out of memory)"))
      << failed.output;
}

// `info --help` showed `--stacks{10} :NOT_NEGATIVE`, `record --help` `UINT:(UINT in [1 -
// 1073741824]) AND (POWER_OF_TWO)`: CLI11's names for its types and checks. Every command's help
// names a value by what it is (N, FILE, SPEC) and says a default in words.
TEST(Messages, help_text_names_values_in_words) {
  for (const std::string command : {"info", "convert", "generate", "replay", "strategies", "sweep",
                                    "merge", "advise", "record", "calibrate", "gui"}) {
    const CliResult r = run_cli(command + " --help");
    if (command == "gui" && contains(r.output, "the GUI was not built")) continue;
    ASSERT_EQ(r.status, 0) << command << "\n" << r.output;
    for (const char* internal : {"NOT_NEGATIVE", "UINT", "INT in", "POWER_OF_TWO", " TEXT", "FLOAT",
                                 "REQUIRED", "{10}", "=cnn", ":("})
      EXPECT_FALSE(contains(r.output, internal)) << command << ": " << internal << "\n" << r.output;
  }
  EXPECT_TRUE(contains(run_cli("info --help").output, "  --stacks[=N]  "));
  const std::string replay = run_cli("replay --help").output;
  for (const char* plain : {"  -j,--jobs N  ", "  --json FILE  ",
                            "  -s,--strategy SPEC ... (required)", "  trace (required)  "})
    EXPECT_TRUE(contains(replay, plain)) << plain << "\n" << replay;
  const std::string generate = run_cli("generate --help").output;
  EXPECT_TRUE(contains(generate, "cnn, transformer or random (default cnn)")) << generate;
  EXPECT_TRUE(contains(generate, "number of runs (forward passes; default 10)")) << generate;
}

// The note says a -j the user gave is ignored; with no -j (the default, all cores) there is
// nothing to ignore, and -j 1 is what happens anyway.
TEST(Messages, a_real_replay_notes_an_ignored_j_only_when_one_was_given) {
  const std::string replay = "replay " + tiny() + " -s exact -s passthrough --upstream host-malloc";
  const std::string note = "run one at a time (-j ignored)";
  for (const std::string& args : {replay, replay + " -j 1", replay + " --jobs=1"}) {
    const CliResult r = run_cli(args);
    ASSERT_EQ(r.status, 0) << args << "\n" << r.output;
    EXPECT_FALSE(contains(r.output, note)) << args << "\n" << r.output;
  }
  for (const std::string& args : {replay + " -j 4", replay + " -j 0"}) {
    const CliResult r = run_cli(args);
    ASSERT_EQ(r.status, 0) << args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "alloclab: note: replays on host-malloc " + note))
        << args << "\n"
        << r.output;
  }
}

}  // namespace
}  // namespace alloclab::test
