// DeviceCaches, the dispatch of `run --cuda` and the PyTorch allocator, over a fake device
// allocator: one cache per device, the real call's errors passed on, foreign blocks left alone,
// the device's alignment kept, and a report per device.
#include "alloclab/live/device_caches.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/split_mix.hpp"

namespace alloclab::live {
namespace {

constexpr int kFakeSuccess = 0;
constexpr int kFakeOutOfMemory = 2;
constexpr int kFakeNoDevice = 100;

// A device allocator: blocks from a bump pointer, 512-byte aligned as cudaMalloc's, up to
// `capacity` bytes in use; `fail_with` set: every call fails with it.
struct FakeDevice {
  std::uint64_t next = 0x7f0000000000;
  std::uint64_t capacity = std::uint64_t{1} << 40;
  std::uint64_t in_use = 0;
  int fail_with = kFakeSuccess;
  bool null_on_success = false;
  std::uint64_t peak_in_use = 0;
  int allocations = 0, frees = 0, clears = 0;
  std::map<std::uint64_t, std::uint64_t> blocks;
  std::set<std::uint64_t> freed_foreign;
};
FakeDevice g_fake;

int fake_allocate(void** out, std::size_t bytes) {
  ++g_fake.allocations;
  *out = nullptr;
  if (g_fake.fail_with != kFakeSuccess) return g_fake.fail_with;
  if (g_fake.null_on_success) return kFakeSuccess;
  if (g_fake.in_use + bytes > g_fake.capacity) return kFakeOutOfMemory;
  const std::uint64_t address = g_fake.next;
  g_fake.next += (bytes + 511) / 512 * 512 + 512;
  g_fake.blocks[address] = bytes;
  g_fake.in_use += bytes;
  g_fake.peak_in_use = std::max(g_fake.peak_in_use, g_fake.in_use);
  *out = reinterpret_cast<void*>(static_cast<std::uintptr_t>(address));
  return kFakeSuccess;
}
int fake_deallocate(void* p) {
  ++g_fake.frees;
  const auto it = g_fake.blocks.find(reinterpret_cast<std::uintptr_t>(p));
  if (it == g_fake.blocks.end()) {
    g_fake.freed_foreign.insert(reinterpret_cast<std::uintptr_t>(p));
    return 1;
  }
  g_fake.in_use -= it->second;
  g_fake.blocks.erase(it);
  return kFakeSuccess;
}
// Another process holds 1 GiB of the device.
constexpr std::uint64_t kOthers = std::uint64_t{1} << 30;
int fake_used(std::uint64_t* used) {
  *used = g_fake.in_use + kOthers;
  return kFakeSuccess;
}
int fake_clear() {
  ++g_fake.clears;
  return kFakeSuccess;
}

std::uint64_t g_device_now = 0;
std::uint64_t device_test_clock() {
  return g_device_now += 10;
}

constexpr DeviceCalls kCalls{fake_allocate, fake_deallocate, fake_used,
                             fake_clear,    kFakeSuccess,    kFakeOutOfMemory};

class DeviceCachesTest : public ::testing::Test {
 protected:
  void SetUp() override { g_fake = FakeDevice{}; }
  static DeviceCaches make(const std::string& spec, bool implicit_run = true) {
    return DeviceCaches(spec, "cuda:", kCalls, Clock{device_test_clock, device_test_clock},
                        implicit_run);
  }
};

void* allocate_ok(DeviceCaches& caches, int device, std::size_t bytes) {
  void* p = nullptr;
  EXPECT_EQ(caches.allocate(device, bytes, 0, &p), kFakeSuccess);
  EXPECT_NE(p, nullptr);
  return p;
}

TEST_F(DeviceCachesTest, each_device_gets_its_own_cache_and_report) {
  auto caches = make("best-fit");
  void* a = allocate_ok(caches, 0, 1 << 20);
  void* b = allocate_ok(caches, 2, 3 << 20);
  void* c = allocate_ok(caches, 2, 1 << 20);
  EXPECT_TRUE(caches.deallocate(c));
  void* d = allocate_ok(caches, 2, 1 << 20);  // device 2's cached block
  EXPECT_EQ(d, c);
  EXPECT_TRUE(caches.deallocate(a));
  EXPECT_TRUE(caches.deallocate(b));
  EXPECT_TRUE(caches.deallocate(d));
  const std::vector<LiveReport> reports = caches.finish(42);
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].device, "cuda:0");
  EXPECT_EQ(reports[0].metrics.requests, 1u);
  EXPECT_EQ(reports[0].metrics.hits, 0u);
  EXPECT_EQ(reports[1].device, "cuda:2");
  EXPECT_EQ(reports[1].metrics.requests, 3u);
  EXPECT_EQ(reports[1].metrics.hits, 1u);
  for (const LiveReport& r : reports) {
    EXPECT_EQ(r.spec, "best-fit");
    EXPECT_EQ(r.pid, 42u);
  }
  EXPECT_TRUE(g_fake.blocks.empty());  // finish released what the caches held
}

