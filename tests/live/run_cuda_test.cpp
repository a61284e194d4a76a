// `alloclab run --cuda` and the PyTorch allocator: the libraries export their entry points
// only; over a stand-in CUDA runtime (tests/live/programs/fake_cudart.c) a program's device
// allocations go through the strategy, one result per device, with the runtime's errors and
// cudaFree's meanings kept; a CPU program reports no device; the Python helper says clearly why
// it cannot run; and, on a real device, a CUDA program runs under it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "alloclab/live/live_report.hpp"
#include "tests/cli/cli_test_util.hpp"
#include "tests/cuda/cupti/cuda_test_util.hpp"
#include "tests/live/live_run_test.hpp"

namespace alloclab {
namespace {

namespace fs = std::filesystem;
using test::run_cli;
using test::run_shell;

class RunCuda : public test::LiveRunTest {};

TEST_F(RunCuda, on_a_program_without_cuda_it_reports_no_device) {
  const auto r = run_cli("run --cuda -s best-fit --json " + path("r.json") + " -- " +
                         std::string(LIVE_SUBJECT) + " churn 200");
#ifdef ALLOCLAB_LIVE_CUDA_LIBRARY
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("cuda: no device memory went through the strategy"), std::string::npos)
      << r.output;
  const nlohmann::json report = read_json(path("r.json"));
  ASSERT_EQ(report["results"].size(), 1u) << report.dump();
  EXPECT_FALSE(report["results"][0].contains("device"));
  EXPECT_TRUE(report["program"]["cuda"].get<bool>());
#else
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("built without the CUDA toolkit"), std::string::npos) << r.output;
#endif
}

#ifdef ALLOCLAB_LIVE_CUDA_LIBRARY

// The dynamic symbols a library defines (nm -D --defined-only), but the linker's own and the
// C++ library's unique objects (kind "u": an inline function's static, which the dynamic linker
// keeps one of per process whatever the visibility).
std::set<std::string> exported(const std::string& library) {
  const test::CliResult nm = run_shell("nm -D --defined-only " + library);
  std::set<std::string> names;
  if (nm.status != 0) return {"nm failed: " + nm.output};
  std::istringstream lines(nm.output);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string address, kind, name;
    words >> address >> kind >> name;
    if (kind == "A" || kind == "u" || name.empty() || name == "_init" || name == "_fini") continue;
    names.insert(name);
  }
  return names;
}

TEST_F(RunCuda, the_libraries_export_exactly_their_entry_points) {
  if (run_shell("nm --version").status == 127) GTEST_SKIP() << "nm (binutils) is not installed";
  EXPECT_EQ(exported(ALLOCLAB_LIVE_CUDA_LIBRARY),
            (std::set<std::string>{"cudaMalloc", "cudaFree", "cuMemAlloc_v2", "cuMemFree_v2",
                                   "alloclab_preload_run_begin", "alloclab_preload_run_end",
                                   "InitializeInjectionNvtx2"}));
  EXPECT_EQ(exported(ALLOCLAB_TORCH_LIBRARY),
            (std::set<std::string>{"alloclab_torch_configure", "alloclab_torch_malloc",
                                   "alloclab_torch_free", "alloclab_torch_run_begin",
                                   "alloclab_torch_run_end"}));
}

// A CUDA runtime loaded with alloclab's library, ahead of the program's own, would take the
// program's CUDA calls: none of the libraries may depend on one.
TEST_F(RunCuda, the_libraries_bring_no_cuda_runtime_into_the_program) {
  if (run_shell("readelf --version").status == 127)
    GTEST_SKIP() << "readelf (binutils) is not installed";
  for (const char* library :
       {ALLOCLAB_LIVE_LIBRARY, ALLOCLAB_LIVE_CUDA_LIBRARY, ALLOCLAB_TORCH_LIBRARY}) {
    const test::CliResult needed = run_shell(std::string("readelf -d ") + library);
    ASSERT_EQ(needed.status, 0) << needed.output;
    EXPECT_NE(needed.output.find("libc.so"), std::string::npos) << library;
    EXPECT_EQ(needed.output.find("libcuda"), std::string::npos) << library << needed.output;
  }
}

