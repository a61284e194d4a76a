// The RMM log reader on arbitrary text, then resolution and the summary.
#include <sstream>

#include "alloclab/format/interchange/rmm_log.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  alloclab::fuzz::expect_clean([&] {
    std::istringstream in(alloclab::fuzz::as_text(data, size));
    const alloclab::Trace trace = alloclab::parse_rmm_log(in, "fuzz.log");
    alloclab::fuzz::resolve_and_summarize(trace);
  });
  return 0;
}
