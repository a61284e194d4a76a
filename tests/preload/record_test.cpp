// `alloclab record` on torture programs: each trace must resolve without anomalies and agree
// with the program's own counters.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <set>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "record_test_util.hpp"

namespace alloclab::test {
namespace {

struct Traced {
  Recorded recorded;
  Trace trace;
  ResolvedTrace resolved;
  std::map<std::string, std::uint64_t> counts;
};

// Records `program` (argument: the counters file) and loads everything back.
Traced record_program(const ScratchDir& dir, const std::string& program,
                      const std::string& args = {}, int expected_status = 0) {
  Traced run;
  const std::string trace = dir.file("trace.alt");
  const std::string counts = dir.file("counts.txt");
  run.recorded = record(trace, program + " " + counts + " " + args, "TORTURE_COUNTS=" + counts);
  EXPECT_EQ(run.recorded.status, expected_status) << run.recorded.output;
  run.trace = read_alt(trace);
  EXPECT_TRUE(run.trace.warnings.empty()) << run.trace.warnings.front();
  run.resolved = resolve(run.trace);
  run.counts = read_counts(counts);
  return run;
}

void expect_no_anomalies(const Traced& run) {
  const Anomalies& a = run.resolved.anomalies;
  EXPECT_EQ(a.total(), 0u) << "free_unknown " << a.free_unknown << ", double_free " << a.double_free
                           << ", alloc_over_live " << a.alloc_over_live;
  EXPECT_EQ(a.free_null, 0u);
}

// The trace resolves cleanly and its "work" runs hold exactly the program's own counts.
RunCounts expect_clean_work_counts(const Traced& run) {
  expect_no_anomalies(run);
  const RunCounts c = count_in_runs(run.trace, "work");
  EXPECT_EQ(c.allocs, run.counts.at("allocs"));
  EXPECT_EQ(c.frees, run.counts.at("frees"));
  return c;
}

// A clean run of `workers` threads that allocated `allocs` blocks in all, none lost.
void expect_every_thread_whole(const Traced& run, std::size_t workers, std::uint64_t allocs) {
  const RunCounts c = expect_clean_work_counts(run);
  EXPECT_EQ(c.runs, 1u);
  EXPECT_EQ(run.counts.at("allocs"), allocs);
  EXPECT_GE(run.trace.origins().size(), workers + 1);  // and main
  EXPECT_NE(run.recorded.output.find("0 dropped"), std::string::npos) << run.recorded.output;
}

TEST(Record, eight_threads_handing_blocks_to_each_other) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  expect_every_thread_whole(record_program(dir, TORTURE_THREADS), 8, 8u * 20000u);
}

// 300 threads alive at once, each with a buffer: more than the writer's backlog bound (128
// buffers), which counted every thread's current buffer, so the 129th thread waited ~10 s for
// room and then lost its events (73 of 200 threads' here). Only full buffers count now.
TEST(Record, more_threads_than_buffers_in_the_backlog_neither_wait_nor_lose_events) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  expect_every_thread_whole(record_program(dir, TORTURE_MANY_THREADS, "300"), 300, 3000);
}

// Mappings trimmed, punched, replaced with MAP_FIXED, moved and resized with mremap, and
// unmapped several at a time: every change is in the trace (a part that stays mapped is a block
// of its own), so it resolves cleanly and nothing mapped in the run is left. The tracer used to
// know a mapping only by its start: each round left blocks it thought live, and the next
// mapping at their address read as an allocation over a live block.
TEST(Record, every_way_a_mapping_goes_is_recorded) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  const Traced run = record_program(dir, TORTURE_MAPPINGS, "50");
  expect_no_anomalies(run);
  const RunCounts c = count_in_runs(run.trace, "work");
  EXPECT_EQ(c.maps, run.counts.at("maps"));
  EXPECT_EQ(c.unmaps, run.counts.at("unmaps"));
  EXPECT_EQ(c.maps, c.unmaps);  // nothing mapped in the run outlives it
  EXPECT_GE(c.maps, 50u * 12u);
}

// The main thread leaves with pthread_exit and the other threads end later: glibc then ends the
// process with exit(0) once its last thread ends, and the trace must be whole. (A writer thread
// of the tracer's, one of them, once kept the process running forever; under a time limit, so a
// regression fails here.)
TEST(Record, a_program_whose_main_thread_exits_first_still_ends) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  const std::string trace = dir.file("trace.alt");
  const std::string counts = dir.file("counts.txt");
  const Recorded r =
      record(trace, std::string(TORTURE_MAIN_EXITS_FIRST) + " " + counts, "timeout -s KILL 60");
  ASSERT_EQ(r.status, 0) << r.output;
  const Trace t = read_alt(trace);
  EXPECT_EQ(resolve(t).anomalies.total(), 0u);
  const RunCounts in_run = count_in_runs(t, "work");
  EXPECT_EQ(in_run.allocs, read_counts(counts).at("allocs"));
  EXPECT_EQ(in_run.frees, read_counts(counts).at("frees"));
}

