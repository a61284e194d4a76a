// `alloclab sites`: a recorded program whose allocation sites rank known ways (programs/
// sites_program.c) comes out ranked so, as text, JSON and folded stacks; bad inputs and options
// are one line and status 2.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>
#include <nlohmann/json.hpp>

#include "tests/cli/cli_test_util.hpp"
#include "tests/preload/sanitizer_skips.hpp"

namespace alloclab::test {
namespace {

namespace fs = std::filesystem;

class SitesCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("alloclab-sites-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    record_ = run_cli("record --stacks 16 -o " + trace() + " -- " + SITES_PROGRAM);
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  void SetUp() override {
    ALLOCLAB_SKIP_UNDER_ASAN();
    ALLOCLAB_SKIP_UNDER_TSAN("the recorded program is not built with ThreadSanitizer");
    ASSERT_EQ(record_.status, 0) << record_.output;
  }
  static std::string trace() { return (dir_ / "sites.alt").string(); }
  static std::string file(const std::string& name) { return (dir_ / name).string(); }
  static std::string read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  // The name of the first site of the text listing ("1. NAME (module)").
  static std::string first_site(const std::string& text) {
    const auto at = text.find("\n1. ");
    if (at == std::string::npos) return {};
    const auto end = text.find(' ', at + 4);
    return text.substr(at + 4, end - at - 4);
  }

  static inline fs::path dir_;
  static inline CliResult record_;
};

TEST_F(SitesCli, ranks_the_site_that_holds_most_at_the_peak_first) {
  const CliResult r = run_cli("sites " + trace());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(first_site(r.output), "sites_holder") << r.output;
  EXPECT_NE(r.output.find("live 50 allocations, 3.12 MiB"), std::string::npos) << r.output;
}

TEST_F(SitesCli, ranks_ever_new_sizes_first_for_misses_under_exact) {
  const CliResult r = run_cli("sites " + trace() + " -s exact --sort misses");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(first_site(r.output), "sites_new_sizes") << r.output;
  EXPECT_NE(r.output.find("exact: 300 misses"), std::string::npos) << r.output;
  // One size over and over: a single miss.
  const auto same = r.output.find("sites_same_size");
  ASSERT_NE(same, std::string::npos);
  EXPECT_EQ(r.output.compare(r.output.find("exact: ", same), 14, "exact: 1 miss,"), 0) << r.output;
}

TEST_F(SitesCli, ranks_requests_served_from_larger_blocks_first_for_best_fit_slack) {
  const CliResult r = run_cli("sites " + trace() + " -s best-fit -s exact --sort slack");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(first_site(r.output), "sites_odd_sizes") << r.output;
}

TEST_F(SitesCli, json_names_the_same_sites_and_sums_to_the_replay) {
  const std::string out = file("misses.json");
  const CliResult r =
      run_cli("sites " + trace() + " -s exact -s best-fit --sort misses --top 3 --json " + out);
  ASSERT_EQ(r.status, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(read(out));
  ASSERT_EQ(j.at("sites").size(), 3u);
  EXPECT_EQ(j["sites"][0]["frame"]["function"], "sites_new_sizes");
  EXPECT_EQ(j["sites"][0]["strategies"][0]["misses"], 300);
  EXPECT_EQ(j["sorted_by"], "misses");
  EXPECT_EQ(j["strategies"][1]["strategy"], "best-fit");
  const CliResult slack =
      run_cli("sites " + trace() + " -s best-fit --sort slack --json " + file("slack.json"));
  ASSERT_EQ(slack.status, 0) << slack.output;
  const nlohmann::json s = nlohmann::json::parse(read(file("slack.json")));
  EXPECT_EQ(s["sites"][0]["frame"]["function"], "sites_odd_sizes");
  const CliResult live = run_cli("sites " + trace() + " --json " + file("live.json"));
  ASSERT_EQ(live.status, 0) << live.output;
  const nlohmann::json l = nlohmann::json::parse(read(file("live.json")));
  EXPECT_EQ(l["sites"][0]["frame"]["function"], "sites_holder");
  EXPECT_EQ(l["sites"][0]["live_bytes"], 50 * 64 * 1024);
  // The stacks' misses add up to the replay's own count.
  std::uint64_t misses = 0;
  const CliResult all =
      run_cli("sites " + trace() + " -s exact --top 1000000 --json " + file("all.json"));
  ASSERT_EQ(all.status, 0) << all.output;
  const nlohmann::json a = nlohmann::json::parse(read(file("all.json")));
  for (const auto& site : a["sites"])
    misses += site["strategies"][0]["misses"].get<std::uint64_t>();
  EXPECT_EQ(misses, a["strategies"][0]["metrics"]["misses"].get<std::uint64_t>());
}

TEST_F(SitesCli, folded_stacks_carry_the_chosen_metric) {
  const std::string out = file("misses.folded");
  const CliResult r =
      run_cli("sites " + trace() + " -s exact --to folded --metric misses -o " + out);
  ASSERT_EQ(r.status, 0) << r.output;
  std::ifstream in(out);
  std::string line, top_line;
  std::uint64_t top = 0;
  while (std::getline(in, line)) {
    const auto space = line.rfind(' ');
    ASSERT_NE(space, std::string::npos) << line;
    const std::uint64_t value = std::stoull(line.substr(space + 1));
    EXPECT_GT(value, 0u) << line;
    if (value > top) {
      top = value;
      top_line = line;
    }
  }
  EXPECT_EQ(top, 300u);
  // Root first, the allocating function last.
  EXPECT_NE(top_line.find("main (sites_program);sites_new_sizes (sites_program) 300"),
            std::string::npos)
      << top_line;
  // To standard output without -o.
  const CliResult stdout_run = run_cli("sites " + trace() + " --to folded --metric allocations");
  ASSERT_EQ(stdout_run.status, 0) << stdout_run.output;
  EXPECT_NE(stdout_run.output.find("sites_same_size (sites_program) 400\n"), std::string::npos)
      << stdout_run.output;
}

TEST_F(SitesCli, live_at_a_time_before_the_holder_ran_holds_nothing_of_it) {
  const CliResult r = run_cli("sites " + trace() + " --at 0 --json " + file("start.json"));
  ASSERT_EQ(r.status, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(read(file("start.json")));
  for (const auto& site : j["sites"])
    if (site["frame"].is_object() && site["frame"]["function"] == "sites_holder") {
      EXPECT_EQ(site["live_bytes"], 0);
    }
  EXPECT_LT(j["live_bytes"].get<std::uint64_t>(), 64u * 1024);
}

TEST_F(SitesCli, bad_options_are_one_line_and_status_2) {
  for (const std::string args :
       {" --at yesterday", " --at 5", " --sort hits", " --sort misses", " -s exact --sort hits",
        " --to flame", " --to folded --metric nope", " --metric live", " -s nosuch"}) {
    const CliResult r = run_cli("sites " + trace() + args);
    EXPECT_EQ(r.status, 2) << args << ": " << r.output;
    EXPECT_EQ(r.output.rfind("alloclab: error: ", 0), 0u) << args << ": " << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << args << ": " << r.output;
  }
}

TEST_F(SitesCli, outputs_never_replace_the_input_or_an_existing_file) {
  const std::string existing = file("existing.json");
  std::ofstream(existing) << "keep";
  const CliResult r = run_cli("sites " + trace() + " --json " + existing);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_EQ(read(existing), "keep");
  const CliResult forced = run_cli("sites " + trace() + " --json " + existing + " --force");
  EXPECT_EQ(forced.status, 0) << forced.output;
  const CliResult input = run_cli("sites " + trace() + " --to folded -o " + trace() + " -f");
  EXPECT_EQ(input.status, 2) << input.output;
}

TEST_F(SitesCli, replay_sites_lists_the_stacks_with_the_most_misses_per_strategy) {
  const std::string out = file("replay.json");
  const CliResult r =
      run_cli("replay " + trace() + " -s exact -s best-fit --sites 2 --json " + out);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("stacks with the most misses under best-fit"), std::string::npos)
      << r.output;
  const nlohmann::json j = nlohmann::json::parse(read(out));
  ASSERT_EQ(j["results"].size(), 2u);
  for (const auto& result : j["results"]) {
    ASSERT_EQ(result["sites"].size(), 2u) << result;
    EXPECT_EQ(result["sites"][0]["frames"][0]["function"], "sites_new_sizes");
    EXPECT_EQ(result["sites"][0]["misses"], 300);
    EXPECT_GE(result["sites"][0]["misses"], result["sites"][1]["misses"]);
  }
  // A report with sites merges like any other: the sites are carried through.
  const std::string merged = file("merged.json");
  const CliResult m = run_cli("merge " + merged + " " + out);
  ASSERT_EQ(m.status, 0) << m.output;
  EXPECT_EQ(nlohmann::json::parse(read(merged))["results"][0]["sites"], j["results"][0]["sites"]);
  // Without --sites the report has none.
  const CliResult plain = run_cli("replay " + trace() + " -s exact --json " + file("plain.json"));
  ASSERT_EQ(plain.status, 0) << plain.output;
  EXPECT_FALSE(nlohmann::json::parse(read(file("plain.json")))["results"][0].contains("sites"));
  const CliResult real =
      run_cli("replay " + trace() + " -s exact --sites 2 --upstream host-malloc");
  EXPECT_EQ(real.status, 2) << real.output;
  EXPECT_NE(real.output.find("--sites works in simulation"), std::string::npos) << real.output;
}

TEST(SitesCliInputs, a_missing_or_damaged_trace_is_one_line_and_status_2) {
  const CliResult missing = run_cli("sites /nonexistent/trace.alt");
  EXPECT_EQ(missing.status, 2) << missing.output;
  EXPECT_NE(missing.output.find("alloclab: error: "), std::string::npos) << missing.output;
  EXPECT_NE(missing.output.find("/nonexistent/trace.alt"), std::string::npos) << missing.output;
  const std::string damaged = (fs::temp_directory_path() /
                               ("alloclab-sites-damaged-" + std::to_string(::getpid()) + ".alt"))
                                  .string();
  {
    std::ofstream out(damaged, std::ios::binary);
    out << "ALT\x01 this is not a trace at all";
  }
  const CliResult r = run_cli("sites " + damaged);
  fs::remove(damaged);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_EQ(r.output.rfind("alloclab: error: ", 0), 0u) << r.output;
}

TEST(SitesCliInputs, a_trace_without_stacks_says_how_to_record_them) {
  const std::string cnn = std::string(ALLOCLAB_TRACES_DIR) + "/cnn-inference.alt";
  const CliResult text = run_cli("sites " + cnn + " -s exact");
  EXPECT_EQ(text.status, 0) << text.output;
  EXPECT_NE(text.output.find("has no call stacks (record them with `alloclab record --stacks N`)"),
            std::string::npos)
      << text.output;
  const CliResult folded = run_cli("sites " + cnn + " --to folded");
  EXPECT_EQ(folded.status, 2) << folded.output;
  EXPECT_EQ(folded.output.rfind("alloclab: error: --to folded: ", 0), 0u) << folded.output;
}

// traces/torch-cnn-training-stacks.alt: PyTorch training steps recorded with `record --stacks 16`
// and trimmed to the runs. Real call stacks through libc10, libtorch and the interpreter, named
// offline from the recording machine's libraries: sites must be named functions, not addresses.
class SitesCliBundled : public ::testing::Test {
 protected:
  static std::string trace() {
    return std::string(ALLOCLAB_TRACES_DIR) + "/torch-cnn-training-stacks.alt";
  }
  // `info --json` prints its JSON; `sites --json FILE` writes it to FILE.
  static nlohmann::json info_json(const std::string& args) {
    const CliResult r =
        run_shell("(" + std::string(ALLOCLAB_CLI) + " info --json " + args + " 2>/dev/null)");
    EXPECT_EQ(r.status, 0) << r.output;
    return nlohmann::json::parse(r.output, nullptr, false);
  }
  static nlohmann::json sites_json(const std::string& args) {
    const std::string out = (fs::temp_directory_path() /
                             ("alloclab-bundled-stacks-" + std::to_string(::getpid()) + ".json"))
                                .string();
    const CliResult r = run_cli("sites " + args + " --json " + out);
    EXPECT_EQ(r.status, 0) << r.output;
    std::ifstream in(out);
    nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    fs::remove(out);
    return j;
  }
  static bool in_module(const nlohmann::json& frame, const std::string& library) {
    return frame.at("module").get<std::string>().find(library) != std::string::npos;
  }
};

TEST_F(SitesCliBundled, the_pytorch_trace_ranks_named_sites_from_the_torch_libraries) {
  const CliResult text = run_cli("sites " + trace() + " -s exact --top 5");
  ASSERT_EQ(text.status, 0) << text.output;
  // Tensor storage: what holds most at the peak.
  EXPECT_NE(text.output.find("\n1. c10::alloc_cpu(unsigned long) (libc10.so"), std::string::npos)
      << text.output;

  const nlohmann::json j = sites_json(trace() + " -s exact --top 5");
  ASSERT_TRUE(j.is_object());
  EXPECT_TRUE(j["has_stacks"].get<bool>());
  ASSERT_EQ(j["sites"].size(), 5u);
  const nlohmann::json& top = j["sites"][0];
  EXPECT_EQ(top["frame"]["function"], "c10::alloc_cpu(unsigned long)");
  EXPECT_TRUE(in_module(top["frame"], "libc10.so"));
  EXPECT_GT(top["live_bytes"].get<std::uint64_t>(), 1u << 20);
  // Its callers are PyTorch's operators, by name, in libtorch_cpu.
  bool named_operator = false;
  for (const auto& chain : top["stacks"])
    for (const auto& frame : chain["frames"])
      if (in_module(frame, "libtorch_cpu.so") &&
          frame["function"].get<std::string>().rfind("at::", 0) == 0)
        named_operator = true;
  EXPECT_TRUE(named_operator) << top.dump(1);
  // Most sites are named functions: allocator entry points of C++ (operator new) and C.
  std::size_t named = 0;
  for (const auto& site : j["sites"])
    named += !site["frame"]["function"].get<std::string>().empty();
  EXPECT_GE(named, 3u) << j["sites"].dump(1);
}

TEST_F(SitesCliBundled, the_pytorch_trace_sites_add_up_to_the_replay) {
  const nlohmann::json j = sites_json(trace() + " -s exact --top 1000000");
  ASSERT_TRUE(j.is_object());
  std::uint64_t misses = 0;
  std::uint64_t allocations = 0;
  for (const auto& site : j["sites"]) {
    misses += site["strategies"][0]["misses"].get<std::uint64_t>();
    allocations += site["allocations"].get<std::uint64_t>();
  }
  EXPECT_EQ(misses, j["strategies"][0]["metrics"]["misses"].get<std::uint64_t>());
  const nlohmann::json info = info_json(trace());
  ASSERT_TRUE(info.is_object());
  EXPECT_EQ(allocations, info["allocations"].get<std::uint64_t>());
}

TEST_F(SitesCliBundled, info_lists_the_pytorch_trace_stacks_by_name) {
  const CliResult text = run_cli("info --stacks " + trace());
  ASSERT_EQ(text.status, 0) << text.output;
  EXPECT_NE(text.output.find("\ntop allocation stacks by count\n"), std::string::npos)
      << text.output;
  EXPECT_NE(text.output.find("(libtorch_cpu.so"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("(libtorch_python.so"), std::string::npos) << text.output;
  const nlohmann::json j = info_json("--stacks " + trace());
  ASSERT_TRUE(j.is_object());
  // Every allocation of the runs kept its stack through trimming.
  EXPECT_EQ(j["allocations_with_stack"], j["allocations"]);
  EXPECT_GT(j["distinct_stacks"].get<std::uint64_t>(), 100u);
  ASSERT_FALSE(j["top_stacks_by_bytes"].empty());
  EXPECT_EQ(j["top_stacks_by_bytes"][0]["frames"][0]["function"], "c10::alloc_cpu(unsigned long)");
}

}  // namespace
}  // namespace alloclab::test
