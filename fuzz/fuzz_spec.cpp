// Strategy spec strings (`name:key=value,...`) through the registry, and a few operations on
// whatever strategy they build. Plug-in specs are left out: they load a shared library by path,
// which is arbitrary code by design (docs/plugins.md).
#include <optional>

#include "alloclab/strategies/plugin.hpp"
#include "alloclab/strategies/registry.hpp"
#include "alloclab/strategies/upstream/sim.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string spec = alloclab::fuzz::as_text(data, size);
  if (alloclab::is_plugin_spec(spec)) return 0;
  alloclab::fuzz::expect_clean([&] {
    alloclab::SimUpstream upstream;
    const auto strategy = alloclab::make_strategy(spec, upstream);
    strategy->begin_run();
    const std::optional<alloclab::Block> a = strategy->allocate(1000, 0);
    const std::optional<alloclab::Block> b = strategy->allocate(1 << 20, 1);
    if (a) strategy->deallocate(*a);
    const std::optional<alloclab::Block> c = strategy->allocate(512, 0);
    if (b) strategy->deallocate(*b);
    if (c) strategy->deallocate(*c);
    strategy->end_run();
    strategy->release();
    (void)strategy->stats();
  });
  return 0;
}
