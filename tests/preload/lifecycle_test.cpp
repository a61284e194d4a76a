// `alloclab record` across a program's processes (fork, exec, abort in a child) and when the
// output is unsafe (symbolic links, setuid programs) or cannot be written (file size limit).
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "record_test_util.hpp"

namespace alloclab::test {
namespace {

std::string dir_of(const ScratchDir& dir) {
  return std::filesystem::path(dir.file("x")).parent_path().string();
}

// Every trace file in `dir` but `root`, by name.
std::vector<std::string> other_traces(const ScratchDir& dir, const std::string& root) {
  std::vector<std::string> found;
  for (const auto& entry : std::filesystem::directory_iterator(dir_of(dir))) {
    const std::string path = entry.path().string();
    if (entry.path().extension() == ".alt" && path != root) found.push_back(path);
  }
  // t.PID.alt before t.PID.2.alt
  std::sort(found.begin(), found.end(), [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() < b.size() : a < b;
  });
  return found;
}

// Counter files the children wrote: COUNTS.<pid>.
std::vector<std::pair<std::string, std::string>> child_counts(const ScratchDir& dir,
                                                              const std::string& counts) {
  std::vector<std::pair<std::string, std::string>> found;
  const std::string prefix = std::filesystem::path(counts).filename().string() + ".";
  for (const auto& entry : std::filesystem::directory_iterator(dir_of(dir))) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(prefix)) found.emplace_back(name.substr(prefix.size()), entry.path());
  }
  return found;
}

struct Loaded {
  Trace trace;
  ResolvedTrace resolved;
};

// A forked child's trace starts at fork: a block it inherited and frees (the program frees one on
// purpose, glibc a few at exit) is unknown to it, and counted as inherited, not as an anomaly.
Loaded load(const std::string& path, bool forked = false) {
  Loaded l;
  l.trace = read_alt(path);
  EXPECT_TRUE(l.trace.warnings.empty()) << path << ": " << l.trace.warnings.front();
  l.resolved = resolve(l.trace);
  const Anomalies& a = l.resolved.anomalies;
  EXPECT_EQ(a.total(), 0u) << path << ": free_unknown " << a.free_unknown;
  if (!forked) {
    EXPECT_EQ(a.inherited_frees, 0u) << path;
  }
  return l;
}

void expect_parent_whole(const std::string& trace, const std::string& counts) {
  const Loaded parent = load(trace);
  const auto c = read_counts(counts);
  const RunCounts work = count_in_runs(parent.trace, "work");
  EXPECT_EQ(work.allocs, c.at("allocs"));
  EXPECT_EQ(work.frees, c.at("frees"));
}

TEST(RecordLifecycle, follow_fork_gives_each_child_its_own_trace_and_leaves_the_parent_whole) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  const std::string trace = dir.file("t.alt");
  const std::string counts = dir.file("c.txt");
  const Recorded r =
      record(trace, std::string(TORTURE_FORK_FOLLOW) + " " + counts, {}, "--follow-fork");
  ASSERT_EQ(r.status, 0) << r.output;
  expect_parent_whole(trace, counts);
  EXPECT_EQ(read_counts(counts).at("children_as_expected"), 6u);
  const auto children = child_counts(dir, counts);
  ASSERT_EQ(children.size(), 6u);
  EXPECT_EQ(other_traces(dir, trace).size(), 6u);
  for (const auto& [pid, child_counts_file] : children) {
    const std::string child_trace = dir.file("t." + pid + ".alt");
    ASSERT_TRUE(std::filesystem::exists(child_trace)) << child_trace;
    EXPECT_NE(r.output.find("to " + child_trace), std::string::npos) << r.output;
    const Loaded child = load(child_trace, true);
    EXPECT_GE(child.resolved.anomalies.inherited_frees, 1u);  // the parent's block it frees
    EXPECT_EQ(child.trace.metadata.value("image", ""), "fork");
    EXPECT_EQ(std::to_string(child.trace.metadata.value("pid", 0)), pid);
    const auto c = read_counts(child_counts_file);
    const RunCounts run = count_in_runs(child.trace, "child");
    EXPECT_EQ(run.runs, 1u);
    EXPECT_EQ(run.allocs, c.at("allocs"));
    EXPECT_EQ(run.frees, c.at("frees"));
    // Only the child's own events: nothing of the parent's helper threads (100..102 bytes).
    for (std::size_t i = 0; i < child.trace.size(); ++i)
      ASSERT_FALSE(child.trace.op(i) == Op::alloc && child.trace.size_of(i) >= 100 &&
                   child.trace.size_of(i) <= 102)
          << child_trace << " event " << i;
  }
}

