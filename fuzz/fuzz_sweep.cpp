// Sweep templates (`fifo-shrink:max={1MiB..4GiB:x2}`) and shard strings: expansion, the spec
// check of every point, and shard selection. Input: "TEMPLATE\nSHARD".
#include <algorithm>

#include "alloclab/replay/sweep.hpp"
#include "alloclab/strategies/plugin.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = alloclab::fuzz::as_text(data, size);
  const std::size_t newline = text.find('\n');
  const std::string spec_template = text.substr(0, newline);
  const std::string shard = newline == std::string::npos ? "0/1" : text.substr(newline + 1);
  alloclab::fuzz::expect_clean([&] {
    const std::vector<std::string> points = alloclab::expand_sweep(spec_template);
    if (points.empty() || points.size() > alloclab::max_sweep_points) std::abort();
    // Every point must be a spec the registry takes or refuses with SpecError; plug-in points
    // would load libraries by path, so they are left out.
    // At most 256 of them: the points of one template differ only in values, and a
    // 100,000-point expansion would make each input a second long.
    const std::vector<std::string> some(points.begin(),
                                        points.begin() + std::min<std::size_t>(points.size(), 256));
    for (const std::string& point : some)
      if (alloclab::is_plugin_spec(point)) return;
    alloclab::check_specs(some);
  });
  alloclab::fuzz::expect_clean([&] {
    const alloclab::Shard parsed = alloclab::parse_shard(shard);
    if (parsed.index >= parsed.count) std::abort();
    (void)alloclab::shard_points(1000, parsed);
  });
  return 0;
}
