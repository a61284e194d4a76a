// The CSV trace reader on arbitrary text, then resolution and the summary.
#include <sstream>

#include "alloclab/format/interchange/csv.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  alloclab::fuzz::expect_clean([&] {
    std::istringstream in(alloclab::fuzz::as_text(data, size));
    const alloclab::Trace trace = alloclab::parse_csv(in, "fuzz.csv");
    alloclab::fuzz::resolve_and_summarize(trace);
  });
  return 0;
}