TEST_F(RunCuda, device_allocations_go_through_the_strategy_one_result_per_device) {
  const auto r = run_cli("run --cuda -s best-fit --json " + path("r.json") + " -- " +
                         FAKE_CUDA_SUBJECT + " 100");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("bad calls: 0"), std::string::npos) << r.output;
  // The strategy kept its blocks: 2 devices x 100 rounds x 2 blocks came from a few real calls.
  // cudaFree(0) reached the runtime, and so did the free of a pointer nobody handed out; the
  // huge request failed with the runtime's own error.
  EXPECT_NE(r.output.find("null_frees=1 unknown_frees=1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("huge: status 2, pointer null"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("best-fit [cuda:0]"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("cuda:1: peak device memory"), std::string::npos) << r.output;
  const nlohmann::json report = read_json(path("r.json"));
  const nlohmann::json& results = report["results"];
  ASSERT_EQ(results.size(), 3u) << report.dump();
  EXPECT_FALSE(results[0].contains("device"));
  for (int device = 0; device < 2; ++device) {
    const nlohmann::json& d = results[device + 1];
    SCOPED_TRACE(d.dump());
    EXPECT_EQ(d["strategy"], "best-fit");
    EXPECT_EQ(d["device"], "cuda:" + std::to_string(device));
    // The huge request was device 1's (the last device set).
    EXPECT_EQ(d["requests"].get<int>(), 200 + device);
    EXPECT_GE(d["hits"].get<int>(), 190);
    EXPECT_LE(d["upstream_allocs"].get<int>(), 10);
    EXPECT_EQ(d["failed_requests"].get<int>(), device);
    EXPECT_GE(d["peak_device_bytes"].get<std::uint64_t>(), (1u + device) << 20);
    EXPECT_GE(d["peak_reserved_bytes"].get<std::uint64_t>(), (1u + device) << 20);
  }
  // The runtime made few real calls: the strategy's misses, and its release at exit.
  const std::size_t counts = r.output.find("fake cuda: mallocs=");
  ASSERT_NE(counts, std::string::npos);
  EXPECT_LT(std::stol(r.output.substr(counts + 19)), 30) << r.output;
}

TEST_F(RunCuda, calls_reach_the_runtime_of_a_library_opened_in_a_local_scope) {
  // As Python opens PyTorch: the program's runtime is not in the global scope, where alloclab's
  // own (its libraries load one) is, and no device is here for that one to allocate on.
  const auto r = run_cli("run --cuda -s best-fit --json " + path("r.json") + " -- " +
                         LOCAL_CUDA_SUBJECT + " " + FAKE_CUDA_USER);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("bad calls: 0"), std::string::npos) << r.output;
  const nlohmann::json report = read_json(path("r.json"));
  ASSERT_EQ(report["results"].size(), 2u) << report.dump();
  EXPECT_EQ(report["results"][1]["requests"].get<int>(), 100);
  EXPECT_EQ(report["results"][1]["upstream_allocs"].get<int>(), 1);
}

TEST_F(RunCuda, without_cuda_the_device_calls_reach_the_runtime_untouched) {
  const auto r =
      run_cli("run -s best-fit --json " + path("r.json") + " -- " + FAKE_CUDA_SUBJECT + " 100");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("fake cuda: mallocs=401 frees=402"), std::string::npos) << r.output;
  EXPECT_EQ(read_json(path("r.json"))["results"].size(), 1u);
}

TEST_F(RunCuda, the_device_caches_follow_the_programs_run_markers) {
  // per-run-pool caches inside a run only: with --markers, the device caches are in a run only
  // when the program's markers reach them (through the live library).
  for (const bool marked : {true, false}) {
    const auto r = run_cli("run --cuda --markers -s per-run-pool -f --json " + path("r.json") +
                           " -- " + FAKE_CUDA_SUBJECT + " 50" + (marked ? " markers" : ""));
    ASSERT_EQ(r.status, 0) << r.output;
    const nlohmann::json report = read_json(path("r.json"));
    ASSERT_EQ(report["results"].size(), 3u) << report.dump();
    for (int device = 1; device <= 2; ++device) {
      const nlohmann::json& d = report["results"][device];
      if (marked)
        EXPECT_GE(d["hits"].get<int>(), 90) << d.dump();
      else
        EXPECT_EQ(d["hits"].get<int>(), 0) << d.dump();
    }
  }
}

