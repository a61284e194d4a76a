// The report reader behind `alloclab merge` (and anything else that reads reports back):
// arbitrary text parsed as JSON, merged with itself and alone, every result read back.
#include <nlohmann/json.hpp>

#include "alloclab/replay/merge.hpp"
#include "alloclab/replay/report.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // Not JSON is the CLI's "not JSON" error; only what parses goes further.
  nlohmann::json report =
      nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (report.is_discarded()) return 0;
  alloclab::fuzz::expect_clean([&] {
    const std::vector<alloclab::MergeInput> inputs = {{"a.json", report}, {"b.json", report}};
    for (const bool partial : {false, true}) {
      alloclab::MergeOptions options;
      options.allow_partial = partial;
      const nlohmann::json merged = alloclab::merge_reports(inputs, options);
      for (const nlohmann::json& result : merged.at("results"))
        (void)alloclab::result_from_json(result, "merged.json");
    }
  });
  alloclab::fuzz::expect_clean([&] {
    if (report.is_object() && report.contains("results") && report["results"].is_array())
      for (const nlohmann::json& result : report["results"])
        (void)alloclab::result_from_json(result, "report.json");
  });
  return 0;
}