TEST(RecordLifecycle, without_follow_fork_children_of_a_threaded_parent_write_nothing) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  const std::string trace = dir.file("t.alt");
  const std::string counts = dir.file("c.txt");
  const Recorded r = record(trace, std::string(TORTURE_FORK_FOLLOW) + " " + counts);
  ASSERT_EQ(r.status, 0) << r.output;
  expect_parent_whole(trace, counts);
  EXPECT_EQ(read_counts(counts).at("children_as_expected"), 6u);
  EXPECT_EQ(child_counts(dir, counts).size(), 6u);
  EXPECT_TRUE(other_traces(dir, trace).empty());
  const RunCounts children = count_in_runs(read_alt(trace), "child");
  EXPECT_EQ(children.runs, 0u);
}

TEST(RecordLifecycle, a_child_that_aborts_leaves_its_trace_up_to_the_abort) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  const std::string trace = dir.file("t.alt");
  const std::string counts = dir.file("c.txt");
  const Recorded r = record(trace, std::string(TORTURE_FORK_FOLLOW) + " " + counts + " abort", {},
                            "--follow-fork");
  ASSERT_EQ(r.status, 0) << r.output;
  expect_parent_whole(trace, counts);
  EXPECT_EQ(read_counts(counts).at("children_as_expected"), 6u);
  const auto children = child_counts(dir, counts);
  ASSERT_EQ(children.size(), 6u);
  for (const auto& [pid, child_counts_file] : children) {
    const Loaded child = load(dir.file("t." + pid + ".alt"), true);
    const auto c = read_counts(child_counts_file);
    const RunCounts run = count_in_runs(child.trace, "child");
    EXPECT_EQ(run.allocs, c.at("allocs"));
    EXPECT_EQ(run.frees, c.at("frees"));
    EXPECT_EQ(child.resolved.anomalies.unterminated_runs, 1u);
  }
}

TEST(RecordLifecycle, exec_in_place_flushes_first_and_follows_only_with_the_flag) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  for (const std::string how : {"inplace", "inplace-at", "inplace-syscall"})
    for (const bool follow : {false, true}) {
      SCOPED_TRACE(how + (follow ? " --follow-exec" : ""));
      ScratchDir dir;
      const std::string trace = dir.file("t.alt");
      const std::string counts = dir.file("c.txt");
      const Recorded r = record(trace, std::string(TORTURE_EXEC) + " " + counts + " " + how, {},
                                follow ? "--follow-exec" : "");
      ASSERT_EQ(r.status, 0) << r.output;
      const auto c = read_counts(counts);
      const Loaded root = load(trace);
      EXPECT_EQ(count_in_runs(root.trace, "before").allocs, c.at("before_allocs"));
      EXPECT_EQ(count_in_runs(root.trace, "image").runs, 0u);
      EXPECT_GT(c.at("image_allocs"), 0u);  // the new image ran
      const auto others = other_traces(dir, trace);
      if (!follow) {
        EXPECT_TRUE(others.empty());
        // The trace holds only what ran before the exec: record says so, and how to get the rest.
        EXPECT_NE(r.output.find("replaced itself by exec with " +
                                std::filesystem::canonical(TORTURE_EXEC).string() +
                                ", which was not traced"),
                  std::string::npos)
            << r.output;
        EXPECT_NE(r.output.find("--follow-exec traces it too"), std::string::npos) << r.output;
        continue;
      }
      EXPECT_EQ(r.output.find("note:"), std::string::npos) << r.output;
      const std::string pid = std::to_string(root.trace.metadata.value("pid", 0));
      ASSERT_EQ(others, std::vector<std::string>{dir.file("t." + pid + ".alt")}) << r.output;
      const Loaded image = load(others.front());
      EXPECT_EQ(image.trace.metadata.value("image", ""), "exec");
      EXPECT_EQ(count_in_runs(image.trace, "image").allocs, c.at("image_allocs"));
    }
}