// What the device caches and their strategies allocate for themselves (tables that grow with
// the blocks they hold) reaches the program's malloc, which under `run` is the host strategy's:
// it must count none of it, so the replay of the run's trace (which holds the program's
// allocations only) gives the host's live counters, down to the smallest request. One
// allocation is the trace's alone (the C++ runtime's exception pool, made as alloclab's library
// loads it: docs/cli.md), so each counter is compared as its difference from the replay, which
// must be the same with 4,000 device blocks held as with none.
TEST_F(RunCuda, what_the_device_caches_allocate_for_themselves_is_not_the_programs) {
  const std::string trace = path("run.alt"), live = path("live.json"),
                    replayed = path("replayed.json");
  const char* const keys[] = {"requests",        "hits",
                              "upstream_allocs", "upstream_frees",
                              "peak_live_bytes", "peak_reserved_bytes",
                              "slack_bytes"};
  for (const char* spec : {"exact", "pytorch"}) {
    for (const bool torch : {false, true}) {
      SCOPED_TRACE(std::string(spec) + (torch ? " through the torch allocator" : " under --cuda"));
      std::map<std::string, long long> differences[2];
      for (const int blocks : {0, 4000}) {
        const std::string held = std::to_string(blocks);
        const std::string program = torch ? std::string(DEVICE_HOLD_SUBJECT) + " torch " +
                                                ALLOCLAB_TORCH_LIBRARY + " " + held + " " + spec
                                          : std::string(DEVICE_HOLD_SUBJECT) + " runtime " + held;
        auto r = run_cli(std::string("run -f ") + (torch ? "" : "--cuda ") + "-s " + spec +
                         " --min-size 1 --record " + trace + " --json " + live + " -- " + program);
        ASSERT_EQ(r.status, 0) << r.output;
        ASSERT_NE(r.output.find("held " + held + " device blocks, bad calls: 0"), std::string::npos)
            << r.output;
        r = run_cli("replay " + trace + " -s " + spec + " --min-size 1 -f --json " + replayed);
        ASSERT_EQ(r.status, 0) << r.output;
        const nlohmann::json a = read_json(live)["results"][0];
        const nlohmann::json b = read_json(replayed)["results"][0];
        EXPECT_FALSE(a.contains("device"));
        for (const char* key : keys)
          differences[blocks != 0][key] = b[key].get<long long>() - a[key].get<long long>();
      }
      for (const char* key : keys) EXPECT_EQ(differences[1][key], differences[0][key]) << key;
    }
  }
}

TEST_F(RunCuda, the_torch_allocator_runs_a_strategy_per_device_and_reports) {
  const auto r = run_shell(std::string(TORCH_ALLOCATOR_SUBJECT) + " " + ALLOCLAB_TORCH_LIBRARY +
                           " pytorch " + dir_.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("bad spec: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("no-such-strategy"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("huge: null"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("late configure: the allocator has already allocated"), std::string::npos)
      << r.output;
  std::vector<live::LiveReport> reports;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    reports.push_back(live::parse_live_report(text.str(), entry.path().string()));
    EXPECT_NE(entry.path().filename().string().find(".torch"), std::string::npos);
  }
  ASSERT_EQ(reports.size(), 2u) << r.output;
  std::sort(reports.begin(), reports.end(),
            [](const auto& a, const auto& b) { return a.device < b.device; });
  for (int device = 0; device < 2; ++device) {
    const live::LiveReport& report = reports[static_cast<std::size_t>(device)];
    EXPECT_EQ(report.spec, "pytorch");
    EXPECT_EQ(report.device, "cuda:" + std::to_string(device));
    EXPECT_EQ(report.metrics.requests, 50u + (device == 0 ? 1u : 0u));
    // pytorch's model keeps a pool per stream: the two streams got a block each.
    EXPECT_EQ(report.metrics.upstream_allocs, 2u) << report.device;
    EXPECT_GT(report.peak_device_bytes, 0u);
  }
}

// The torch allocator's reports in `dir`, by device.
std::vector<live::LiveReport> torch_reports(const fs::path& dir) {
  std::vector<live::LiveReport> reports;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().find(".torch") == std::string::npos) continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    reports.push_back(live::parse_live_report(text.str(), entry.path().string()));
  }
  std::sort(reports.begin(), reports.end(),
            [](const auto& a, const auto& b) { return a.device < b.device; });
  return reports;
}