// While a program has one thread, the tracer numbers its events without a locked instruction;
// a second thread must switch it to locked ones before its first event, however it started.
void expect_clean_second_thread(const char* how) {
  ScratchDir dir;
  const Traced run = record_program(dir, TORTURE_LATE_THREAD, how);
  expect_no_anomalies(run);
  // glibc allocates while it starts the thread: only the program's own sizes are counted.
  std::map<std::uint64_t, bool> programs_block;
  std::uint64_t allocs = 0, frees = 0;
  std::set<std::uint64_t> threads;
  bool inside = false;
  for (std::size_t i = 0; i < run.trace.size(); ++i) {
    const Op op = run.trace.op(i);
    if (op == Op::run_begin || op == Op::run_end) inside = op == Op::run_begin;
    if (!inside || run.trace.kind(i) != MemoryKind::host) continue;
    if (op == Op::alloc) {
      const std::uint64_t size = run.trace.size_of(i);
      const bool ours = size >= 4100 && size < 6100;
      programs_block[run.trace.address(i)] = ours;
      allocs += ours;
      if (ours) threads.insert(run.trace.thread(i));
    } else if (op == Op::free) {
      frees += programs_block[run.trace.address(i)];
    }
  }
  EXPECT_EQ(allocs, run.counts.at("allocs"));
  EXPECT_EQ(frees, run.counts.at("frees"));
  EXPECT_EQ(threads.size(), 2u);
}

TEST(Record, a_second_thread_from_pthread_create_mid_run) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  expect_clean_second_thread("pthread");
}

TEST(Record, a_second_thread_that_glibc_starts_itself_mid_run) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ALLOCLAB_SKIP_UNDER_TSAN(
      "a thread glibc starts without pthread_create is unknown to the "
      "runtime, which crashes in it (the program alone does too)");
  expect_clean_second_thread("timer");
}

TEST(Record, realloc_chains_in_place_and_moving) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  const Traced run = record_program(dir, TORTURE_REALLOC);
  const RunCounts c = expect_clean_work_counts(run);
  if (!under_tsan) {  // ThreadSanitizer's realloc always moves
    EXPECT_GT(run.counts.at("in_place"), 0u);
    EXPECT_GT(run.counts.at("shrunk_in_place"), 0u);
  }
  EXPECT_GT(run.counts.at("moved"), 0u);
  // In place: free(old) then alloc at the same address, the alloc flagged realloc_in_place.
  // Moved: alloc(new) then free(old), nothing flagged.
  std::uint64_t in_place = 0, moved = 0, flagged = 0;
  bool inside = false;
  for (std::size_t i = 0; i + 1 < run.trace.size(); ++i) {
    flagged += run.trace.realloc_in_place(i);
    if (run.trace.op(i) == Op::run_begin || run.trace.op(i) == Op::run_end)
      inside = run.trace.op(i) == Op::run_begin;
    if (!inside) continue;
    const Op a = run.trace.op(i);
    const Op b = run.trace.op(i + 1);
    const bool same = run.trace.address(i) == run.trace.address(i + 1);
    if (a == Op::free && b == Op::alloc && same) {
      ++in_place;
      EXPECT_TRUE(run.trace.realloc_in_place(i + 1)) << "event " << i + 1;
    }
    if (a == Op::alloc && b == Op::free && !same) {
      ++moved;
      EXPECT_FALSE(run.trace.realloc_in_place(i)) << "event " << i;
    }
  }
  EXPECT_EQ(in_place, run.counts.at("in_place"));
  EXPECT_EQ(moved, run.counts.at("moved"));
  EXPECT_EQ(flagged, in_place);  // only the reallocs that kept their block
  // The resolver pairs each with its free, for the replay to keep the block.
  EXPECT_EQ(resolve(run.trace).in_place_reallocs.size(), in_place);
}