TEST_F(DeviceCachesTest, a_block_it_did_not_hand_out_is_left_to_the_real_call) {
  auto caches = make("best-fit");
  void* mine = allocate_ok(caches, 0, 1 << 20);
  int foreign_storage = 0;
  EXPECT_FALSE(caches.deallocate(&foreign_storage));
  EXPECT_FALSE(caches.deallocate(nullptr));
  EXPECT_FALSE(caches.owns(&foreign_storage));
  EXPECT_TRUE(caches.owns(mine));
  EXPECT_TRUE(g_fake.freed_foreign.empty());  // nothing was passed to the real free for it
  EXPECT_TRUE(caches.deallocate(mine));
  EXPECT_FALSE(caches.deallocate(mine));  // freed twice: the second is not the cache's
}

TEST_F(DeviceCachesTest, a_failed_real_call_gives_the_program_its_error) {
  auto caches = make("exact");
  g_fake.fail_with = kFakeNoDevice;
  void* p = reinterpret_cast<void*>(1);
  EXPECT_EQ(caches.allocate(0, 4096, 0, &p), kFakeNoDevice);
  EXPECT_EQ(p, nullptr);
  EXPECT_GE(g_fake.clears, 1);  // the program learns of it from the status, not a stale error
  g_fake.fail_with = kFakeSuccess;
  g_fake.capacity = 1 << 20;
  EXPECT_EQ(caches.allocate(0, 2 << 20, 0, &p), kFakeOutOfMemory);
  EXPECT_EQ(p, nullptr);
  // A real call that says success but gives no block: out of memory, never a null block.
  g_fake.null_on_success = true;
  EXPECT_EQ(caches.allocate(0, 4096, 0, &p), kFakeOutOfMemory);
  g_fake.null_on_success = false;
  // The next request that fits succeeds again.
  allocate_ok(caches, 0, 4096);
  const std::vector<LiveReport> reports = caches.finish(1);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].metrics.failed_requests, 3u);
  ASSERT_TRUE(reports[0].first_failure.has_value());
  EXPECT_EQ(reports[0].first_failure->requested_bytes, 4096u);
}

TEST_F(DeviceCachesTest, a_strategy_that_recovers_from_a_failure_succeeds) {
  // pytorch's model frees its cached blocks and retries when the device is full.
  auto caches = make("pytorch");
  g_fake.capacity = 24 << 20;
  void* a = allocate_ok(caches, 0, 20 << 20);
  ASSERT_TRUE(caches.deallocate(a));  // cached, not freed
  EXPECT_EQ(g_fake.frees, 0);
  void* b = allocate_ok(caches, 0, 22 << 20);  // fits only once the cache let a go
  EXPECT_GE(g_fake.frees, 1);
  EXPECT_TRUE(caches.deallocate(b));
}