std::vector<std::string> run_labels(const live::LiveReport& report) {
  std::vector<std::string> labels;
  for (const RunMetrics& run : report.run_metrics) labels.push_back(run.label);
  return labels;
}

// Each of `report`'s runs: per-run-pool took one block from upstream for its 10 requests and
// gave it back at the run's end.
void expect_pooled_runs(const live::LiveReport& report) {
  for (const RunMetrics& run : report.run_metrics) {
    SCOPED_TRACE(report.device + " run " + run.label);
    EXPECT_EQ(run.requests, 10u);
    EXPECT_EQ(run.hits, 9u);
    EXPECT_EQ(run.upstream_allocs, 1u);
    EXPECT_EQ(run.upstream_frees, 1u);
  }
}

TEST_F(RunCuda, the_torch_allocator_follows_the_run_markers_it_is_given) {
  // The first marker comes before the first allocation, when the library has no cache yet: the
  // run is kept, and its label. Device 1, first used inside "step 1", joins that run.
  const auto r = run_shell(std::string(TORCH_ALLOCATOR_SUBJECT) + " " + ALLOCLAB_TORCH_LIBRARY +
                           " per-run-pool " + dir_.string() + " runs 0 marker");
  ASSERT_EQ(r.status, 0) << r.output;
  const std::vector<live::LiveReport> reports = torch_reports(dir_);
  ASSERT_EQ(reports.size(), 2u) << r.output;
  EXPECT_EQ(reports[0].runs, 3u);
  EXPECT_EQ(run_labels(reports[0]), (std::vector<std::string>{"warm-up", "step 1", "step 2"}));
  // Outside any run, the pool is not used: 10 misses, each block straight back upstream.
  EXPECT_EQ(reports[0].metrics.requests, 40u);
  EXPECT_EQ(reports[0].metrics.hits, 27u);
  EXPECT_EQ(reports[0].metrics.upstream_allocs, 13u);
  EXPECT_EQ(reports[1].runs, 2u);
  EXPECT_EQ(run_labels(reports[1]), (std::vector<std::string>{"step 1", "step 2"}));
  EXPECT_EQ(reports[1].metrics.requests, 20u);
  for (const live::LiveReport& report : reports) expect_pooled_runs(report);
}

TEST_F(RunCuda, the_torch_allocator_assumes_a_run_before_the_first_marker_unless_told_not_to) {
  // Told by configure, or, unconfigured, by the environment `run --markers` sets.
  const std::string env =
      "ALLOCLAB_LIVE_SPEC=per-run-pool ALLOCLAB_LIVE_REPORT_DIR=" + dir_.string() +
      " ALLOCLAB_LIVE_MARKERS=1 ";
  for (const std::string how : {"0", "1", "env"}) {
    SCOPED_TRACE(how);
    const bool marked = how != "0";
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    const auto r = run_shell((how == "env" ? env : "") + TORCH_ALLOCATOR_SUBJECT + " " +
                             ALLOCLAB_TORCH_LIBRARY + " per-run-pool " + dir_.string() + " runs " +
                             how + " allocation");
    ASSERT_EQ(r.status, 0) << r.output;
    const std::vector<live::LiveReport> reports = torch_reports(dir_);
    ASSERT_EQ(reports.size(), 2u) << r.output;
    const live::LiveReport& device0 = reports[0];
    EXPECT_EQ(device0.metrics.requests, 50u);
    if (marked) {
      // The 10 blocks before the first marker were outside any run: misses.
      EXPECT_EQ(run_labels(device0), (std::vector<std::string>{"warm-up", "step 1", "step 2"}));
      EXPECT_EQ(device0.metrics.hits, 27u);
    } else {
      // They were a run of their own, which the first marker ended.
      EXPECT_EQ(run_labels(device0), (std::vector<std::string>{"", "warm-up", "step 1", "step 2"}));
      EXPECT_EQ(device0.metrics.hits, 36u);
    }
    expect_pooled_runs(device0);
    // Device 1, first used inside a marked run, is in it either way.
    EXPECT_EQ(run_labels(reports[1]), (std::vector<std::string>{"step 1", "step 2"}));
  }
}