TEST(RecordLifecycle, ending_without_exit_handlers_flushes_first) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  for (const std::string how : {"_exit", "_Exit", "exit_group", "quick_exit"}) {
    SCOPED_TRACE(how);
    ScratchDir dir;
    const std::string trace = dir.file("t.alt");
    const std::string counts = dir.file("c.txt");
    // A flush period of ten minutes: nothing reaches the file unless the exit itself flushes.
    const Recorded r = record(trace, std::string(TORTURE_EXIT_NOW) + " " + counts + " " + how,
                              "ALLOCLAB_FLUSH_PERIOD_MS=600000");
    EXPECT_EQ(r.status, 3) << r.output;
    const auto c = read_counts(counts);
    const Loaded root = load(trace);
    EXPECT_EQ(count_in_runs(root.trace, "work").allocs, c.at("allocs"));
    EXPECT_EQ(root.resolved.anomalies.total(), 0u);
    // The program's at_quick_exit handlers run before the flush.
    if (how == "quick_exit") {
      EXPECT_EQ(count_in_runs(root.trace, "quick").allocs, 100u);
    }
  }
}

TEST(RecordLifecycle, fork_then_exec_gets_one_file_per_followed_image) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  struct Case {
    std::string flags;
    std::vector<std::string> images;  // of the child's files, in name order
    std::vector<std::string> notes;   // what record says was left untraced
  };
  const std::string fork_note = "note: 1 forked process was not traced; --follow-fork traces it";
  const std::string exec_note = "note: 1 program started by exec was not traced (the first: " +
                                std::filesystem::canonical(TORTURE_EXEC).string() +
                                "); --follow-exec traces it";
  const Case cases[] = {{"", {}, {fork_note, exec_note}},
                        {"--follow-fork", {"fork"}, {exec_note}},
                        {"--follow-exec", {"exec"}, {fork_note}},
                        {"--follow-fork --follow-exec", {"fork", "exec"}, {}}};
  for (const Case& test : cases) {
    SCOPED_TRACE(test.flags);
    ScratchDir dir;
    const std::string trace = dir.file("t.alt");
    const std::string counts = dir.file("c.txt");
    const Recorded r =
        record(trace, std::string(TORTURE_EXEC) + " " + counts + " spawn", {}, test.flags);
    ASSERT_EQ(r.status, 0) << r.output;
    for (const std::string& note : test.notes)
      EXPECT_NE(r.output.find(note), std::string::npos) << note << "\n" << r.output;
    std::size_t notes = 0;
    for (std::size_t at = r.output.find("note:"); at != std::string::npos;
         at = r.output.find("note:", at + 1))
      ++notes;
    EXPECT_EQ(notes, test.notes.size()) << r.output;
    const auto c = read_counts(counts);
    EXPECT_EQ(count_in_runs(load(trace).trace, "before").allocs, c.at("before_allocs"));
    const auto others = other_traces(dir, trace);
    ASSERT_EQ(others.size(), test.images.size()) << r.output;
    for (std::size_t i = 0; i < others.size(); ++i) {
      const Loaded child = load(others[i], test.images[i] == "fork");
      EXPECT_EQ(child.trace.metadata.value("image", ""), test.images[i]) << others[i];
      if (test.images[i] == "exec") {
        EXPECT_EQ(count_in_runs(child.trace, "image").allocs, c.at("image_allocs"));
      } else {
        bool own_event = false;  // the forked child's malloc(4242) before its exec
        for (std::size_t e = 0; e < child.trace.size(); ++e)
          own_event |= child.trace.op(e) == Op::alloc && child.trace.size_of(e) == 4242;
        EXPECT_TRUE(own_event) << others[i];
      }
    }
    if (others.size() == 2) {  // the same pid: the exec'd image takes the next name
      EXPECT_EQ(others[1].substr(0, others[1].size() - 6) + ".alt", others[0]);
    }
  }
}

