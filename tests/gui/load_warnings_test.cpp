// A trace that lost events must not look complete in the GUI: every load warning the CLI prints
// shows under the trace's entry in the side panel, in the status line and among the messages
// (where a script's expect-message finds it), and goes to stderr. A trace of which nothing
// could be read, and a directory, fail the load as they fail the CLI.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "gui_test_util.hpp"

namespace alloclab::test {
namespace {

std::vector<char> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_prefix(const std::string& path, const std::vector<char>& bytes, std::size_t n) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(n));
}

TEST(LoadWarnings, a_truncated_trace_shows_its_warnings_where_the_user_looks) {
  const auto dir = scratch_dir("truncated");
  const std::string whole = (dir / "whole.alt").string();
  ASSERT_EQ(run_cli("generate --shape transformer --events 300000 -o " + whole).status, 0);
  const std::vector<char> bytes = file_bytes(whole);
  const std::string cut = (dir / "cut.alt").string();
  write_prefix(cut, bytes, bytes.size() * 2 / 3);  // a third of the file, and its events, lost
  const CliResult cli = run_cli("info " + cut);
  ASSERT_EQ(cli.status, 0) << cli.output;
  const std::string warning_line = cli.output.substr(0, cli.output.find('\n'));
  ASSERT_EQ(warning_line.rfind("alloclab: warning: " + cut + "@", 0), 0u) << cli.output;
  const std::string warning = warning_line.substr(std::string("alloclab: warning: ").size());

  const std::string script = (dir / "s.txt").string();
  std::ofstream(script) << "open " << cut << "\nwait\n"
                        << "expect-message \"" << warning << "\"\n"
                        << "mouse-on warnings:cut.alt\n"
                        << "mouse-on status:warnings\n";
  const CliResult gui = run_headless("--size 1000x700 --script " + script);
  ALLOCLAB_SKIP_WITHOUT_RENDERING(gui);
  EXPECT_EQ(gui.status, 0) << gui.output;
  EXPECT_NE(gui.output.find("alloclab gui: warning: " + warning + "\n"), std::string::npos)
      << gui.output;
}

TEST(LoadWarnings, an_intact_trace_shows_none) {
  const auto dir = scratch_dir("intact");
  const std::string script = (dir / "s.txt").string();
  std::ofstream(script) << "open " << traces_dir() << "/cnn-inference.alt\nwait\nframes 2\n"
                        << "expect-missing warnings:cnn-inference.alt\n"
                        << "expect-missing status:warnings\n";
  const CliResult gui = run_headless("--size 1000x700 --script " + script);
  ALLOCLAB_SKIP_WITHOUT_RENDERING(gui);
  EXPECT_EQ(gui.status, 0) << gui.output;
  EXPECT_EQ(gui.output.find("warning"), std::string::npos) << gui.output;
}

TEST(LoadWarnings, a_trace_with_no_readable_event_and_a_directory_fail_the_load) {
  const auto dir = scratch_dir("unreadable");
  const std::string whole = (dir / "whole.alt").string();
  ASSERT_EQ(run_cli("generate --shape cnn -o " + whole).status, 0);
  const std::vector<char> bytes = file_bytes(whole);
  const std::size_t chunk = std::string(bytes.begin(), bytes.end()).find("ALTC");
  ASSERT_NE(chunk, std::string::npos);
  const std::string cut = (dir / "cut.alt").string();
  write_prefix(cut, bytes, chunk + 100);
  const std::string report_dir = (dir / "report.json").string();
  std::filesystem::create_directories(report_dir);
  const struct {
    std::string file, message;
  } cases[] = {
      {cut, "; no event could be read from the file"},
      {report_dir, "error: " + report_dir + ": is a directory"},
      {dir.string(), "error: " + dir.string() + ": is a directory"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.file);
    const CliResult r = run_headless("--size 800x600 --force --screenshot " +
                                     (dir / "x.png").string() + " " + c.file);
    ALLOCLAB_SKIP_WITHOUT_RENDERING(r);
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << r.output;
  }
}

}  // namespace
}  // namespace alloclab::test