// The Python helper with a stand-in `torch` module (PyTorch need not be installed): without
// CUDA it says so; with it, it configures the library and swaps PyTorch's allocator for it.
class TorchHelper : public RunCuda {
 protected:
  test::CliResult python(const std::string& fake_torch, const std::string& script) {
    fs::create_directories(dir_ / "torch");
    std::ofstream(dir_ / "torch" / "__init__.py") << fake_torch;
    std::ofstream(path("script.py")) << script;
    return run_shell("cd " + dir_.string() + " && PYTHONPATH=" + dir_.string() + ":" +
                     ALLOCLAB_PYTHON_DIR + " ALLOCLAB_TORCH_LIBRARY=" + ALLOCLAB_TORCH_LIBRARY +
                     " python3 script.py");
  }
  static constexpr char kFakeTorch[] = R"(
class _Memory:
    calls = []
    fail = None
    class CUDAPluggableAllocator:
        def __init__(self, path, malloc, free):
            _Memory.calls.append(("allocator", path, malloc, free))
    @staticmethod
    def change_current_allocator(allocator):
        if _Memory.fail:
            raise RuntimeError(_Memory.fail)
        _Memory.calls.append(("changed",))
class cuda:
    available = False
    memory = _Memory
    @staticmethod
    def is_available():
        return cuda.available
)";
};

TEST_F(TorchHelper, without_cuda_use_raises_a_clear_error) {
  if (run_shell("python3 -c pass").status != 0) GTEST_SKIP() << "python3 is not installed";
  const auto r = python(kFakeTorch, R"(
import alloclab_torch
try:
    alloclab_torch.use("best-fit")
except RuntimeError as e:
    print("error:", e)
)");
  EXPECT_NE(r.output.find("error: alloclab_torch: CUDA is not available to PyTorch"),
            std::string::npos)
      << r.output;
}

TEST_F(TorchHelper, without_pytorch_use_says_it_is_not_installed) {
  if (run_shell("python3 -c pass").status != 0) GTEST_SKIP() << "python3 is not installed";
  // A torch that cannot be imported, whether or not a real one is installed.
  const auto r = python("raise ImportError('no torch here')\n", R"(
import alloclab_torch
try:
    alloclab_torch.use("best-fit")
except RuntimeError as e:
    print("error:", e)
)");
  EXPECT_NE(r.output.find("error: alloclab_torch: PyTorch is not installed (no torch here)"),
            std::string::npos)
      << r.output;
}