// Flushes that someone asked for (here the markers, short of label room, many times over) land
// inside moving reallocs too: each is still written alloc(new) then free(old), so the replay sees
// both blocks live at once, as they were.
TEST(Record, moving_reallocs_keep_their_order_across_requested_flushes) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  const Traced run = record_program(dir, TORTURE_REALLOC_FLUSHES);
  expect_no_anomalies(run);
  // The markers went round the label ring many times, each time asking for a flush.
  EXPECT_GT(run.counts.at("marks"), 4u * 4096u);  // 4,096 labels to a ring
  EXPECT_EQ(run.counts.at("moved"), run.counts.at("rounds"));
  const Trace& t = run.trace;
  constexpr std::uint64_t size = 64 * 1024;
  // The realloc thread's heap events, in trace order: per round alloc(p), alloc(blocker), then
  // the realloc as alloc(new), free(p), then free(blocker), free(new).
  std::uint64_t realloc_thread = 0;
  for (std::size_t i = 0; i < t.size() && realloc_thread == 0; ++i)
    if (t.op(i) == Op::alloc && t.size_of(i) == 2 * size)
      realloc_thread = t.origins()[t.origin_index(i)].thread;
  std::vector<std::size_t> heap;
  for (std::size_t i = 0; i < t.size(); ++i)
    if ((t.op(i) == Op::alloc || t.op(i) == Op::free) && t.kind(i) == MemoryKind::host &&
        t.origins()[t.origin_index(i)].thread == realloc_thread)
      heap.push_back(i);
  std::uint64_t reallocs = 0, in_order = 0;
  for (std::size_t k = 2; k + 1 < heap.size(); ++k) {
    const std::size_t i = heap[k];
    if (t.op(i) != Op::alloc || t.size_of(i) != 2 * size) continue;
    ++reallocs;
    const std::size_t old_alloc = heap[k - 2], next = heap[k + 1];
    const bool ok = t.op(old_alloc) == Op::alloc && t.size_of(old_alloc) == size &&
                    t.op(heap[k - 1]) == Op::alloc && t.op(next) == Op::free &&
                    t.address(next) == t.address(old_alloc);
    in_order += ok;
    if (!ok && reallocs - in_order <= 3)
      ADD_FAILURE() << "realloc at event " << i << " out of order";
  }
  EXPECT_EQ(reallocs, run.counts.at("rounds"));
  EXPECT_EQ(in_order, reallocs);
}

TEST(Record, memalign_family_with_alignments) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  const Traced run = record_program(dir, TORTURE_MEMALIGN);
  const RunCounts c = expect_clean_work_counts(run);
  EXPECT_EQ(run.counts.at("misaligned"), 0u);
  const auto aligned = [&](std::uint64_t a) {
    auto it = c.allocs_by_alignment.find(a);
    return it == c.allocs_by_alignment.end() ? 0 : it->second;
  };
  EXPECT_EQ(aligned(64), run.counts.at("align64"));
  EXPECT_EQ(aligned(256), run.counts.at("align256"));
  EXPECT_EQ(aligned(4096), run.counts.at("align4096"));
}

TEST(Record, fork_without_exec_leaves_the_parent_trace_whole_and_the_child_untraced) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  const Traced run = record_program(dir, TORTURE_FORK);
  const RunCounts c = expect_clean_work_counts(run);
  // The children allocate 5000 + i bytes, i in [1, 1000): none of that may appear.
  for (std::size_t i = 0; i < run.trace.size(); ++i)
    if (run.trace.op(i) == Op::alloc) {
      ASSERT_FALSE(run.trace.size_of(i) > 5000 && run.trace.size_of(i) < 6000) << "event " << i;
    }
}

// A handler that interrupts the tracer's own work (a record, a buffer hand-over, the thread-key
// registration) must still have its mmap/munmap recorded: run it with --gtest_repeat to see.
TEST(Record, signal_handler_events_nest_inside_recording) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  const Traced run = record_program(dir, TORTURE_SIGNAL);
  const RunCounts c = expect_clean_work_counts(run);
  EXPECT_EQ(c.maps, run.counts.at("maps"));
  EXPECT_EQ(c.unmaps, run.counts.at("maps"));
  EXPECT_GE(run.counts.at("maps"), 200u);
}

TEST(Record, static_constructors_and_destructors_that_allocate) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ALLOCLAB_SKIP_UNDER_TSAN("its operator new and delete do not go through malloc and free");
  ScratchDir dir;
  const Traced run = record_program(dir, TORTURE_STATIC_OBJECTS);
  expect_no_anomalies(run);
  EXPECT_EQ(count_in_runs(run.trace, "ctor").allocs, run.counts.at("ctor_allocs"));
  EXPECT_EQ(count_in_runs(run.trace, "main").allocs, run.counts.at("main_allocs"));
  EXPECT_EQ(count_in_runs(run.trace, "dtor").allocs, run.counts.at("dtor_allocs"));
  EXPECT_EQ(count_in_runs(run.trace, "dtor").frees, run.counts.at("dtor_allocs"));
}

TEST(Record, program_that_closes_every_descriptor) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  const Traced run = record_program(dir, TORTURE_CLOSEFDS);
  expect_clean_work_counts(run);
}

// The trace's metadata holds the command line, which need not be UTF-8 (a Latin-1 file name).
// Its JSON writer threw, uncaught, inside the traced program: std::terminate killed it with
// SIGABRT before main.
TEST(Record, a_command_line_that_is_not_utf8_neither_kills_the_program_nor_loses_the_trace) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  const std::string trace = dir.file("t.alt");
  const Recorded r = record(trace, std::string(TORTURE_STATUS) + " exit3 caf$(printf '\\351')");
  EXPECT_EQ(r.status, 3) << r.output;
  const Trace t = read_alt(trace);
  EXPECT_GT(t.size(), 0u);
  const std::string command = t.metadata.value("command_line", "");
  EXPECT_NE(command.find("caf\xef\xbf\xbd"), std::string::npos) << command;  // U+FFFD
}

