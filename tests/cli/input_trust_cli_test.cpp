// End-to-end checks that damage, emptiness and odd inputs are reported where the user looks:
// a trace from which nothing could be read, directories, endless input, pipes, alloclab's own
// Chrome export, a trace repaired before its replay.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"

namespace {

using Result = alloclab::test::CliResult;

Result run(const std::string& args) {
  return alloclab::test::run_cli(args);
}

const std::string kCli = ALLOCLAB_CLI;

class InputTrustCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("alloclab-input-trust-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // A generated trace of several chunks, and its bytes.
  std::vector<char> generated(const std::string& file) const {
    const Result g = run("generate --shape transformer --events 300000 -o " + file);
    EXPECT_EQ(g.status, 0) << g.output;
    std::ifstream in(file, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  static void write(const std::string& file, const std::vector<char>& bytes, std::size_t n) {
    std::ofstream(file, std::ios::binary | std::ios::trunc)
        .write(bytes.data(), static_cast<std::streamsize>(n));
  }
  static std::size_t first_chunk(const std::vector<char>& bytes) {
    const std::string text(bytes.begin(), bytes.end());
    return text.find("ALTC");
  }

  std::filesystem::path dir_;
};

// `head -c 400 x.alt > t.alt` (the header and part of the first chunk) gave exit 0 and an
// empty report from every command. A non-empty file of which nothing could be read is exit 2.
TEST_F(InputTrustCli, no_event_read_from_a_trace_with_chunks_is_exit_2_in_every_command) {
  const std::vector<char> bytes = generated(path("whole.alt"));
  const std::size_t chunk = first_chunk(bytes);
  ASSERT_NE(chunk, std::string::npos);
  const std::string cut = path("cut.alt");
  write(cut, bytes, chunk + 100);  // the header and the start of the first chunk
  const std::string expected =
      "alloclab: error: " + cut + "@" + std::to_string(chunk) + ", chunk 0: truncated chunk";
  for (const std::string& args :
       {"info " + cut, "info --json " + cut, "info --stacks " + cut, "replay " + cut + " -s exact",
        "sweep " + cut + " -s 'fifo-shrink:max={1MiB..2MiB:x2}'", "advise " + cut,
        "advise --pytorch " + cut, "convert " + cut + " " + path("out.csv")}) {
    SCOPED_TRACE(args);
    const Result r = run(args);
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_EQ(r.output.rfind(expected, 0), 0u) << r.output;
    EXPECT_NE(r.output.find("; no event could be read from the file\n"), std::string::npos)
        << r.output;
  }
  EXPECT_FALSE(std::filesystem::exists(path("out.csv")));
}

// A well-formed trace with no events is an empty trace, not an error.
TEST_F(InputTrustCli, a_header_only_alt_and_a_header_only_csv_are_empty_traces) {
  const std::vector<char> bytes = generated(path("whole.alt"));
  write(path("empty.alt"), bytes, first_chunk(bytes));
  std::ofstream(path("empty.csv")) << "time_ns,action,address,size\n";
  for (const char* name : {"empty.alt", "empty.csv"}) {
    const Result r = run("info " + path(name));
    EXPECT_EQ(r.status, 0) << name << "\n" << r.output;
    EXPECT_NE(r.output.find("events       0 "), std::string::npos) << r.output;
  }
}

// A directory was std::bad_alloc or "basic_filebuf::underflow error", naming nothing.
TEST_F(InputTrustCli, a_directory_given_as_an_input_is_refused_by_name) {
  const std::string dir = path("inputs.alt");
  const std::string json_dir = path("report.json");
  std::filesystem::create_directories(dir);
  std::filesystem::create_directories(json_dir);
  const std::string trace = std::string(ALLOCLAB_TRACES_DIR) + "/tiny.csv";
  const struct {
    std::string args, named;
  } cases[] = {
      {"info " + dir, dir},
      {"info " + dir_.string(), dir_.string()},
      {"info --from csv " + dir, dir},
      {"info --from torch " + json_dir, json_dir},
      {"replay " + dir + " -s exact", dir},
      {"convert " + dir + " " + path("out.csv"), dir},
      {"replay " + trace + " -s exact --cost-model " + dir, dir},
      {"merge " + path("merged.json") + " " + json_dir, json_dir},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.args);
    const Result r = run(c.args);
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_EQ(r.output, "alloclab: error: " + c.named + ": is a directory\n");
  }
}

// `info --from csv /dev/zero` grew one line until std::bad_alloc. Run with a memory and time
// limit, so a regression fails here instead of taking the machine down.
TEST_F(InputTrustCli, endless_input_is_refused_with_the_file_and_byte_offset) {
#if defined(__SANITIZE_ADDRESS__)
  const std::string limits = "timeout 20 ";
#else
  const std::string limits = "ulimit -v 2000000 && timeout 20 ";
#endif
  const struct {
    std::string from, message;
  } cases[] = {
      {"csv", "/dev/zero:1: a line longer than 16 MiB (from byte 0; not a text file?)"},
      {"rmm", "/dev/zero:1: a line longer than 16 MiB (from byte 0; not a text file?)"},
      {"torch", "/dev/zero: byte 0 is 0x00, which JSON text never holds (a binary file?)"},
      {"alt", "/dev/zero@0, header: not an alloclab trace (bad magic)"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.from);
    const Result r =
        alloclab::test::run_shell(limits + kCli + " info --from " + c.from + " /dev/zero");
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_EQ(r.output, "alloclab: error: " + c.message + "\n");
  }
}

// `info <(cat x.alt)` and `cat x.alt | alloclab info /dev/stdin` said "empty file".
TEST_F(InputTrustCli, an_alt_trace_from_a_pipe_reads_as_the_file) {
  const std::string trace = path("piped.alt");
  generated(trace);
  const Result direct = run("info --json " + trace);
  ASSERT_EQ(direct.status, 0) << direct.output;
  nlohmann::json expected = nlohmann::json::parse(direct.output);
  expected.erase("source");

  const std::string fifo = path("fifo"), named_fifo = path("named.alt");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ASSERT_EQ(::mkfifo(named_fifo.c_str(), 0600), 0);
  // The feeding `cat` gives up after a while if the reader never opens the pipe.
  const auto feed = [&](const std::string& to) {
    return "(timeout 20 sh -c 'cat " + trace + " > " + to + "' >/dev/null 2>&1 &) ; ";
  };
  for (const std::string& command :
       {feed(fifo) + kCli + " info --json --from alt " + fifo,
        feed(named_fifo) + kCli + " info --json " + named_fifo,
        "cat " + trace + " | " + kCli + " info --json --from alt /dev/stdin"}) {
    SCOPED_TRACE(command);
    const Result r = alloclab::test::run_shell(command);
    ASSERT_EQ(r.status, 0) << r.output;
    nlohmann::json got = nlohmann::json::parse(r.output);
    got.erase("source");
    EXPECT_EQ(got, expected);
  }
  // Replayed from a pipe (the streamed load) as from the file.
  const Result file_replay = run("replay " + trace + " -s exact");
  const Result piped_replay =
      alloclab::test::run_shell(feed(fifo) + kCli + " replay --from alt " + fifo + " -s exact");
  ASSERT_EQ(piped_replay.status, 0) << piped_replay.output;
  EXPECT_EQ(piped_replay.output, file_replay.output);
  // Without a name or --from, its format would have to be read out of it: say so.
  const Result unnamed = run("info " + fifo);
  EXPECT_EQ(unnamed.status, 2) << unnamed.output;
  EXPECT_NE(unnamed.output.find(fifo + ": a pipe or device"), std::string::npos) << unnamed.output;
  EXPECT_NE(unnamed.output.find("name the format"), std::string::npos) << unnamed.output;
}

// `info` of alloclab's own Chrome export said "not a PyTorch memory snapshot".
TEST_F(InputTrustCli, info_of_alloclabs_chrome_export_says_what_it_is) {
  const std::string exported = path("export.json");
  ASSERT_EQ(run("convert " + std::string(ALLOCLAB_TRACES_DIR) + "/tiny.csv " + exported).status, 0);
  const Result r = run("info " + exported);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find(exported + ": a Chrome/Perfetto trace that alloclab wrote"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("read the trace it was made from (.alt, .csv)"), std::string::npos)
      << r.output;
}

// A CSV with only a failed allocation showed "peak live 0 B at +18446744073.71 s".
TEST_F(InputTrustCli, nothing_live_has_no_peak_time) {
  const std::string csv = path("failed.csv");
  std::ofstream(csv) << "time_ns,action,address,size\n18,alloc,0,64\n";
  const Result r = run("info " + csv);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("peak live    0 B (nothing was live)\n"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("18446744073"), std::string::npos) << r.output;
}

TEST_F(InputTrustCli, csv_times_that_go_backwards_are_a_load_warning) {
  const std::string csv = path("back.csv");
  std::ofstream(csv) << "time_ns,action,address,size\n100,alloc,0x10,8\n50,free,0x10,\n";
  const Result r = run("info " + csv);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("alloclab: warning: " + csv +
                          ":3: time_ns goes backwards (earlier than the row before), here first "
                          "and in 1 row(s) in all; the rows are replayed in file order\n"),
            std::string::npos)
      << r.output;
}

// A replay's numbers rest on the repaired trace when it had anomalies: the terminal says so,
// with a pointer to `alloclab info`; the JSON report carries the counts in its trace summary.
TEST_F(InputTrustCli, a_replay_of_a_repaired_trace_says_so) {
  const std::string csv = path("anomalies.csv");
  std::ofstream(csv) << "time_ns,action,address,size\n"
                     << "1,alloc,0x10,8\n2,free,0x20,\n3,free,0x10,\n4,free,0x10,\n";
  const std::string note =
      "(the trace has 2 anomalies (free of unknown address 1, double free "
      "1), repaired to be replayed: these numbers rest on the repaired "
      "trace; `alloclab info " +
      csv + "` says where they are)\n";
  const std::string report = path("report.json");
  for (const std::string& args : {"replay " + csv + " -s exact --json " + report,
                                  "sweep " + csv + " -s 'fifo-shrink:max={1KiB..2KiB:x2}'",
                                  "advise " + csv, "advise --pytorch " + csv}) {
    SCOPED_TRACE(args);
    const Result r = run(args);
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find(note), std::string::npos) << r.output;
  }
  const nlohmann::json j = nlohmann::json::parse(std::ifstream(report));
  EXPECT_EQ(j["trace"]["anomalies"]["total"], 2);
  EXPECT_EQ(j["trace"]["first_anomalies"].size(), 2u);