// bash defines its own getenv and setenv, over its shell variables. The tracer once set its
// "first image started" variable through them before bash's main(); from then on bash's getenv
// found no environment at all, and the root trace was never written ("cannot create"). The
// variable must also reach what bash execs, through the environment bash exports.
TEST(RecordLifecycle, a_bash_script_is_traced_and_so_is_what_it_execs) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ALLOCLAB_SKIP_UNDER_TSAN("an uninstrumented program (bash) crashes with the instrumented tracer");
  ScratchDir dir;
  const std::string trace = dir.file("t.alt");
  const std::string counts = dir.file("c.txt");
  // $(...) forks a subshell; exec replaces bash with the torture program.
  const Recorded r = record(
      trace,
      "bash -c 'answer=$(echo 42); exec " + std::string(TORTURE_REALLOC) + " " + counts + "'", {},
      "--follow-exec");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output.find("not tracing"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("note: 1 forked process was not traced"), std::string::npos) << r.output;
  const Loaded root = load(trace);
  EXPECT_EQ(root.trace.metadata.value("image", ""), "root");
  EXPECT_GT(root.trace.size(), 100u) << "bash's own allocations";
  const auto others = other_traces(dir, trace);
  ASSERT_EQ(others.size(), 1u) << r.output;
  const Loaded image = load(others.front());
  EXPECT_EQ(image.trace.metadata.value("image", ""), "exec");
  const auto c = read_counts(counts);
  const RunCounts work = count_in_runs(image.trace, "work");
  EXPECT_EQ(work.allocs, c.at("allocs"));
  EXPECT_EQ(work.frees, c.at("frees"));
}

namespace {

// The header and the first round fit, the rest does not (ThreadSanitizer's allocator hands out
// addresses that compress less).
constexpr std::uint64_t small_file_limit = under_tsan ? 65536 : 8192;

void expect_a_readable_prefix_of_at_most(const Recorded& r, const std::string& trace,
                                         const std::string& counts) {
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("is incomplete"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("File too large"), std::string::npos) << r.output;
  EXPECT_LE(std::filesystem::file_size(trace), small_file_limit);
  // What was written is a readable prefix: whole chunks, events that pair up.
  const Loaded l = load(trace);
  const RunCounts work = count_in_runs(l.trace, "work");
  EXPECT_GT(work.allocs, 0u);
  EXPECT_LT(work.allocs, read_counts(counts).at("allocs"));
  EXPECT_EQ(read_counts(counts).at("allocs"), 40u * 5000u);
}

}  // namespace

// A limit the program sets for itself binds neither the trace nor its writer, a process of its
// own started before: the trace is whole.
TEST(RecordLifecycle, a_file_size_limit_the_program_sets_itself_leaves_the_trace_whole) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  const std::string trace = dir.file("t.alt");
  const std::string counts = dir.file("c.txt");
  const Recorded r = record(
      trace, std::string(TORTURE_DISKFULL) + " " + counts + " " + std::to_string(small_file_limit));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output.find("is incomplete"), std::string::npos) << r.output;
  EXPECT_EQ(count_in_runs(load(trace).trace, "work").allocs, read_counts(counts).at("allocs"));
}

TEST(RecordLifecycle, file_size_limit_stops_the_trace_but_not_the_program) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  const std::string trace = dir.file("t.alt");
  const std::string counts = dir.file("c.txt");
  // The limit from the start, for `record`, the program and its writer; the program's own
  // setrlimit then cannot raise it.
  const Recorded r = record(trace, std::string(TORTURE_DISKFULL) + " " + counts + " 0",
                            "prlimit --fsize=" + std::to_string(small_file_limit));
  expect_a_readable_prefix_of_at_most(r, trace, counts);
}