TEST(Record, exit_status_and_fatal_signal_pass_through) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  EXPECT_EQ(record(dir.file("a.alt"), std::string(TORTURE_STATUS) + " exit3").status, 3);
  const Recorded killed = record(dir.file("b.alt"), std::string(TORTURE_STATUS) + " sigterm");
  EXPECT_EQ(killed.status, 128 + 15) << killed.output;
  EXPECT_NE(killed.output.find("signal 15"), std::string::npos) << killed.output;
  EXPECT_EQ(record(dir.file("c.alt"), std::string(TORTURE_STATUS)).status, 0);
  const Recorded missing = record(dir.file("d.alt"), "/nonexistent/program");
  EXPECT_EQ(missing.status, 127);
  EXPECT_NE(missing.output.find("cannot run"), std::string::npos) << missing.output;
}

// The writer is a process of its own: the program keeps its one thread (and with it glibc's
// lock-free single-thread malloc), and a program that waits for all its children does not wait
// for the writer.
TEST(Record, the_writer_is_neither_a_thread_of_the_program_nor_a_child_it_waits_for) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  const std::string trace = dir.file("t.alt");
  const Recorded r = record(
      trace, "/bin/sh -c 'grep Threads: /proc/$$/status; true & wait; echo waited'", "timeout 60");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("Threads:\t1\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("waited"), std::string::npos) << r.output;
  EXPECT_GT(read_alt(trace).size(), 10u) << "the shell's own allocations";
}

// With stacks the writer is a process too: it names the frames from outside the program.
TEST(Record, with_stacks_the_program_keeps_its_one_thread) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  const Recorded r =
      record(dir.file("t.alt"), "/bin/sh -c 'grep Threads: /proc/$$/status'", {}, "--stacks 4");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("Threads:\t1\n"), std::string::npos) << r.output;
  EXPECT_GT(read_alt(dir.file("t.alt")).size(), 10u);
}

// The writer starts with exec, which a program with a second thread already running as the
// tracer starts (here one that a preloaded library's constructor started) allows as well.
TEST(Record, a_program_with_a_second_thread_at_the_start_gets_a_writer_process_too) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  const Recorded r = record(dir.file("t.alt"), "/bin/sh -c 'grep Threads: /proc/$$/status'",
                            std::string("timeout 60 env LD_PRELOAD=") + THREAD_AT_START_LIBRARY);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("Threads:\t2\n"), std::string::npos) << r.output;
  EXPECT_GT(read_alt(dir.file("t.alt")).size(), 10u);
}

TEST(Record, refuses_to_overwrite_an_existing_trace) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  std::ofstream(dir.file("taken.alt")) << "mine";
  const Recorded r = record(dir.file("taken.alt"), std::string(TORTURE_STATUS));
  EXPECT_EQ(r.status, 2) << r.output;
  std::ifstream in(dir.file("taken.alt"));
  std::string text;
  in >> text;
  EXPECT_EQ(text, "mine");
}

TEST(Record, run_markers_from_c) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  const Traced run = record_program(dir, TORTURE_MARKERS);
  expect_no_anomalies(run);
  ASSERT_EQ(run.resolved.runs.size(), 3u);
  EXPECT_EQ(run.resolved.runs[0].label, "forward");
  EXPECT_EQ(run.resolved.runs[2].label.size(), 63u);
  EXPECT_EQ(count_in_runs(run.trace, "forward").allocs, 2u);
  std::uint64_t marks = 0;
  for (std::size_t i = 0; i < run.trace.size(); ++i)
    if (run.trace.op(i) == Op::mark) marks += run.trace.label(i) == "middle";
  EXPECT_EQ(marks, 3u);
}

TEST(Record, a_flood_of_markers_keeps_every_label) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  const std::string counts = dir.file("counts.txt");
  const Recorded r =
      record(dir.file("flood.alt"), std::string(TORTURE_MARKERS) + " " + counts + " flood");
  ASSERT_EQ(r.status, 0) << r.output;
  const Trace trace = read_alt(dir.file("flood.alt"));
  const ResolvedTrace resolved = resolve(trace);
  ASSERT_EQ(resolved.runs.size(), 1u);
  EXPECT_EQ(resolved.runs[0].label, "flood");
  std::uint64_t next = 0;  // the marks in program order, each with its own label
  for (std::size_t i = 0; i < trace.size(); ++i) {
    if (trace.op(i) != Op::mark) continue;
    ASSERT_EQ(trace.label(i), "m" + std::to_string(next)) << "event " << i;
    ++next;
  }
  EXPECT_EQ(next, read_counts(counts).at("marks"));
}

