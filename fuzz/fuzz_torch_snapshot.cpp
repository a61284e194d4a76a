// The PyTorch snapshot (JSON) reader on arbitrary text, then resolution and the summary.
#include "alloclab/format/interchange/torch_snapshot.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  alloclab::fuzz::expect_clean([&] {
    const alloclab::Trace trace =
        alloclab::parse_torch_snapshot_json(alloclab::fuzz::as_text(data, size), "fuzz.json");
    alloclab::fuzz::resolve_and_summarize(trace);
  });
  return 0;
}
