#include <gtest/gtest.h>

#include <random>

#include "alloclab/format/alt/alt.hpp"
#include "tests/format/trace_test_util.hpp"

namespace alloclab {
namespace {

using test::TempFile;

// Random events that exercise every field and every encoding path: back-referenced frees,
// frees of addresses from earlier chunks, huge sizes and deltas, labels, many origins.
Trace random_trace(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Trace t;
  t.reserve(n);
  std::vector<std::uint64_t> live;
  std::uint64_t time = 1'000'000;
  for (std::size_t i = 0; i < n; ++i) {
    Event e;
    time += rng() % 3 == 0 ? rng() % 100'000 : rng() % 50;
    if (rng() % 1000 == 0) time -= rng() % 1000;  // clocks of different threads disagree
    e.time_ns = time;
    e.thread = rng() % 7 + (rng() % 50 == 0 ? 0xFFFF'FFFF'FFull : 0);
    e.device = static_cast<DeviceId>(rng() % 4) - 1;
    e.stream = rng() % 5 == 0 ? rng() % 3 : 0;
    e.kind = static_cast<MemoryKind>(rng() % memory_kind_count);
    const unsigned pick = static_cast<unsigned>(rng() % 100);
    if (pick < 48 || live.empty()) {
      e.op = Op::alloc;
      e.address = rng() % 20 == 0 ? rng() : 0x7f0000000000ull + (rng() % (1u << 24)) * 16;
      e.size = rng() % 200 == 0 ? ~0ull - rng() % 3 : rng() % (1u << (rng() % 30));
      e.alignment = rng() % 4 == 0 ? std::uint64_t{1} << (rng() % 64) : 0;
      e.segment = rng() % 30 == 0;
      live.push_back(e.address);
    } else if (pick < 95) {
      e.op = Op::free;
      const std::size_t k = rng() % live.size();
      e.address = rng() % 50 == 0 ? rng() : live[k];
      live[k] = live.back();
      live.pop_back();
    } else {
      e.op = static_cast<Op>(2 + rng() % 3);
      if (rng() % 2) e.label = "label " + std::to_string(rng() % 1000) + ", with \"quotes\"";
      e.address = rng() % 10 == 0 ? rng() : 0;
    }
    t.push_back(e);
  }
  t.metadata["command_line"] = "random_trace test";
  return t;
}

TEST(AltFormat, round_trips_one_million_random_events) {
  const Trace original = random_trace(1'000'000, 42);
  TempFile file("roundtrip.alt");
  write_alt(original, file.path());
  AltLoadStats stats;
  const Trace loaded = read_alt(file.path(), &stats);
  EXPECT_TRUE(loaded.warnings.empty());
  EXPECT_EQ(stats.damaged_chunks, 0u);
  EXPECT_EQ(stats.chunks, (1'000'000 + 65535) / 65536);
  ASSERT_EQ(loaded.size(), original.size());
  for (std::size_t i = 0; i < original.size(); ++i)
    ASSERT_EQ(loaded.event(i), original.event(i)) << "event " << i;
  EXPECT_EQ(loaded.metadata["command_line"], "random_trace test");
  EXPECT_EQ(loaded.metadata["format"], "alloclab-trace");
}

TEST(AltFormat, round_trips_with_tiny_chunks_and_many_seeds) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const Trace original = random_trace(2000, seed);
    EXPECT_TRUE(test::written_and_read(original, 1 + seed * 7) == original) << "seed " << seed;
  }
}

TEST(AltFormat, empty_trace_round_trips) {
  TempFile file("empty-trace.alt");
  write_alt(Trace{}, file.path());
  const Trace loaded = read_alt(file.path());
  EXPECT_EQ(loaded.size(), 0u);
  EXPECT_TRUE(loaded.warnings.empty());
}

TEST(AltFormat, columns_stay_within_24_bytes_per_event) {
  const Trace t = random_trace(100'000, 7);
  // Exact-capacity columns: 8 + 8 + 4 + 2 + 2 bytes per event, plus small side tables.
  EXPECT_LE(t.memory_bytes(), t.size() * 24 + 400'000);
}

TEST(AltFormat, looks_like_alt_checks_the_magic) {
  TempFile file("magic.alt");
  write_alt(random_trace(10, 1), file.path());
  EXPECT_TRUE(looks_like_alt(file.path()));
  file.write({'t', 'i', 'm', 'e', '_', 'n', 's', ','});
  EXPECT_FALSE(looks_like_alt(file.path()));
}

}  // namespace
}  // namespace alloclab