TEST(Record, markers_cost_nothing_without_the_tracer) {
  ScratchDir dir;
  const std::string counts = dir.file("counts.txt");
  EXPECT_EQ(std::system((std::string(TORTURE_MARKERS) + " " + counts).c_str()), 0);
  EXPECT_EQ(read_counts(counts).at("runs"), 3u);
}

TEST(Record, run_markers_from_python) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ALLOCLAB_SKIP_UNDER_TSAN("the interpreter is not instrumented and cannot host the runtime");
  if (!std::filesystem::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  ScratchDir dir;
  const std::string script = dir.file("script.py");
  std::ofstream(script) << "import sys\nsys.path.insert(0, '" << ALLOCLAB_PYTHON_DIR << "')\n"
                        << "import alloclab_markers as m\n"
                        << "assert m.traced()\n"
                        << "for i in range(2):\n"
                        << "    with m.run('forward'):\n"
                        << "        data = bytearray(1 << 20)\n"
                        << "        m.mark('inside')\n"
                        << "        del data\n"
                        << "m.mark('\u00e9' * 40)\n";
  const Recorded r = record(dir.file("py.alt"), "/usr/bin/python3 " + script);
  ASSERT_EQ(r.status, 0) << r.output;
  const Trace trace = read_alt(dir.file("py.alt"));
  const ResolvedTrace resolved = resolve(trace);
  EXPECT_EQ(resolved.anomalies.total(), 0u);
  ASSERT_EQ(resolved.runs.size(), 2u);
  EXPECT_EQ(resolved.runs[1].label, "forward");
  const RunCounts c = count_in_runs(trace, "forward");
  EXPECT_GE(c.allocs + c.maps, 2u);  // the bytearray, at least
  // 80 bytes of "\u00e9" cut to fit 63: before a character, not inside one (31 of them).
  std::string longest;
  for (std::size_t i = 0; i < trace.size(); ++i)
    if (trace.op(i) == Op::mark && trace.label(i).size() > longest.size())
      longest = std::string(trace.label(i));
  std::string expected;
  for (int k = 0; k < 31; ++k) expected += "\xc3\xa9";
  EXPECT_EQ(longest, expected);
}

TEST(Record, abort_leaves_a_readable_trace_up_to_the_abort) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  const Traced run = record_program(dir, TORTURE_ABORT, {}, 128 + 6);
  const RunCounts c = expect_clean_work_counts(run);
  EXPECT_EQ(run.resolved.anomalies.unterminated_runs, 1u);
}

// Records TORTURE_KILLED with `args`, waits for it to report its pid (once all its events
// happened) and `settle_ms` more, kills it with SIGKILL and returns its counters; `flush_period_ms`
// (non-empty) replaces the writer's flush period.
std::map<std::string, std::uint64_t> record_until_killed(
    const ScratchDir& dir, const std::string& trace, const std::vector<std::string>& args,
    const char* flush_period_ms, int settle_ms, const char* program = TORTURE_KILLED,
    const char* preload = nullptr, const std::function<void()>& before_the_kill = {}) {
  const std::string counts = dir.file("counts.txt");
  const pid_t recorder = ::fork();
  if (recorder == 0) {
    if (flush_period_ms) ::setenv("ALLOCLAB_FLUSH_PERIOD_MS", flush_period_ms, 1);
    if (preload) ::setenv("LD_PRELOAD", preload, 1);
    std::vector<const char*> argv = {ALLOCLAB_CLI, "record", "-o",          trace.c_str(),
                                     "--",         program,  counts.c_str()};
    for (const std::string& arg : args) argv.push_back(arg.c_str());
    argv.push_back(nullptr);
    ::execv(ALLOCLAB_CLI, const_cast<char* const*>(argv.data()));
    ::_exit(127);
  }
  std::map<std::string, std::uint64_t> c;
  for (int waited = 0; waited < 20000 && !c.count("pid"); waited += 20) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    c = read_counts(counts);
  }
  EXPECT_TRUE(c.count("pid")) << "the program never reported its pid";
  if (c.count("pid")) {
    std::this_thread::sleep_for(std::chrono::milliseconds(settle_ms));
    if (before_the_kill) before_the_kill();
    ::kill(static_cast<pid_t>(c.at("pid")), SIGKILL);
  }
  int status = 0;
  ::waitpid(recorder, &status, 0);
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGKILL);
  return c;
}

TEST(Record, sigkill_leaves_every_event_flushed_before_it_on_disk) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  const std::string trace = dir.file("trace.alt");
  // 600 ms: more than the writer's flush period.
  const auto c = record_until_killed(dir, trace, {}, nullptr, 600);
  ASSERT_TRUE(c.count("pid"));

  const Trace t = read_alt(trace);
  const ResolvedTrace r = resolve(t);
  EXPECT_EQ(r.anomalies.total(), 0u);
  const RunCounts in_run = count_in_runs(t, "work");
  EXPECT_EQ(in_run.allocs, c.at("allocs"));
  EXPECT_EQ(in_run.frees, c.at("frees"));
}