  const Result clean = run("replay " + std::string(ALLOCLAB_TRACES_DIR) + "/tiny.csv -s exact");
  ASSERT_EQ(clean.status, 0) << clean.output;
  EXPECT_EQ(clean.output.find("repaired"), std::string::npos) << clean.output;
}

std::string snapshot_data(const std::string& name) {
  return std::string(ALLOCLAB_TEST_DATA) + "/interchange/" + name;
}

// A PyTorch snapshot was read only after a Python script turned its pickle into JSON. Every
// command reads the pickle `_dump_snapshot()` writes, by its name, by its first byte under any
// name, and from a pipe, as the same trace as its JSON.
TEST_F(InputTrustCli, every_command_reads_a_snapshot_pickle) {
  const std::string pickle = snapshot_data("snapshot_torch.p4.pickle");
  const std::string json = snapshot_data("snapshot_torch.json");
  const Result from_json = run("info --json " + json);
  ASSERT_EQ(from_json.status, 0) << from_json.output;
  nlohmann::json expected = nlohmann::json::parse(from_json.output);
  expected.erase("source");
  const std::string unnamed = path("snapshot");  // no extension: told by its first byte
  std::filesystem::copy_file(pickle, unnamed);
  for (const std::string& command :
       {kCli + " info --json " + pickle, kCli + " info --json " + unnamed,
        "cat " + pickle + " | " + kCli + " info --json --from torch /dev/stdin"}) {
    SCOPED_TRACE(command);
    const Result r = alloclab::test::run_shell(command);
    ASSERT_EQ(r.status, 0) << r.output;
    nlohmann::json got = nlohmann::json::parse(r.output);
    got.erase("source");
    EXPECT_EQ(got, expected);
  }
  for (const std::string& args :
       {"info --stacks " + pickle, "replay " + pickle + " -s exact -s pytorch",
        "sweep " + pickle + " -s 'fifo-shrink:max={1MiB..2MiB:x2}'", "advise " + pickle,
        "advise --pytorch " + pickle + " --memory-limit 1GiB",
        "convert " + pickle + " " + path("snapshot.alt")}) {
    SCOPED_TRACE(args);
    const Result r = run(args);
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.output.find("warning"), std::string::npos) << r.output;
  }
  // The call stacks show, and travel into the .alt.
  for (const std::string& trace : {pickle, path("snapshot.alt")}) {
    const Result stacks = run("info --stacks " + trace);
    ASSERT_EQ(stacks.status, 0) << stacks.output;
    EXPECT_NE(stacks.output.find("      forward (model.py:41)\n"), std::string::npos)
        << stacks.output;
  }
}