TEST(RecordLifecycle, a_forked_child_that_cannot_write_its_header_is_not_killed_by_SIGXFSZ) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  const std::string trace = dir.file("t.alt");
  const std::string counts = dir.file("c.txt");
  const Recorded r =
      record(trace, std::string(TORTURE_DISKFULL) + " " + counts + " 1 fork", {}, "--follow-fork");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(read_counts(counts).at("children_ok"), 1u) << r.output;
  EXPECT_NE(r.output.find("not tracing pid"), std::string::npos) << r.output;
  EXPECT_TRUE(other_traces(dir, trace).empty());  // no half-written file left behind
}

TEST(RecordLifecycle, never_writes_through_a_symbolic_link) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  const std::string victim = dir.file("victim.txt");
  std::ofstream(victim) << "precious";
  std::filesystem::create_symlink(victim, dir.file("link.alt"));
  std::filesystem::create_symlink(dir.file("absent.txt"), dir.file("dangling.alt"));
  for (const char* link : {"link.alt", "dangling.alt"}) {
    const Recorded r = record(dir.file(link), std::string(TORTURE_STATUS));
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find("symbolic link"), std::string::npos) << r.output;
  }
  // The tracer itself, should a link appear after `record` looked: O_NOFOLLOW | O_EXCL.
  const CliResult direct =
      run_shell("LD_PRELOAD=" + std::string(ALLOCLAB_PRELOAD_LIBRARY) +
                " ALLOCLAB_OUTPUT=" + dir.file("dangling.alt") + " " + TORTURE_STATUS);
  EXPECT_EQ(direct.status, 0) << direct.output;
  EXPECT_NE(direct.output.find("not tracing"), std::string::npos) << direct.output;
  EXPECT_FALSE(std::filesystem::exists(dir.file("absent.txt")));
  std::string text;
  std::ifstream(victim) >> text;
  EXPECT_EQ(text, "precious");
}

// A SIGTERM for `record` alone (kill PID, a batch system stopping the job) once killed record
// and left the program running on its own, its summary never printed.
TEST(RecordLifecycle, sigterm_to_record_is_passed_on_to_the_program) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  const std::string trace = dir.file("t.alt");
  const std::string counts = dir.file("c.txt");
  // The program allocates, reports its counters, then waits forever; SIGTERM comes once the
  // writer has flushed (as for SIGKILL, the events of the last ~100 ms would be lost).
  const CliResult r = run_shell(
      "{ " + std::string(ALLOCLAB_CLI) + " record -o " + trace + " -- " + TORTURE_KILLED + " " +
      counts + " & record=$!; until grep -q pid= " + counts +
      " 2>/dev/null; do sleep 0.05; done; sleep 0.3; kill -TERM $record; " + "wait $record; }");
  EXPECT_EQ(r.status, 128 + SIGTERM) << r.output;
  EXPECT_NE(r.output.find("killed by signal 15"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("alloclab: recorded "), std::string::npos) << r.output;
  const Trace t = read_alt(trace);
  EXPECT_EQ(count_in_runs(t, "work").allocs, read_counts(counts).at("allocs"));
  const int pid = t.metadata.value("pid", 0);
  ASSERT_GT(pid, 0);
  EXPECT_NE(kill(pid, 0), 0) << "the program must be gone";
}

// A trace that could never be written is refused before the program runs, not found missing
// after a long run.
TEST(RecordLifecycle, an_output_directory_that_does_not_exist_is_refused_up_front) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  const std::string ran = dir.file("ran");
  std::ofstream(dir.file("plain")) << "a file, not a directory";
  for (const auto& [output, why] :
       {std::pair{dir.file("absent/t.alt"), "directory " + dir.file("absent") + " does not exist"},
        std::pair{dir.file("plain/t.alt"), dir.file("plain") + " is not a directory"}}) {
    const Recorded r = record(output, "touch " + ran);
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_EQ(r.output, "alloclab: error: " + output + ": " + why + "\n");
    EXPECT_FALSE(std::filesystem::exists(ran)) << "the program must not have run";
  }
}

