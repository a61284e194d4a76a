// End-to-end checks of the `alloclab` binary: exit statuses, messages, formats.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>
#include "cli_test_util.hpp"

namespace {

using Result = alloclab::test::CliResult;

Result run(const std::string& args) {
  return alloclab::test::run_cli(args);
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("alloclab-cli-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

TEST(Cli, info_prints_a_summary_of_a_bundled_trace) {
  const Result r = run(std::string("info ") + ALLOCLAB_TRACES_DIR + "/cnn-inference.alt");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("bytes/event"), std::string::npos);
  EXPECT_NE(r.output.find("forward 0"), std::string::npos);
}

// Labels are bytes: a run named in Latin-1 ("caf\xe9") made every JSON writer throw
// ("invalid UTF-8 byte"). Each such byte is written as U+FFFD; the document stays valid.
TEST(Cli, json_output_survives_labels_that_are_not_utf8) {
  const std::string csv = temp_path("latin1.csv");
  std::ofstream(csv) << "time_ns,thread,action,address,size,label\n"
                     << "100,1,run_begin,,,caf\xe9 \xff run\n"
                     << "120,1,alloc,0x1000,64,\n130,1,free,0x1000,,\n140,1,run_end,,,\n";
  const std::string replayed = temp_path("latin1-report.json");
  const std::string swept = temp_path("latin1-sweep.json");
  for (const std::string& args :
       {"info --json " + csv, "replay " + csv + " -s exact --json " + replayed,
        "sweep " + csv + " -s fifo-shrink:max={64..128:x2} --json " + swept}) {
    SCOPED_TRACE(args);
    const Result r = run(args);
    ASSERT_EQ(r.status, 0) << r.output;
  }
  const std::string replacement = "caf\xef\xbf\xbd \xef\xbf\xbd run";  // U+FFFD twice
  const Result info = run("info --json " + csv);
  EXPECT_EQ(nlohmann::json::parse(info.output)["runs"][0]["label"], replacement);
  for (const std::string& path : {replayed, swept}) {
    std::ifstream in(path);
    EXPECT_FALSE(nlohmann::json::parse(in, nullptr, false).is_discarded()) << path;
  }
}

TEST(Cli, info_json_has_the_documented_keys) {
  const Result r = run(std::string("info --json ") + ALLOCLAB_TRACES_DIR + "/cnn-inference.alt");
  ASSERT_EQ(r.status, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  for (const char* key :
       {"events", "events_by_op", "threads", "devices", "allocations", "frees", "anomalies",
        "peak_live_bytes", "size_histogram", "lifetime_histogram_ns", "top_sizes_by_count",
        "top_sizes_by_bytes", "runs", "file_bytes_per_event", "first_anomalies"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["anomalies"]["total"], 0);
  EXPECT_LE(j["file_bytes_per_event"].get<double>(), 3.0);
}

// A trace that disagrees with its program says where: the first anomalies, each with its event
// index (the row of `alloclab convert`'s CSV), time, address, device and thread.
TEST(Cli, info_lists_where_the_first_anomalies_are) {
  const std::string csv = temp_path("anomalies.csv");
  std::ofstream(csv) << "time_ns,thread,action,address,size,device\n"
                     << "100,7,alloc,0x1000,64,cpu\n"
                     << "200,7,free,0x2000,,cpu\n"  // 1: free of unknown address
                     << "300,7,free,0x1000,,cpu\n"
                     << "400,8,free,0x1000,,cpu\n"      // 3: double free
                     << "500,8,free,0x1000,,cuda:0\n";  // 4: unknown on the device
  const Result text = run("info --anomalies 2 " + csv);
  ASSERT_EQ(text.status, 0) << text.output;
  EXPECT_NE(text.output.find("event 1  +100 ns  free of unknown address  0x2000 on cpu, thread 7"),
            std::string::npos)
      << text.output;
  EXPECT_NE(text.output.find("event 3  +300 ns  double free              0x1000 on cpu, thread 8"),
            std::string::npos)
      << text.output;
  EXPECT_NE(text.output.find("... 1 more"), std::string::npos) << text.output;
  EXPECT_EQ(run("info --anomalies 0 " + csv).output.find("event 1 "), std::string::npos);

  const Result json = run("info --json " + csv);
  ASSERT_EQ(json.status, 0) << json.output;
  const nlohmann::json listed = nlohmann::json::parse(json.output)["first_anomalies"];
  ASSERT_EQ(listed.size(), 3u);
  EXPECT_EQ(listed[2], (nlohmann::json{{"kind", "free_unknown"},
                                       {"event", 4},
                                       {"time_ns", 500},
                                       {"address", 0x1000},
                                       {"thread", 8},
                                       {"device", "cuda:0"}}));
  const Result too_many = run("info --anomalies 1001 " + csv);
  EXPECT_NE(too_many.status, 0);
  EXPECT_NE(too_many.output.find("--anomalies"), std::string::npos) << too_many.output;
  std::filesystem::remove(csv);
}

TEST(Cli, bad_trace_is_one_line_naming_the_file_and_exit_status_2) {
  const std::string path = temp_path("garbage.alt");
  std::ofstream(path) << "\x89"
                      << "ALX garbage";
  const Result r = run("info " + path);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.output,
            "alloclab: error: " + path + "@0, header: not an alloclab trace (bad magic)\n");
  std::filesystem::remove(path);
}

// info and replay stream a .alt trace (never holding its events); `info --stacks` still loads
// it whole. On a damaged file both must say the same, warnings included.
TEST(Cli, streamed_load_of_a_damaged_trace_reports_what_the_whole_load_reports) {
  const std::string trace = temp_path("damaged.alt");
  ASSERT_EQ(run("generate --shape transformer --events 300000 -o " + trace).status, 0);
  std::vector<char> bytes;
  {
    std::ifstream in(trace, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  ASSERT_GT(bytes.size(), 4000u);
  // Inside some chunk: that chunk is lost, and the one after it, which continues its group.
  bytes[bytes.size() / 2] ^= 0x5A;
  bytes.resize(bytes.size() - 100);  // the last chunk is cut short
  std::ofstream(trace, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));

  const std::string streamed = temp_path("streamed.json"), whole = temp_path("whole.json");
  // In a subshell, so that only stdout goes to the file and the warnings stay in the output.
  const auto json_to = [](const std::string& args, const std::string& file) {
    return alloclab::test::run_shell("(" + std::string(ALLOCLAB_CLI) + " " + args + " > " + file +
                                     ")");
  };
  const Result info = json_to("info --json " + trace, streamed);
  ASSERT_EQ(info.status, 0) << info.output;
  ASSERT_EQ(json_to("info --stacks=1 --json " + trace, whole).status, 0);
  nlohmann::json a = nlohmann::json::parse(std::ifstream(streamed));
  nlohmann::json b = nlohmann::json::parse(std::ifstream(whole));
  for (const char* key :
       {"allocations_with_stack", "distinct_stacks", "top_stacks_by_count", "top_stacks_by_bytes"})
    b.erase(key);
  EXPECT_EQ(a, b);
  ASSERT_EQ(a["warnings"].size(), 3u) << a["warnings"];
  EXPECT_NE(a["warnings"][0].get<std::string>().find("checksum mismatch"), std::string::npos);
  EXPECT_NE(a["warnings"][1].get<std::string>().find("the chunk before it in its group is lost"),
            std::string::npos);
  EXPECT_NE(a["warnings"][2].get<std::string>().find("truncated chunk"), std::string::npos);
  for (const auto& warning : a["warnings"])
    EXPECT_NE(info.output.find("alloclab: warning: " + warning.get<std::string>() + "\n"),
              std::string::npos)
        << info.output;

  const std::string report = temp_path("damaged-report.json");
  const Result replay = run("replay " + trace + " -s exact -s per-run-pool --json " + report);
  ASSERT_EQ(replay.status, 0) << replay.output;
  EXPECT_EQ(replay.output.find("alloclab: warning: " + a["warnings"][0].get<std::string>()), 0u)
      << replay.output;
  const nlohmann::json r = nlohmann::json::parse(std::ifstream(report));
  EXPECT_EQ(r["trace"], a);
  EXPECT_EQ(r["results"].size(), 2u);
  for (const std::string& path : {trace, streamed, whole, report}) std::filesystem::remove(path);
}

TEST(Cli, missing_file_is_exit_status_2) {
  const Result r = run("info /nonexistent/trace.alt");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("/nonexistent/trace.alt"), std::string::npos);
}

TEST(Cli, convert_round_trips_alt_through_csv) {
  const std::string csv = temp_path("convert.csv");
  const std::string alt = temp_path("convert.alt");
  ASSERT_EQ(run(std::string("convert ") + ALLOCLAB_TRACES_DIR + "/cnn-inference.alt " + csv).status,
            0);
  ASSERT_EQ(run("convert " + csv + " " + alt).status, 0);
  const Result a = run(std::string("info --json ") + ALLOCLAB_TRACES_DIR + "/cnn-inference.alt");
  const Result b = run("info --json " + alt);
  nlohmann::json ja = nlohmann::json::parse(a.output), jb = nlohmann::json::parse(b.output);
  for (const char* key : {"events", "allocations", "peak_live_bytes", "runs", "size_histogram"})
    EXPECT_EQ(ja[key], jb[key]) << key;
  std::filesystem::remove(csv);
  std::filesystem::remove(alt);
}

TEST(Cli, a_snapshot_state_survives_alt_and_csv_says_it_cannot_hold_it) {
  const std::string snapshot =
      std::string(ALLOCLAB_TEST_DATA) + "/interchange/snapshot_mid_run.json";
  const std::string alt = temp_path("mid_run.alt"), csv = temp_path("mid_run.csv");
  std::filesystem::remove(alt);
  std::filesystem::remove(csv);
  const Result to_alt = run("convert " + snapshot + " " + alt);
  ASSERT_EQ(to_alt.status, 0) << to_alt.output;
  EXPECT_EQ(to_alt.output.find("CSV cannot hold"), std::string::npos);
  const Result info = run("info " + alt);
  EXPECT_NE(info.output.find("start state  1 segments (20.00 MiB) held, 2 blocks (7.77 MiB) live"),
            std::string::npos)
      << info.output;
  const Result to_csv = run("convert " + snapshot + " " + csv);
  ASSERT_EQ(to_csv.status, 0) << to_csv.output;
  EXPECT_NE(to_csv.output.find("starts from a recorded allocator state, which CSV cannot hold"),
            std::string::npos)
      << to_csv.output;
  std::filesystem::remove(alt);
  std::filesystem::remove(csv);
}

TEST(Cli, convert_writes_chrome_trace_json) {
  const std::string out = temp_path("perfetto.json");
  ASSERT_EQ(run(std::string("convert ") + ALLOCLAB_TRACES_DIR + "/cnn-inference.alt " + out).status,
            0);
  std::ifstream in(out);
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_TRUE(j.contains("traceEvents"));
  EXPECT_GT(j["traceEvents"].size(), 100u);
  std::filesystem::remove(out);
}

TEST(Cli, generate_is_deterministic) {
  const std::string a = temp_path("gen-a.alt"), b = temp_path("gen-b.alt");
  ASSERT_EQ(run("generate --shape transformer --runs 3 --seed 5 -o " + a).status, 0);
  ASSERT_EQ(run("generate --shape transformer --runs 3 --seed 5 -o " + b).status, 0);
  std::ifstream fa(a, std::ios::binary), fb(b, std::ios::binary);
  const std::string sa((std::istreambuf_iterator<char>(fa)), {});
  const std::string sb((std::istreambuf_iterator<char>(fb)), {});
  EXPECT_EQ(sa, sb);
  std::filesystem::remove(a);
  std::filesystem::remove(b);
}

// CLI11 read "-3" into an unsigned option as 2^64 - 3: generate --runs -3 allocated until the
// kernel killed it, --events -3 never ended, record --min-size -5 recorded nothing. (Run with a
// memory and time limit, so a regression fails here instead of taking the machine down.)
// "-" is standard output by convention, and the program's own output goes there: a file of
// that name was created instead.
TEST(Cli, record_refuses_standard_output_as_its_trace) {
  const Result r = run("record -o - -- true");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("-o - would be standard output"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists("-"));
}

TEST(Cli, negative_counts_sizes_and_seeds_are_refused) {
  const std::string out = temp_path("negative.alt");
  const std::string tiny = std::string(ALLOCLAB_TRACES_DIR) + "/tiny.csv";
#if defined(__SANITIZE_ADDRESS__)
  const std::string limits = "timeout 20 ";  // its shadow memory needs more address space
#else
  const std::string limits = "ulimit -v 4000000 && timeout 20 ";
#endif
  for (const std::string& args :
       {"generate --runs -3 -o " + out, "generate --events -3 -o " + out,
        "generate --seed -1 -o " + out, "generate --stacks -4 -o " + out,
        "generate --stacks 10 --stack-depth -1 -o " + out,
        "record --min-size -5 -o " + out + " -- true", "info " + tiny + " --stacks=-2",
        "replay " + tiny + " -s cache -j -2",
        "sweep " + tiny + " -s 'fifo-shrink:max={1MiB..4MiB:x2}' -j -1",
        "advise " + tiny + " -j -1"}) {
    const Result r = alloclab::test::run_shell(limits + ALLOCLAB_CLI + " " + args);
    EXPECT_NE(r.status, 0) << args;
    EXPECT_NE(r.status, 124) << args << ": timed out";
    EXPECT_NE(r.output.find("must not be negative"), std::string::npos) << args << "\n" << r.output;
    EXPECT_FALSE(std::filesystem::exists(out)) << args;
  }
}

TEST(Cli, generate_with_stacks_gives_a_trace_sites_can_rank) {
  const std::string trace = temp_path("gen-stacks.alt");
  ASSERT_EQ(run("generate -f --shape transformer --runs 2 --stacks 50 --stack-depth 8 -o " + trace)
                .status,
            0);
  const Result sites = run("sites " + trace + " -s exact --top 3");
  EXPECT_EQ(sites.status, 0) << sites.output;
  EXPECT_NE(sites.output.find("depth0_fn0 (synthetic)"), std::string::npos) << sites.output;
  const Result deep = run("generate -f --stacks 10 --stack-depth 65 -o " + trace);
  EXPECT_EQ(deep.status, 2) << deep.output;
  std::filesystem::remove(trace);
}

TEST(Cli, unknown_shape_lists_the_accepted_ones) {
  const Result r = run("generate --shape lstm -o " + temp_path("x.alt"));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("cnn, transformer, random"), std::string::npos);
}

TEST(Cli, replay_takes_a_pytorch_alloc_conf_as_pasted_and_refuses_what_is_not_modelled) {
  const std::string trace = std::string(ALLOCLAB_TRACES_DIR) + "/torch-cnn-training.alt";
  const std::string report = temp_path("pytorch-conf.json");
  const Result same = run("replay " + trace +
                          " -s pytorch:max_split_size=64MiB,roundup_power2_divisions=4"
                          " -s 'pytorch-conf:\"max_split_size_mb:64, roundup_power2_divisions:4\"'"
                          " --json " +
                          report);
  ASSERT_EQ(same.status, 0) << same.output;
  std::ifstream in(report);
  nlohmann::json doc = nlohmann::json::parse(in);
  std::filesystem::remove(report);
  ASSERT_EQ(doc["results"].size(), 2u);
  // The same model with the same options: every result but the name and the timing agrees.
  for (auto& r : doc["results"]) {
    r.erase("strategy");
    r.erase("timing");
  }
  EXPECT_EQ(doc["results"][0], doc["results"][1]);
  EXPECT_GT(doc["results"][0]["hits"].get<std::uint64_t>(), 0u);
  const Result refused = run("replay " + trace + " -s 'pytorch-conf:\"backend:cudaMallocAsync\"'");
  EXPECT_EQ(refused.status, 2);
  EXPECT_EQ(refused.output,
            "alloclab: error: pytorch-conf: 'backend:cudaMallocAsync' is not modelled (the model "
            "is the native caching allocator)\n");
}

// Expandable segments hand out addresses of the model's own virtual ranges: --touch, which
// writes to the blocks on a real upstream, is refused with the reason.
TEST(Cli, replay_refuses_touch_with_expandable_segments) {
  const std::string trace = std::string(ALLOCLAB_TRACES_DIR) + "/torch-cnn-training.alt";
  const Result refused = run("replay " + trace +
                             " -s 'pytorch-conf:\"expandable_segments:True\"'"
                             " --upstream host-malloc --touch");
  EXPECT_EQ(refused.status, 2);
  EXPECT_EQ(
      refused.output,
      "alloclab: error: --touch cannot be used with pytorch-conf:\"expandable_segments:True\": "
      "its blocks lie in a virtual address range it models, which no upstream backs\n");
  const Result simulated = run("replay " + trace + " -s pytorch:expandable_segments=true");
  EXPECT_EQ(simulated.status, 0) << simulated.output;
}

// A program dies at its first out-of-memory error: a replay stops there and says where, unless
// --keep-going; the JSON report carries the section and the flag.
TEST(Cli, replay_stops_at_the_first_failed_request_unless_told_to_keep_going) {
  const std::string csv = temp_path("oom.csv");
  std::ofstream(csv) << "time_ns,action,address,size\n"
                        "100,alloc,0x1000,3000\n"
                        "200,alloc,0x2000,3000\n"  // 6000 > 5000: fails
                        "300,free,0x1000,\n"
                        "400,alloc,0x3000,4000\n"
                        "500,alloc,0x4000,9000\n";  // fails even alone
  const std::string report = temp_path("oom.json");
  std::filesystem::remove(report);
  const Result stopped = run("replay " + csv + " -s exact --memory-limit 5000 --json " + report);
  ASSERT_EQ(stopped.status, 0) << stopped.output;
  EXPECT_NE(stopped.output.find("^ 1 request failed (upstream out of memory); the replay "
                                "stopped there\n"),
            std::string::npos)
      << stopped.output;
  EXPECT_NE(stopped.output.find("first failure of exact: a request of 2.93 KiB on cpu, stream 0, "
                                "at operation 2 (trace event 1), +100 ns\n"),
            std::string::npos)
      << stopped.output;
  EXPECT_NE(stopped.output.find("  CUDA out of memory. Tried to allocate 2.93 KiB. Of the "
                                "allocated memory 2.93 KiB is allocated by PyTorch"),
            std::string::npos)
      << stopped.output;
  EXPECT_NE(stopped.output.find("--keep-going replays every request)\n"), std::string::npos)
      << stopped.output;
  std::ifstream in(report);
  const nlohmann::json doc = nlohmann::json::parse(in);
  std::filesystem::remove(report);
  const nlohmann::json& result = doc["results"][0];
  EXPECT_EQ(result["requests"], 2);
  EXPECT_EQ(result["failed_requests"], 1);
  EXPECT_EQ(result["stopped_at_first_failure"], true);
  EXPECT_EQ(result["first_failure"]["event_index"], 1);
  EXPECT_EQ(result["first_failure"]["memory_limit_bytes"], 5000);

  const Result all = run("replay " + csv + " -s exact --memory-limit 5000 --keep-going");
  std::filesystem::remove(csv);
  ASSERT_EQ(all.status, 0) << all.output;
  EXPECT_NE(all.output.find("^ 2 requests failed (upstream out of memory)\n"), std::string::npos)
      << all.output;
  EXPECT_NE(all.output.find("first failure of exact: a request of 2.93 KiB"), std::string::npos)
      << all.output;
  EXPECT_EQ(all.output.find("stopped"), std::string::npos) << all.output;
  EXPECT_NE(run("replay --help").output.find("--keep-going"), std::string::npos);
}

// A snapshot's own segment calls: the replay prints how each strategy compares with them under
// its table and writes them in the report, and merge reads them back.
TEST(Cli, replay_of_a_snapshot_holds_each_strategy_against_the_recorded_allocator) {
  const std::string snapshot = temp_path("fidelity.json");
  std::ofstream(snapshot) << R"({"device_traces": [[
    {"action": "segment_alloc", "addr": 1048576000, "size": 20971520, "stream": 0, "time_us": 100},
    {"action": "alloc", "addr": 1048576000, "size": 5000000, "stream": 0, "time_us": 101},
    {"action": "free_completed", "addr": 1048576000, "size": 5000192, "stream": 0, "time_us": 102},
    {"action": "segment_free", "addr": 1048576000, "size": 20971520, "stream": 0, "time_us": 103},
    {"action": "segment_alloc", "addr": 1048576000, "size": 2097152, "stream": 0, "time_us": 104},
    {"action": "alloc", "addr": 1048576000, "size": 4096, "stream": 0, "time_us": 105}]]})";
  const std::string report = temp_path("fidelity-report.json");
  const Result r = run("replay " + snapshot + " -s pytorch -s exact --json " + report);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("fidelity: the recorded allocator made 2 segment allocs (22.00 MiB) and "
                          "1 segment free (20.00 MiB); 1 empty_cache replayed as a release\n"
                          "  pytorch  every call matched (2/2 allocs and 1/1 frees matched)\n"
                          "  exact    0/2 allocs and 0/1 frees matched (the model made 2 allocs, "
                          "1 free); first apart at op 1 (event 0), 0.000100 s, alloc of 4.77 MiB "
                          "on cuda:0 stream 0: recorded segment_alloc of 20.00 MiB, model "
                          "allocated 4.77 MiB\n"),
            std::string::npos)
      << r.output;
  nlohmann::json doc = nlohmann::json::parse(std::ifstream(report));
  EXPECT_EQ(doc["results"][0]["fidelity"]["all_matched"], true);
  EXPECT_EQ(doc["results"][0]["empty_cache_calls"], 1);
  EXPECT_EQ(doc["results"][0]["upstream_frees"], 1);
  EXPECT_EQ(doc["results"][1]["fidelity"]["first_divergence"]["event"], 0);
  const std::string merged = temp_path("fidelity-merged.json");
  const Result m = run("merge " + merged + " " + report);
  ASSERT_EQ(m.status, 0) << m.output;
  EXPECT_NE(m.output.find("  pytorch  every call matched"), std::string::npos) << m.output;
  for (const std::string& path : {snapshot, report, merged}) std::filesystem::remove(path);
}

}  // namespace