// A pickle is a program Python runs when it loads it; alloclab refuses, naming file and byte.
TEST_F(InputTrustCli, a_pickle_that_would_run_code_is_one_line_and_status_2) {
  const std::string hostile = snapshot_data("hostile_os_system.p4.pickle");
  for (const std::string& args : {"info " + hostile, "replay " + hostile + " -s exact",
                                  "advise --pytorch " + hostile + " --memory-limit 1GiB",
                                  "convert " + hostile + " " + path("out.alt")}) {
    SCOPED_TRACE(args);
    const Result r = run(args);
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_EQ(r.output, "alloclab: error: " + hostile +
                            ": byte 75: opcode STACK_GLOBAL (0x93) would import or call Python "
                            "code; a memory snapshot is plain data, and alloclab runs nothing "
                            "from a pickle\n");
  }
  EXPECT_FALSE(std::filesystem::exists(path("out.alt")));
}

// A pickle cut short reads up to the cut, as a truncated .alt does, and says so.
TEST_F(InputTrustCli, a_cut_pickle_reads_up_to_the_cut_with_a_warning) {
  std::ifstream in(snapshot_data("snapshot_torch.p4.pickle"), std::ios::binary);
  const std::vector<char> bytes{std::istreambuf_iterator<char>(in),
                                std::istreambuf_iterator<char>()};
  const std::string cut = path("cut.pickle");
  write(cut, bytes, bytes.size() * 3 / 4);
  const Result r = run("info " + cut);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output.rfind("alloclab: warning: " + cut + ": byte ", 0), 0u) << r.output;
  EXPECT_NE(r.output.find("(the file is cut short?): kept the "), std::string::npos) << r.output;
}

}  // namespace