TEST(RecordLifecycle, refuses_setuid_and_setgid_programs) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  ScratchDir dir;
  for (const auto& [name, mode] : {std::pair{"suid", 04755}, std::pair{"sgid", 02755}}) {
    const std::string program = dir.file(name);
    std::filesystem::copy_file(TORTURE_STATUS, program);
    ASSERT_EQ(::chmod(program.c_str(), static_cast<mode_t>(mode)), 0);
    const Recorded r = record(dir.file(std::string(name) + ".alt"), program);
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find(mode == 04755 ? "setuid" : "setgid"), std::string::npos) << r.output;
    EXPECT_FALSE(std::filesystem::exists(dir.file(std::string(name) + ".alt")));
  }
}

// The first of `paths` that a user who neither owns it nor is in its group cannot use: a
// directory on its way without search permission for others, or the path itself without
// `bits` for others (permission bits only: an ACL granting more is not looked at). Empty when
// every path can be used.
struct Access {
  std::string path;
  mode_t bits;  // S_IROTH, S_IXOTH, ...
};
std::string unreachable_for_others(const std::vector<Access>& paths) {
  for (const Access& a : paths) {
    const std::filesystem::path full = std::filesystem::canonical(a.path);
    std::filesystem::path walked = full.root_path();
    for (const std::filesystem::path& part : full.relative_path()) {
      struct stat st {};
      if (::stat(walked.c_str(), &st) != 0 || (st.st_mode & S_IXOTH) == 0) return walked.string();
      walked /= part;
    }
    struct stat st {};
    if (::stat(full.c_str(), &st) != 0 || (st.st_mode & a.bits) != a.bits) return full.string();
  }
  return {};
}

// A program with file capabilities, run by a user other than root, is a secure execution: the
// loader ignored LD_PRELOAD and the trace was missing without a word why.
TEST(RecordLifecycle, refuses_programs_with_file_capabilities_for_other_users) {
  ALLOCLAB_SKIP_UNDER_ASAN();
  if (::geteuid() != 0) GTEST_SKIP() << "needs root, to set capabilities and become nobody";
  if (run_shell("command -v setcap && command -v setpriv").status != 0)
    GTEST_SKIP() << "needs setcap (libcap2-bin) and setpriv (util-linux)";
  ScratchDir dir;
  const std::string home = dir_of(dir);
  ASSERT_EQ(::chmod(home.c_str(), 0777), 0);  // nobody reads the program and writes here
  // nobody runs alloclab, which preloads its library, in a directory of the temporary folder: a
  // build or temporary folder inside a private one (a clone made in `mktemp -d`) is out of its
  // reach, and the test cannot say anything there. Asked of nobody itself (an ACL or the file
  // system may allow more than the mode bits say); the bits then name the path.
  const std::string as_nobody = "setpriv --reuid 65534 --regid 65534 --clear-groups ";
  const std::string cli = ALLOCLAB_CLI, library = ALLOCLAB_PRELOAD_LIBRARY;
  if (run_shell(as_nobody + "sh -c 'test -x " + cli + " && test -r " + library + " && test -w " +
                home + " && test -x " + home + "'")
          .status != 0) {
    std::string unreachable =
        unreachable_for_others({{cli, S_IXOTH}, {library, S_IROTH}, {home, S_IXOTH | S_IWOTH}});
    if (unreachable.empty()) unreachable = "one of " + cli + ", " + library + " and " + home;
    GTEST_SKIP() << "nobody (uid 65534) cannot reach " << unreachable
                 << ": build and run the tests outside private (mode 0700) folders to run this";
  }
  const std::string program = dir.file("capable");
  std::filesystem::copy_file(TORTURE_STATUS, program);
  ASSERT_EQ(::chmod(program.c_str(), 0755), 0);
  ASSERT_EQ(run_shell("setcap cap_net_raw+ep " + program).status, 0);
  const Recorded r =
      run_shell(as_nobody + cli + " record -o " + dir.file("t.alt") + " -- " + program);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("it has file capabilities"), std::string::npos) << r.output;
  // Root has every capability already: nothing is secure about it, and it is traced.
  const Recorded as_root = record(dir.file("root.alt"), program);
  EXPECT_EQ(as_root.status, 0) << as_root.output;
  EXPECT_TRUE(std::filesystem::exists(dir.file("root.alt")));
}

}  // namespace
}  // namespace alloclab::test
