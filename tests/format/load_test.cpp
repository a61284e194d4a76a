// Loading a trace the way every front end does: format detection, .alt by its magic whatever
// its name, --from overriding, warnings kept (not printed), and the replay-ready load.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "alloclab/format/error.hpp"
#include "alloclab/format/load.hpp"
#include "alloclab/format/resolve.hpp"
#include "alloclab/format/summary.hpp"
#include "trace_test_util.hpp"

namespace alloclab {
namespace {

using test::TempFile;

const std::string kTiny = std::string(ALLOCLAB_TRACES_DIR) + "/tiny.csv";
const std::string kCnn = std::string(ALLOCLAB_TRACES_DIR) + "/cnn-inference.alt";

TEST(Load, a_csv_trace_is_read_by_its_name) {
  const LoadedTrace loaded = load_trace(kTiny);
  EXPECT_EQ(loaded.trace.size(), 16u);
  EXPECT_FALSE(loaded.file_bytes.has_value());
  EXPECT_TRUE(loaded.trace.warnings.empty());
}

TEST(Load, an_alt_trace_is_read_by_its_magic_whatever_its_name) {
  TempFile renamed("load-misnamed.csv");
  std::filesystem::copy_file(kCnn, renamed.path());
  EXPECT_EQ(input_format(renamed.path()), TraceFormat::alt);
  const LoadedTrace loaded = load_trace(renamed.path());
  EXPECT_EQ(loaded.trace.size(), load_trace(kCnn).trace.size());
  ASSERT_TRUE(loaded.file_bytes.has_value());
  EXPECT_EQ(*loaded.file_bytes, std::filesystem::file_size(kCnn));
}

TEST(Load, a_named_format_overrides_detection) {
  EXPECT_EQ(input_format(kCnn, TraceFormat::csv), TraceFormat::csv);
  // Read as CSV, the binary file is refused by the CSV reader, naming the file.
  try {
    (void)load_trace(kCnn, TraceFormat::csv);
    FAIL() << "an .alt file read as CSV loaded";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(kCnn), std::string::npos) << e.what();
  }
}

TEST(Load, an_unknown_extension_is_refused_listing_the_accepted_ones) {
  TempFile odd("load-trace.xyz");
  odd.write({'h', 'i', '\n'});
  try {
    (void)load_trace(odd.path());
    FAIL() << "a .xyz file loaded";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot tell the trace format"), std::string::npos)
        << e.what();
  }
}

TEST(Load, warnings_of_a_damaged_alt_trace_are_kept_with_it_not_printed) {
  const Trace trace = test::make_trace([] {
    std::vector<Event> events;
    for (std::uint64_t i = 0; i < 500; ++i) {
      events.push_back(test::alloc_event(0x1000 + 0x100 * i, 64, 10 * i));
      events.push_back(test::free_event(0x1000 + 0x100 * i, 10 * i + 5));
    }
    return events;
  }());
  TempFile file("load-truncated.alt");
  std::vector<char> bytes = test::written(trace, file);
  bytes.resize(bytes.size() - 20);  // the last chunk cut short
  file.write(bytes);

  testing::internal::CaptureStderr();
  const LoadedTrace loaded = load_trace(file.path());
  const ResolvedLoad resolved = load_resolved(file.path());
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  ASSERT_FALSE(loaded.trace.warnings.empty());
  EXPECT_NE(loaded.trace.warnings.front().find("truncated chunk"), std::string::npos)
      << loaded.trace.warnings.front();
  EXPECT_EQ(resolved.summary.warnings, loaded.trace.warnings);
  EXPECT_LT(loaded.trace.size(), trace.size());
}

// load_resolved streams .alt and reads other formats whole: either way it must be what
// resolve() and summarize() give for the loaded trace, with the source and size filled in.
void expect_same_as_summarize(const std::string& path) {
  const LoadedTrace whole = load_trace(path);
  const ResolvedTrace resolved = resolve(whole.trace);
  TraceSummary expected = summarize(whole.trace, resolved);
  expected.source = path;
  expected.file_bytes = whole.file_bytes;

  const ResolvedLoad loaded = load_resolved(path);
  EXPECT_EQ(loaded.resolved.ops.size(), resolved.ops.size());
  EXPECT_EQ(loaded.resolved.alloc_size, resolved.alloc_size);
  EXPECT_EQ(to_json(loaded.summary), to_json(expected));
}

TEST(Load, load_resolved_of_csv_and_alt_is_summarize_of_the_whole_trace) {
  expect_same_as_summarize(kTiny);
  expect_same_as_summarize(kCnn);
  EXPECT_EQ(load_resolved(kCnn).summary.source, kCnn);
  EXPECT_TRUE(load_resolved(kCnn).summary.file_bytes.has_value());
  EXPECT_FALSE(load_resolved(kTiny).summary.file_bytes.has_value());
}

}  // namespace
}  // namespace alloclab