TEST_F(DeviceCachesTest, size_zero_and_an_unknown_device_go_to_the_real_call) {
  auto caches = make("best-fit");
  void* p = nullptr;
  EXPECT_EQ(caches.allocate(0, 0, 0, &p), kFakeSuccess);
  EXPECT_EQ(caches.allocate(-1, 4096, 0, &p), kFakeSuccess);
  EXPECT_FALSE(caches.owns(p));
  EXPECT_EQ(caches.allocate(DeviceCaches::kMaxDevices, 4096, 0, &p), kFakeSuccess);
  EXPECT_FALSE(caches.owns(p));
  EXPECT_EQ(g_fake.allocations, 3);
  EXPECT_TRUE(caches.finish(1).empty());
}

TEST_F(DeviceCachesTest, blocks_keep_the_alignment_of_the_device_allocator) {
  for (const char* spec : {"best-fit", "exact", "pytorch", "fifo-shrink"}) {
    SetUp();
    auto caches = make(spec);
    test::SplitMix rng{7};
    std::vector<void*> held;
    for (int i = 0; i < 3000; ++i) {
      if (!held.empty() && rng.next() % 3 == 0) {
        const std::size_t k = rng.next() % held.size();
        ASSERT_TRUE(caches.deallocate(held[k]));
        held[k] = held.back();
        held.pop_back();
        continue;
      }
      const std::size_t bytes = 1 + rng.next() % (rng.next() % 4 == 0 ? (8 << 20) : 5000);
      void* p = allocate_ok(caches, 0, bytes);
      ASSERT_EQ(reinterpret_cast<std::uintptr_t>(p) % 256, 0u) << spec << ": " << bytes;
      held.push_back(p);
    }
    for (void* p : held) ASSERT_TRUE(caches.deallocate(p));
  }
}

TEST_F(DeviceCachesTest, requests_count_in_whole_granules) {
  auto caches = make("exact");
  void* p = allocate_ok(caches, 0, 1000);
  EXPECT_TRUE(caches.deallocate(p));
  const std::vector<LiveReport> reports = caches.finish(1);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].metrics.peak_live_bytes, DeviceCaches::kGranularity * 2);
}

TEST_F(DeviceCachesTest, peak_device_memory_is_sampled_after_each_real_allocation) {
  auto caches = make("exact");
  void* a = allocate_ok(caches, 0, 8 << 20);
  void* b = allocate_ok(caches, 0, 4 << 20);
  EXPECT_TRUE(caches.deallocate(a));
  EXPECT_TRUE(caches.deallocate(b));
  void* c = allocate_ok(caches, 0, 1 << 20);
  EXPECT_TRUE(caches.deallocate(c));
  const std::vector<LiveReport> reports = caches.finish(1);
  ASSERT_EQ(reports.size(), 1u);
  // Every process's memory on the device, at its highest after an allocation of the cache.
  EXPECT_EQ(reports[0].peak_device_bytes, kOthers + g_fake.peak_in_use);
  EXPECT_GE(reports[0].peak_device_bytes, kOthers + (12u << 20));
}

TEST_F(DeviceCachesTest, a_device_first_used_inside_a_marked_run_is_in_it) {
  // With an implicit run too: the device had nothing before the marked run to put in one.
  for (const bool implicit_run : {false, true}) {
    SCOPED_TRACE(implicit_run);
    auto caches = make("best-fit", implicit_run);
    caches.begin_run("forward");
    void* p = allocate_ok(caches, 1, 1 << 20);
    EXPECT_TRUE(caches.deallocate(p));
    caches.end_run();
    const std::vector<LiveReport> reports = caches.finish(1);
    ASSERT_EQ(reports.size(), 1u);
    EXPECT_EQ(reports[0].device, "cuda:1");
    EXPECT_EQ(reports[0].runs, 1u);
    // The run the cache joined, under its marker's label, with the request made in it.
    ASSERT_EQ(reports[0].run_metrics.size(), 1u);
    EXPECT_EQ(reports[0].run_metrics[0].label, "forward");
    EXPECT_EQ(reports[0].run_metrics[0].requests, 1u);
  }
}

TEST_F(DeviceCachesTest, a_bad_spec_is_refused_on_the_first_allocation) {
  auto caches = make("no-such-strategy");
  void* p = nullptr;
  EXPECT_ANY_THROW(caches.allocate(0, 4096, 0, &p));
}

}  // namespace
}  // namespace alloclab::live