// The interposer is not instrumented; preloaded behind the tracer into a ThreadSanitizer-built
// program, the program died of SIGSEGV before reporting anything (not diagnosed further).
#define STUCK_REALLOC_UNDER_TSAN "an uninstrumented realloc interposer crashed the runtime"

// A thread that stops for good inside realloc (below the tracer, between the reservation of its
// record and its completion) must not stop the writer: the other threads' events still reach
// the disk within about a second, and the program is not made to wait for buffer room. The
// writer used to wait for that record as long as it took: nothing more was written, and a busy
// program would have waited ~10 s for room and then dropped events.
TEST(Record, a_thread_stopped_inside_an_allocation_call_does_not_stop_the_writer) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ALLOCLAB_SKIP_UNDER_TSAN(STUCK_REALLOC_UNDER_TSAN);
  ScratchDir dir;
  const std::string trace = dir.file("trace.alt");
  // 2.5 s: the writer gives up on the record after ~1 s, then writes the rest at its next flush.
  const auto c = record_until_killed(dir, trace, {"kill"}, nullptr, 2500, TORTURE_STUCK_REALLOC,
                                     STUCK_REALLOC_LIBRARY);
  ASSERT_TRUE(c.count("pid"));
  const Trace t = read_alt(trace);
  EXPECT_EQ(resolve(t).anomalies.total(), 0u);
  const RunCounts in_run = count_in_runs(t, "work");
  EXPECT_EQ(in_run.runs, 1u);
  EXPECT_EQ(in_run.allocs, c.at("allocs"));
  EXPECT_EQ(in_run.frees, c.at("frees"));
}

// Records torture_stuck_realloc in `mode` (exit, late) with the interposer preloaded, checks
// that it exited normally and that its run holds exactly the program's counts; returns what
// `record` printed.
std::string record_stuck_realloc(const ScratchDir& dir, const std::string& mode, Trace& trace) {
  const std::string counts = dir.file("counts.txt");
  const Recorded r =
      record(dir.file("t.alt"), std::string(TORTURE_STUCK_REALLOC) + " " + counts + " " + mode,
             std::string("LD_PRELOAD=") + STUCK_REALLOC_LIBRARY);
  EXPECT_EQ(r.status, 0) << r.output;
  trace = read_alt(dir.file("t.alt"));
  EXPECT_EQ(resolve(trace).anomalies.total(), 0u);
  const RunCounts in_run = count_in_runs(trace, "work");
  EXPECT_EQ(in_run.allocs, read_counts(counts).at("allocs"));
  EXPECT_EQ(in_run.frees, read_counts(counts).at("frees"));
  return r.output;
}

// The same thread still inside the call when the program exits: the trace holds everything
// else, and the summary says that one event was left out.
TEST(Record, an_event_still_in_progress_at_exit_is_reported_missing) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ALLOCLAB_SKIP_UNDER_TSAN(STUCK_REALLOC_UNDER_TSAN);
  ScratchDir dir;
  Trace t;
  const std::string output = record_stuck_realloc(dir, "exit", t);
  EXPECT_NE(output.find("1 event still in progress"), std::string::npos) << output;
}

// The same, after the program closed its stderr and opened a file of its own, which took
// descriptor 2: the tracer's message must not land in that file.
TEST(Record, the_tracer_never_writes_into_a_file_that_took_over_descriptor_2) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ALLOCLAB_SKIP_UNDER_TSAN(STUCK_REALLOC_UNDER_TSAN);
  ScratchDir dir;
  Trace t;
  record_stuck_realloc(dir, "exit-reopened", t);
  std::ifstream data(dir.file("counts.txt.data"));
  const std::string text((std::istreambuf_iterator<char>(data)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "data\n");
}

// The call returns after 1.5 s, when the writer has given up on its record and written the
// main thread's events after it: the record is written late, in the order that keeps each
// address's history consistent (the 32-byte block's free by the realloc, then the new block's
// allocation and free).
TEST(Record, a_record_completed_after_the_writer_gave_up_on_it_is_written_late) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ALLOCLAB_SKIP_UNDER_TSAN(STUCK_REALLOC_UNDER_TSAN);
  ScratchDir dir;
  Trace t;
  const std::string output = record_stuck_realloc(dir, "late", t);
  EXPECT_EQ(output.find("in progress"), std::string::npos) << output;
  // The realloc's three events, in an order consistent for both blocks.
  std::size_t old_alloc = t.size(), old_free = t.size(), new_alloc = t.size(), new_free = t.size();
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t.op(i) == Op::alloc && t.size_of(i) == 32 && old_alloc == t.size()) old_alloc = i;
    if (t.op(i) == Op::alloc && t.size_of(i) == 777778) new_alloc = i;
  }
  ASSERT_LT(old_alloc, t.size());
  ASSERT_LT(new_alloc, t.size());
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t.op(i) != Op::free) continue;
    if (t.address(i) == t.address(old_alloc) && i > old_alloc && old_free == t.size()) old_free = i;
    if (t.address(i) == t.address(new_alloc) && i > new_alloc) new_free = i;
  }
  EXPECT_LT(old_free, t.size()) << "the realloc's free of the old block is missing";
  EXPECT_LT(new_free, t.size()) << "the new block's free is missing";
}

