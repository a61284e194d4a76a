// The PyTorch snapshot pickle reader on arbitrary bytes, then resolution and the summary.
#include <string_view>

#include "alloclab/format/interchange/torch_snapshot.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  alloclab::fuzz::expect_clean([&] {
    const alloclab::Trace trace = alloclab::parse_torch_snapshot_pickle(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.pickle");
    alloclab::fuzz::resolve_and_summarize(trace);
  });
  return 0;
}
