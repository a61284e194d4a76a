// The Flame view, driven as a user drives it: the live bytes at the peak by call site, a box's
// tooltip, a click that draws that site's live bytes in the Memory view, a strategy's misses and
// a difference of two strategies; and a trace without stacks, which says how to record them.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "alloclab/format/alt/alt.hpp"
#include "alloclab/format/trace.hpp"
#include "gui_test_util.hpp"

namespace alloclab::test {
namespace {

constexpr std::uint64_t MiB = 1024 * 1024;

// main -> run -> hold_weights: ten 8 MiB blocks held to the end (most of the peak);
// main -> run -> churn -> make_temp: a thousand blocks of shrinking size, each freed at once:
// every one a miss under `exact` (no size comes back), the first only under `best-fit` (each
// fits in the block before it).
std::string stacks_trace(const std::filesystem::path& dir) {
  Trace trace;
  const auto frame = [&](std::uint64_t address, const char* function) {
    return trace.add_frame(StackFrame{address, function, "/opt/app/bin/app"});
  };
  const std::uint32_t main_f = frame(0x1000, "main"), run_f = frame(0x2000, "run"),
                      hold_f = frame(0x3000, "hold_weights"), churn_f = frame(0x4000, "churn"),
                      temp_f = frame(0x5000, "make_temp");
  const std::uint32_t hold = trace.add_stack({hold_f, run_f, main_f});
  const std::uint32_t temp = trace.add_stack({temp_f, churn_f, run_f, main_f});
  std::uint64_t time = 1000;
  const auto push = [&](Op op, std::uint64_t address, std::uint64_t size, std::uint32_t stack) {
    Event e;
    e.time_ns = time += 1000;
    e.op = op;
    e.address = address;
    e.size = size;
    trace.push_back(e);
    if (stack) trace.set_stack_id(trace.size() - 1, stack);
  };
  for (std::uint64_t k = 0; k < 10; ++k) push(Op::alloc, 0x10000000 + k * 16 * MiB, 8 * MiB, hold);
  for (std::uint64_t k = 0; k < 1000; ++k) {
    push(Op::alloc, 0x90000000, 1000 + 16 * (999 - k), temp);
    push(Op::free, 0x90000000, 0, 0);
  }
  const std::string path = (dir / "stacks.alt").string();
  write_alt(trace, path);
  return path;
}

TEST(FlameView, live_bytes_at_the_peak_by_site_and_a_click_filters_the_memory_view) {
  const auto dir = scratch_dir("flame");
  const std::string trace = stacks_trace(dir);
  const std::string png = (dir / "memory.png").string();
  const std::string script = (dir / "flame.txt").string();
  std::ofstream(script)
      << "open " << trace << "\nwait\nview flame\nframes 2\n"
      << "expect-text flame/caption \"live bytes: 80.02 MiB (83,903,064 bytes)\"\n"
      << "expect-text flame/at \"after 12 operations, 10.00 us (peak)\"\n"
      << "mouse-on \"flame:hold_weights (app)\"\nframes 2\n"
      << "expect-text tooltip \"called from: main (app);run (app)\"\n"
      << "expect-text tooltip \"live bytes: 80.00 MiB (83,886,080 bytes) (99.98% of all)\"\n"
      << "click \"flame:hold_weights (app)\"\nframes 2\n"
      << "expect-text flame/caption \"Memory view shows main (app);run "
         "(app);hold_weights (app)\"\n"
      << "view memory\nframes 2\n"
      << "mouse-on \"chart:memory/legend:live, site hold_weights (app)\"\n"
      << "screenshot " << png << "\n";
  const CliResult r = run_headless("--size 1000x600 --script " + script);
  ALLOCLAB_SKIP_WITHOUT_RENDERING(r);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_GT(count_pixels(load_png(png), 0, 0, 1000, 600,
                         [](int red, int green, int blue) {
                           return red == 120 && green == 220 && blue == 120;
                         }),
            100u)
      << "no line of the site's live bytes";
}

TEST(FlameView, misses_of_a_strategy_and_a_difference_of_two) {
  const auto dir = scratch_dir("flame-strategies");
  const std::string trace = stacks_trace(dir);
  const std::string script = (dir / "flame.txt").string();
  std::ofstream(script)
      << "open " << trace << "\nwait\nclick Run\nwait\nview flame\nframes 2\n"
      << "click flame-metric\nframes 2\nclick flame-metric:misses\nwait\nframes 2\n"
      << "expect-text flame/caption \"misses under exact: 1,010 in all\"\n"
      << "mouse-on \"flame:make_temp (app)\"\nframes 2\n"
      << "expect-text tooltip \"misses: 1,000\"\n"
      << "click flame-compare\nframes 2\nclick flame-compare:best-fit\nframes 2\n"
      << "expect-text flame/caption \"against best-fit\"\n"
      << "mouse-on \"flame:make_temp (app)\"\nframes 2\n"
      << "expect-text tooltip \"first minus second: +999\"\n";
  const CliResult r = run_headless("--size 1000x600 --script " + script + " -s exact -s best-fit");
  ALLOCLAB_SKIP_WITHOUT_RENDERING(r);
  ASSERT_EQ(r.status, 0) << r.output;
}

// The bundled PyTorch recording with stacks (traces/torch-cnn-training-stacks.alt): real call
// stacks, 16 frames deep, so the graph's roots are where the recorded stacks were cut, here
// the operators that allocate the activations kept for the backward pass.
TEST(FlameView, the_bundled_pytorch_trace_shows_its_operators_by_name) {
  const auto dir = scratch_dir("flame-torch");
  const std::string script = (dir / "flame.txt").string();
  const std::string max_pool =
      "at::native::max_pool2d(at::Tensor const&, c10::ArrayRef<long>, c10::ArrayRef<long>, "
      "c10::ArrayRef<long>, c10::ArrayRef<long>, bool) (libtorch_cpu.so.1.13.0)";
  std::ofstream(script)
      << "open " << traces_dir() << "/torch-cnn-training-stacks.alt\nwait\n"
      << "view flame\nframes 2\n"
      << "expect-text flame/caption \"live bytes: 26.10 MiB (27,364,344 bytes)\"\n"
      << "mouse-on \"flame:" << max_pool << "\"\nframes 2\n"
      << "expect-text tooltip \"live bytes: 6.00 MiB (6,291,840 bytes)\"\n";
  const CliResult r = run_headless("--size 1000x600 --script " + script);
  ALLOCLAB_SKIP_WITHOUT_RENDERING(r);
  ASSERT_EQ(r.status, 0) << r.output;
}

TEST(FlameView, a_trace_without_stacks_says_how_to_record_them) {
  const auto dir = scratch_dir("flame-none");
  const std::string script = (dir / "flame.txt").string();
  std::ofstream(script) << "open " << traces_dir() << "/cnn-inference.alt\nwait\nview flame\n"
                        << "frames 2\nexpect-text flame/hint \"record --stacks 16\"\n";
  const CliResult r = run_headless("--size 800x500 --script " + script);
  ALLOCLAB_SKIP_WITHOUT_RENDERING(r);
  ASSERT_EQ(r.status, 0) << r.output;
}

}  // namespace
}  // namespace alloclab::test