TEST(Record, a_filled_buffer_is_written_without_waiting_for_the_flush_period) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  const std::string trace = dir.file("trace.alt");
  // 175,000 events: the first 140,000 (before the pause) fill two buffers of 65,536, whose
  // flushes write everything up to the pause; the rest fills only part of a third buffer, which
  // waits for the period, here far beyond the test. So while the program waits to be killed,
  // the file holds the first two buffers' worth and not all.
  std::size_t written_before_the_kill = 0;
  AltLoadStats stats;
  const auto c =
      record_until_killed(dir, trace, {"100000", "80000"}, "600000", 1000, TORTURE_KILLED, nullptr,
                          [&] { written_before_the_kill = read_alt(trace, &stats).size(); });
  ASSERT_TRUE(c.count("pid"));
  EXPECT_GE(written_before_the_kill, 2u * 65536u);
  EXPECT_LT(written_before_the_kill, 175000u);
  EXPECT_EQ(stats.damaged_chunks, 0u);
}

// A writer process outlives the program: after SIGKILL it writes what was still in the buffers,
// also what no flush had taken yet (here the period is far beyond the test), and `record` waits
// for it before it reads the trace.
TEST(Record, a_killed_program_leaves_every_completed_event_to_its_writer_process) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  const std::string trace = dir.file("trace.alt");
  const auto c = record_until_killed(dir, trace, {"100000", "80000"}, "600000", 300);
  ASSERT_TRUE(c.count("pid"));
  AltLoadStats stats;
  const Trace t = read_alt(trace, &stats);
  EXPECT_EQ(stats.damaged_chunks, 0u);
  EXPECT_EQ(resolve(t).anomalies.total(), 0u);
  const RunCounts in_run = count_in_runs(t, "work");
  EXPECT_EQ(in_run.allocs, c.at("allocs"));
  EXPECT_EQ(in_run.frees, c.at("frees"));
}

// The process whose parent is `parent` and whose name is `name`, or 0.
pid_t child_named(pid_t parent, const std::string& name) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string number = entry.path().filename().string();
    if (number.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto open = text.find('('), close = text.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close + 4 > text.size())
      continue;
    long ppid = 0;
    if (std::sscanf(text.c_str() + close + 4, "%ld", &ppid) != 1 || ppid != parent) continue;
    if (text.substr(open + 1, close - open - 1) == name)
      return static_cast<pid_t>(std::stol(text.substr(0, open)));
  }
  return 0;
}