TEST_F(TorchHelper, use_configures_the_library_and_swaps_the_allocator) {
  if (run_shell("python3 -c pass").status != 0) GTEST_SKIP() << "python3 is not installed";
  const auto r = python(kFakeTorch, R"(
import torch, alloclab_torch
torch.cuda.available = True
try:
    alloclab_torch.use("no-such-strategy")
except ValueError as e:
    print("bad spec:", e)
alloclab_torch.use("best-fit")
print(torch.cuda.memory.calls)
torch.cuda.memory.fail = "Can't swap an already initialized allocator"
try:
    alloclab_torch.use("best-fit")
except RuntimeError as e:
    print("second:", e)
)");
  EXPECT_NE(r.output.find("bad spec: alloclab_torch: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("no-such-strategy"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(std::string("[('allocator', '") + ALLOCLAB_TORCH_LIBRARY +
                          "', 'alloclab_torch_malloc', 'alloclab_torch_free'), ('changed',)]"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("second: alloclab_torch: PyTorch's CUDA allocator was already used"),
            std::string::npos)
      << r.output;
}

// What PyTorch does with the allocator use() installed, over the fake runtime (loaded first, as
// PyTorch loads its own): `blocks` blocks of 1 MiB on device 0 before any marker, then the
// runs "step 0" to "step 2" of 10 blocks each, marked through alloclab_markers.
std::string torch_program(const std::string& use_arguments, int blocks_before) {
  return std::string(R"(
import ctypes, os
import alloclab_markers  # before use(): the markers reach the library all the same
import torch, alloclab_torch
ctypes.CDLL(")") +
         FAKE_CUDART_LIBRARY + R"(", mode=ctypes.RTLD_GLOBAL)
torch.cuda.available = True
alloclab_torch.use()" +
         use_arguments + R"()
torch_library = ctypes.CDLL(os.environ["ALLOCLAB_TORCH_LIBRARY"])
malloc, free = torch_library.alloclab_torch_malloc, torch_library.alloclab_torch_free
malloc.restype = ctypes.c_void_p
malloc.argtypes = [ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
free.argtypes = [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
def blocks(n):
    for _ in range(n):
        p = malloc(1 << 20, 0, None)
        assert p
        free(p, 1 << 20, 0, None)
blocks()" +
         std::to_string(blocks_before) + R"()
for step in range(3):
    with alloclab_markers.run("step %d" % step):
        blocks(10)
print("traced:", alloclab_markers.traced())
)";
}

TEST_F(TorchHelper, the_python_markers_reach_the_strategy) {
  if (run_shell("python3 -c pass").status != 0) GTEST_SKIP() << "python3 is not installed";
  const fs::path reports = dir_ / "reports";
  fs::create_directories(reports);
  const auto r = python(
      kFakeTorch, torch_program("\"per-run-pool\", report_dir=\"" + reports.string() + "\"", 0));
  ASSERT_EQ(r.status, 0) << r.output;
  // The markers went to the library, not to a tracer: none is here.
  EXPECT_NE(r.output.find("traced: False"), std::string::npos) << r.output;
  const std::vector<live::LiveReport> found = torch_reports(reports);
  ASSERT_EQ(found.size(), 1u) << r.output;
  EXPECT_EQ(found[0].runs, 3u);
  EXPECT_EQ(run_labels(found[0]), (std::vector<std::string>{"step 0", "step 1", "step 2"}));
  expect_pooled_runs(found[0]);
}

TEST_F(TorchHelper, marked_runs_defaults_to_what_run_markers_says) {
  if (run_shell("python3 -c pass").status != 0) GTEST_SKIP() << "python3 is not installed";
  // ALLOCLAB_LIVE_MARKERS=1 (`run --markers`): the 10 blocks before the first marker are in no
  // run, unless use() says otherwise.
  for (const char* marked_runs : {"None", "False"}) {
    SCOPED_TRACE(marked_runs);
    const fs::path reports = dir_ / ("reports_" + std::string(marked_runs));
    fs::create_directories(reports);
    const auto r =
        python(kFakeTorch, "import os\nos.environ['ALLOCLAB_LIVE_MARKERS'] = '1'\n" +
                               torch_program("\"per-run-pool\", report_dir=\"" + reports.string() +
                                                 "\", marked_runs=" + marked_runs,
                                             10));
    ASSERT_EQ(r.status, 0) << r.output;
    const std::vector<live::LiveReport> found = torch_reports(reports);
    ASSERT_EQ(found.size(), 1u) << r.output;
    EXPECT_EQ(found[0].metrics.requests, 40u);
    EXPECT_EQ(found[0].runs, 3u);  // the markers
    if (std::string(marked_runs) == "None") {
      EXPECT_EQ(run_labels(found[0]), (std::vector<std::string>{"step 0", "step 1", "step 2"}));
      EXPECT_EQ(found[0].metrics.hits, 27u);
    } else {
      EXPECT_EQ(run_labels(found[0]), (std::vector<std::string>{"", "step 0", "step 1", "step 2"}));
      EXPECT_EQ(found[0].metrics.hits, 36u);
    }
    expect_pooled_runs(found[0]);
  }
}

TEST_F(RunCuda, a_cuda_program_on_a_device_runs_with_the_strategy) {
  if (const std::string why = test::why_no_cuda_device(); !why.empty())
    GTEST_SKIP() << "needs a CUDA device: " << why;
  const auto r =
      run_cli("run --cuda -s best-fit --json " + path("r.json") + " -- " + CUDA_DEVICE_SUBJECT);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("huge: status 2"), std::string::npos) << r.output;
  const nlohmann::json report = read_json(path("r.json"));
  const nlohmann::json& results = report["results"];
  ASSERT_EQ(results.size(), 3u) << report.dump();
  // One device, with a cache for the runtime's blocks (whose requests include the failed one)
  // and one for the driver's.
  std::map<std::string, int> requests;
  for (const nlohmann::json& result : results)
    if (result.contains("device"))
      requests[result["device"].get<std::string>()] = result["requests"].get<int>();
  EXPECT_EQ(requests, (std::map<std::string, int>{{"cuda:0", 201}, {"cuda-driver:0", 100}}))
      << report.dump();
}

#endif

}  // namespace
}  // namespace alloclab
