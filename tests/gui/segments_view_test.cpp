// The Segments view, driven by scripts as a user drives it: pick an event, read the segments and
// pieces shown, hover a piece, type a second setting, set a memory limit and go to the first
// failure. The expected figures follow from the pytorch
// model's rules (docs/strategies.md, `pytorch`), worked out in the comments.
#include <gtest/gtest.h>

#include <fstream>

#include "gui_test_util.hpp"

namespace alloclab::test {
namespace {

// Five events, no run markers (the resolver adds a run_begin for event 0):
//   event 0  A = alloc 3 MiB    a new 20 MiB large segment: [A 3 MiB][free 17 MiB]
//   event 1  B = alloc 100 KiB  a new 2 MiB small segment: [B 100 KiB][free 1948 KiB]
//   event 2  C = alloc 5 MiB    best fit, the 17 MiB piece split: [A][C 5 MiB][free 12 MiB]
//   event 3  free A             its neighbour C is handed out: no merge
//   event 4  free C             merges with both free neighbours: one free 20 MiB piece
// So after event 3: reserved 22 MiB, handed out 5 MiB + 100 KiB = 5.10 MiB, cached 16.90 MiB.
std::string small_trace(const std::filesystem::path& dir) {
  const std::string path = (dir / "segments.csv").string();
  std::ofstream(path) << "time_ns,thread,action,address,size\n"
                      << "100,1,alloc,0x1000000,3145728\n"
                      << "200,1,alloc,0x2000000,102400\n"
                      << "300,1,alloc,0x3000000,5242880\n"
                      << "400,1,free,0x1000000,\n"
                      << "500,1,free,0x3000000,\n";
  return path;
}

CliResult segments_script(const std::filesystem::path& dir, const std::string& script) {
  const std::string path = (dir / "script.txt").string();
  std::ofstream(path) << script;
  return run_headless("--size 1280x760 --script " + path);
}

TEST(SegmentsView, shows_each_segments_pieces_after_the_chosen_event_and_a_hovered_piece) {
  const auto dir = scratch_dir("segments-view");
  const CliResult r = segments_script(
      dir, "open " + small_trace(dir) +
               "\nwait\nview segments\nwait\n"
               "type segments:event 3\nwait\n"
               "expect-text chart:segments/position \"after event 3 (operation 4 of 6: free of "
               "3.00 MiB)\"\n"
               "expect-text chart:segments/0/totals \"reserved 22.00 MiB, allocated 5.10 MiB, "
               "cached 16.90 MiB; 2 segments, 5 pieces\"\n"
               // The large pool first, then the small one.
               "expect-text chart:segments/0/segment:0 \"large segment 0x10000000, 20.00 MiB, 3 "
               "pieces: [cached 3.00 MiB] [handed out 5.00 MiB] [cached 12.00 MiB]\"\n"
               "expect-text chart:segments/0/segment:1 \"small segment\"\n"
               "expect-text chart:segments/0/segment:1 \"2 pieces: [handed out 100.00 KiB] "
               "[cached 1.90 MiB]\"\n"
               // The middle of the 20 MiB bar is 10 MiB in: the free piece from 8 MiB on.
               "mouse-on chart:segments/0/segment:0\nframes 2\n"
               "expect-text tooltip \"cached (free) piece\"\n"
               "expect-text tooltip \"address 0x10800000 (+8.00 MiB into its segment)\"\n"
               "expect-text tooltip \"size 12.00 MiB (12,582,912 B)\"\n"
               // One event on, the freed 5 MiB merges with both neighbours.
               "click segments:next\nwait\n"
               "expect-text chart:segments/position \"after event 4\"\n"
               "expect-text chart:segments/0/segment:0 \"20.00 MiB, 1 piece: [cached 20.00 "
               "MiB]\"\n");
  ALLOCLAB_SKIP_WITHOUT_RENDERING(r);
  EXPECT_EQ(r.status, 0) << r.output;
}

TEST(SegmentsView, a_snapshot_that_starts_mid_run_shows_the_recorded_state_it_starts_from) {
  // snapshot_mid_run.json: a 20 MiB segment holding a 3 MiB block and a 5 MB block before the
  // history begins (docs/formats.md, "The state at the first entry"). The view opens at the peak
  // of live bytes, which is that state (the 5 MB block takes 5,000,192 B: 4.77 MiB). The history
  // then frees the 5 MB block (event 0) and allocates 4 MB in its place (event 1, 4,000,256 B).
  const auto dir = scratch_dir("segments-start");
  const CliResult r = segments_script(
      dir, "open " + std::string(ALLOCLAB_TEST_DATA) +
               "/interchange/snapshot_mid_run.json\nwait\nview segments\nwait\n"
               "expect-text chart:segments/0/segment:0 \"large segment 0x10000000, 20.00 MiB, 3 "
               "pieces: [handed out 3.00 MiB] [handed out 4.77 MiB] [cached 12.23 MiB]\"\n"
               "type segments:event 1\nwait\n"
               "expect-text chart:segments/0/segment:0 \"20.00 MiB, 3 pieces: [handed out 3.00 "
               "MiB] [handed out 3.81 MiB] [cached 13.19 MiB]\"\n");
  ALLOCLAB_SKIP_WITHOUT_RENDERING(r);
  EXPECT_EQ(r.status, 0) << r.output;
}

TEST(SegmentsView, a_second_setting_shows_its_own_pieces_beside_the_first) {
  const auto dir = scratch_dir("segments-two");
  // roundup_power2_divisions:4 rounds 100 KiB up to the next quarter step between 64 and
  // 128 KiB: 112 KiB.
  const CliResult r = segments_script(
      dir, "open " + small_trace(dir) +
               "\nwait\nview segments\nwait\ntype segments:event 3\n"
               "type segments:spec:1 pytorch-conf:roundup_power2_divisions:4\nwait\n"
               "expect-text chart:segments/0/segment:1 \"[handed out 100.00 KiB]\"\n"
               "expect-text chart:segments/1/segment:1 \"[handed out 112.00 KiB]\"\n"
               "expect-text chart:segments/1/totals \"reserved 22.00 MiB\"\n"
               // Only the pytorch model has segments.
               "type segments:spec:1 best-fit\n"
               "expect-text chart:segments/1/error \"not a pytorch or pytorch-conf spec\"\n"
               "expect-missing chart:segments/1/segment:0\n");
  ALLOCLAB_SKIP_WITHOUT_RENDERING(r);
  EXPECT_EQ(r.status, 0) << r.output;
}

TEST(SegmentsView, under_a_memory_limit_marks_the_first_failure_and_goes_there) {
  const auto dir = scratch_dir("segments-oom");
  // Under 21 MiB, B's 2 MiB small segment does not fit beside A's 20 MiB one, which A keeps:
  // PyTorch frees nothing and fails at event 1.
  const CliResult r = segments_script(
      dir, "open " + small_trace(dir) +
               "\nwait\nview segments\nwait\ntype segments:event 4\nwait\n"
               "expect-missing chart:segments/oom:0\n"
               "type segments:limit 21MiB\nwait\n"
               "expect-text chart:segments/oom:0 \"first failure of pytorch at event 1\"\n"
               "expect-text chart:segments/0/failure \"A fails first at event 1 (request of "
               "100.00 KiB): CUDA out of memory. Tried to allocate 2.00 MiB.\"\n"
               "click chart:segments/0/go-to-failure\nwait\n"
               "expect-text chart:segments/position \"after event 1\"\n"
               "expect-text chart:segments/0/totals \"reserved 20.00 MiB, allocated 3.00 MiB\"\n"
               "type segments:limit 64MiB\nwait\n"
               "expect-text chart:segments/0/failure \"A: no request fails under 64 MiB\"\n"
               "expect-missing chart:segments/oom:0\n");
  ALLOCLAB_SKIP_WITHOUT_RENDERING(r);
  EXPECT_EQ(r.status, 0) << r.output;
}

TEST(SegmentsView, takes_the_limit_and_the_second_setting_from_an_open_report) {
  const auto dir = scratch_dir("segments-report");
  const std::string trace = small_trace(dir);
  const std::string json = (dir / "r.json").string();
  const CliResult cli =
      run_cli("replay " + trace + " -s pytorch -s pytorch-conf:roundup_power2_divisions:4 " +
              "--memory-limit 21MiB --json " + json);
  ASSERT_EQ(cli.status, 0) << cli.output;
  const CliResult r =
      segments_script(dir, "open " + trace + "\nwait\nopen " + json +
                               "\nwait\nview segments\nwait\n"
                               "expect-text chart:segments/oom:0 \"at event 1\"\n"
                               "expect-text chart:segments/oom:1 \"first failure of "
                               "pytorch-conf:roundup_power2_divisions:4 at event 1\"\n");
  ALLOCLAB_SKIP_WITHOUT_RENDERING(r);
  EXPECT_EQ(r.status, 0) << r.output;
}

}  // namespace
}  // namespace alloclab::test