// A writer process that someone kills must not hold the program up: tracing stops with a
// message, the program runs on, and the trace keeps what was written. (Waiting for room in
// buffers nobody empties any more, the program used to wait ~10 s at every buffer it filled.)
TEST(Record, a_killed_writer_process_stops_tracing_but_not_the_program) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  const std::string trace = dir.file("t.alt");
  const std::string counts = dir.file("c.txt");
  const std::string output = dir.file("out.txt");
  const pid_t recorder = ::fork();
  if (recorder == 0) {
    const int fd = ::open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execl(ALLOCLAB_CLI, ALLOCLAB_CLI, "record", "-o", trace.c_str(), "--", TORTURE_FLOOD,
            counts.c_str(), "20000000", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // `record` is the writer's parent once the short-lived child between them has exited.
  pid_t writer = 0;
  for (int waited = 0; waited < 20000 && writer == 0; waited += 10) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    writer = child_named(recorder, "alloclab-writer");
  }
  EXPECT_NE(writer, 0) << "no writer process";
  if (writer != 0) {
    // Killed once it has written some of the trace. The file is read while the writer is still
    // writing it: a half-written header or chunk counts as nothing written yet.
    const auto events_written = [&trace]() -> std::size_t {
      try {
        return read_alt(trace).size();
      } catch (const std::exception&) {
        return 0;
      }
    };
    for (int waited = 0; waited < 20000 && events_written() == 0; waited += 10)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ::kill(writer, SIGKILL);
  }
  int status = 0;
  bool ended = false;
  for (int waited = 0; waited < 120000 && !ended; waited += 20) {
    ended = ::waitpid(recorder, &status, WNOHANG) == recorder;
    if (!ended) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!ended) {
    if (const pid_t program = child_named(recorder, "torture_flood")) ::kill(program, SIGKILL);
    ::waitpid(recorder, &status, 0);
  }
  ASSERT_TRUE(ended) << "the program was still held up 2 minutes later";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  std::ifstream in(output);
  const std::string said((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(said.find("the writer process ended before the program"), std::string::npos) << said;
  EXPECT_EQ(read_counts(counts).at("allocs"), 2u * 20000000u) << said;
  AltLoadStats stats;
  EXPECT_GT(read_alt(trace, &stats).size(), 0u);
}

// Two threads allocate far faster than the writer encodes (glibc's per-thread cache serves
// them in nanoseconds), so the writer ends up millions of events behind, and reallocs keep it
// holding events back from flush to flush. Every event must still be written, in order: a
// flush that held events back and then merged two threads' runs used to drop them (tens of
// thousands of events lost, and the anomalies that follow from it). And the writer works
// through its backlog a slice at a time: taking it in one batch made the traced program's peak
// RSS 0.4-0.5 GB here (the batch's arrays on top of the 256 MiB the program's buffers may
// hold), where the bound now is those buffers and some 40 MB.
TEST(Record, a_writer_far_behind_writes_every_event_in_bounded_memory) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  const Traced run = record_program(dir, TORTURE_FLOOD, under_tsan ? "200000" : "1500000");
  const RunCounts c = expect_clean_work_counts(run);
  EXPECT_EQ(c.runs, 1u);
  EXPECT_GE(c.allocs, under_tsan ? 400000u : 3000000u);
  EXPECT_NE(run.recorded.output.find("0 dropped"), std::string::npos) << run.recorded.output;
  if (under_tsan) return;  // its shadow memory says nothing about the tracer's
  // The largest of this process's waited-for descendants: the traced program, or its writer
  // process (which maps the buffers it reads, so they count in both).
  rusage usage{};
  ASSERT_EQ(getrusage(RUSAGE_CHILDREN, &usage), 0);
  EXPECT_LT(usage.ru_maxrss, 350L * 1024) << "peak RSS in KiB of the traced program";
}

// The same flood with a timer whose handler marks every 50 us in the workers: markers from
// signal handlers while the writer is far behind, every event counted exactly. (A handler that
// waits for label room may have interrupted one of its thread's records, which the flush it
// waits for gives up on; that record must still be written once it completes. The path is
// timing-dependent and rare: this test does not reliably reach it.)
TEST(Record, marks_from_a_signal_handler_while_the_writer_is_behind_lose_nothing) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  const Traced run = record_program(dir, TORTURE_FLOOD,
                                    under_tsan ? "100000 signal-marks" : "1500000 signal-marks");
  const RunCounts c = expect_clean_work_counts(run);
  EXPECT_EQ(c.runs, 1u);
  EXPECT_NE(run.recorded.output.find("0 dropped"), std::string::npos) << run.recorded.output;
}

TEST(Record, metadata_describes_the_recording) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  const Recorded r = record(dir.file("m.alt"), std::string(TORTURE_STATUS) + " exit3");
  ASSERT_EQ(r.status, 3);
  const Trace trace = read_alt(dir.file("m.alt"));
  EXPECT_EQ(trace.metadata.value("clock", ""), "CLOCK_MONOTONIC");
  EXPECT_NE(trace.metadata.value("command_line", "").find("exit3"), std::string::npos);
  EXPECT_GT(trace.metadata.value("pid", 0), 0);
  EXPECT_EQ(trace.metadata.value("min_size", 1), 0);
  EXPECT_TRUE(trace.metadata.contains("host"));
}

TEST(Record, min_size_skips_small_blocks_and_their_frees) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  const std::string counts = dir.file("counts.txt");
  const Recorded r =
      record(dir.file("t.alt"), std::string(TORTURE_THREADS) + " " + counts, {}, "--min-size 1000");
  ASSERT_EQ(r.status, 0) << r.output;
  const Trace trace = read_alt(dir.file("t.alt"));
  EXPECT_EQ(resolve(trace).anomalies.total(), 0u);
  EXPECT_EQ(trace.metadata.value("min_size", 0), 1000);
  const RunCounts c = count_in_runs(trace, "work");
  // Usable size >= 1000 means requested size > 1000 - 24 (glibc's chunk overhead and rounding).
  for (std::size_t i = 0; i < trace.size(); ++i)
    if (trace.op(i) == Op::alloc) {
      ASSERT_GE(trace.size_of(i), 1000u - 32u) << "event " << i;
    }
  EXPECT_GT(c.allocs, 0u);
  EXPECT_LT(c.allocs, read_counts(counts).at("allocs"));
  EXPECT_EQ(c.allocs, c.frees + (c.allocs - c.frees));  // pairs are checked by resolve()
}

}  // namespace
}  // namespace alloclab::test
