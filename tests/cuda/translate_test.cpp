// The CUDA call -> event translation on constructed calls (no CUDA, no device).
#include <gtest/gtest.h>

#include <vector>

#include "alloclab/format/resolve.hpp"
#include "alloclab/format/trace.hpp"
#include "tracer/cuda/translate.hpp"

namespace alloclab::cuda {
namespace {

ApiCall exit_of(Api api, std::uint64_t address, std::uint64_t size, DeviceId device = 0) {
  ApiCall call;
  call.api = api;
  call.site = Site::exit;
  call.address = address;
  call.size = size;
  call.device = device;
  call.thread = 7;
  call.time_ns = 100;
  return call;
}

ApiCall enter_of(Api api, std::uint64_t address, DeviceId device = 0) {
  ApiCall call;
  call.api = api;
  call.site = Site::enter;
  call.address = address;
  call.device = device;
  call.thread = 7;
  call.time_ns = 200;
  return call;
}

std::vector<Event> run(Translator& t, const ApiCall& call) {
  std::vector<Event> out;
  t.translate(call, out);
  return out;
}

TEST(CudaTranslate, cuda_malloc_becomes_a_device_alloc_on_exit_only) {
  Translator t;
  ApiCall call = exit_of(Api::cuda_malloc, 0x7f0000000000, 4096, 1);
  call.site = Site::enter;
  EXPECT_TRUE(run(t, call).empty());
  call.site = Site::exit;
  const auto events = run(t, call);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].op, Op::alloc);
  EXPECT_EQ(events[0].kind, MemoryKind::device);
  EXPECT_EQ(events[0].device, 1);
  EXPECT_EQ(events[0].address, 0x7f0000000000u);
  EXPECT_EQ(events[0].size, 4096u);
  EXPECT_EQ(events[0].thread, 7u);
  EXPECT_EQ(events[0].time_ns, 100u);
  EXPECT_EQ(t.live_allocations(), 1u);
}

TEST(CudaTranslate, cuda_free_is_recorded_on_entry_on_the_device_of_its_allocation) {
  Translator t;
  run(t, exit_of(Api::cuda_malloc, 0x1000, 64, 2));
  // The thread's current device has changed since: the free still belongs to cuda:2.
  EXPECT_TRUE(run(t,
                  [] {
                    ApiCall c = enter_of(Api::cuda_free, 0x1000, 0);
                    c.site = Site::exit;
                    return c;
                  }())
                  .empty());
  const auto events = run(t, enter_of(Api::cuda_free, 0x1000, 0));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].op, Op::free);
  EXPECT_EQ(events[0].device, 2);
  EXPECT_EQ(events[0].kind, MemoryKind::device);
  EXPECT_EQ(t.live_allocations(), 0u);
}

TEST(CudaTranslate, cuda_free_of_null_is_not_an_event) {
  Translator t;
  EXPECT_TRUE(run(t, enter_of(Api::cuda_free, 0)).empty());
  EXPECT_TRUE(run(t, enter_of(Api::cu_mem_free, 0)).empty());
}

TEST(CudaTranslate, free_of_an_unknown_address_is_still_recorded_for_the_reader_to_count) {
  Translator t;
  const auto events = run(t, enter_of(Api::cuda_free_host, 0xdead000, 3));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].device, 3);
  EXPECT_EQ(events[0].kind, MemoryKind::pinned);
}

TEST(CudaTranslate, failed_allocation_is_an_alloc_at_address_zero) {
  Translator t;
  ApiCall call = exit_of(Api::cuda_malloc, 0x5000, 1ull << 40);
  call.succeeded = false;  // the out-parameter holds whatever it held: ignored
  const auto events = run(t, call);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].address, 0u);
  EXPECT_EQ(events[0].size, 1ull << 40);
  EXPECT_EQ(t.live_allocations(), 0u);
}

TEST(CudaTranslate, a_zero_byte_allocation_that_returns_no_address_is_not_an_event) {
  Translator t;
  for (const Api api : {Api::cuda_malloc, Api::cuda_malloc_async, Api::cu_mem_alloc,
                        Api::cuda_malloc_managed, Api::cuda_malloc_host}) {
    EXPECT_TRUE(run(t, exit_of(api, 0, 0)).empty()) << api_name(api);
    EXPECT_TRUE(run(t, enter_of(Api::cuda_free, 0)).empty());
  }
  ApiCall failed = exit_of(Api::cuda_malloc, 0, 0);
  failed.succeeded = false;  // a refused zero-byte request is still a failed allocation
  ASSERT_EQ(run(t, failed).size(), 1u);
  EXPECT_EQ(t.live_allocations(), 0u);
}

TEST(CudaTranslate, each_allocating_api_has_its_memory_kind) {
  const std::vector<std::pair<Api, MemoryKind>> cases = {
      {Api::cuda_malloc, MemoryKind::device},
      {Api::cu_mem_alloc, MemoryKind::device},
      {Api::cuda_malloc_managed, MemoryKind::managed},
      {Api::cu_mem_alloc_managed, MemoryKind::managed},
      {Api::cuda_malloc_host, MemoryKind::pinned},
      {Api::cuda_host_alloc, MemoryKind::pinned},
      {Api::cu_mem_alloc_host, MemoryKind::pinned},
      {Api::cu_mem_host_alloc, MemoryKind::pinned},
      {Api::cuda_malloc_async, MemoryKind::async_pool},
      {Api::cuda_malloc_from_pool_async, MemoryKind::async_pool},
      {Api::cu_mem_alloc_async, MemoryKind::async_pool},
      {Api::cu_mem_alloc_from_pool_async, MemoryKind::async_pool},
  };
  for (const auto& [api, kind] : cases) {
    Translator t;
    const auto events = run(t, exit_of(api, 0x10000, 256));
    ASSERT_EQ(events.size(), 1u) << api_name(api);
    EXPECT_EQ(events[0].kind, kind) << api_name(api);
    EXPECT_EQ(events[0].size, 256u) << api_name(api);
  }
}

TEST(CudaTranslate, a_pool_allocation_and_its_free_carry_the_pool_handle) {
  Translator t;
  ApiCall from_pool = exit_of(Api::cuda_malloc_from_pool_async, 0x30000, 512);
  from_pool.pool = 0xabc000;
  from_pool.stream = 0x77;
  const auto made = run(t, from_pool);
  ASSERT_EQ(made.size(), 1u);
  EXPECT_EQ(made[0].pool, 0xabc000u);
  EXPECT_EQ(made[0].stream, 0x77u);
  ApiCall default_pool = exit_of(Api::cuda_malloc_async, 0x50000, 512);  // the device's pool
  EXPECT_EQ(run(t, default_pool).at(0).pool, 0u);
  // cudaFreeAsync names no pool: the free takes its allocation's, on its own stream.
  ApiCall freed = enter_of(Api::cuda_free_async, 0x30000);
  freed.stream = 0x99;
  const auto gone = run(t, freed);
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0].pool, 0xabc000u);
  EXPECT_EQ(gone[0].stream, 0x99u);
  EXPECT_EQ(run(t, enter_of(Api::cu_mem_free_async, 0x50000)).at(0).pool, 0u);
  // In a trace, the pool is part of the event's origin and survives the round trip.
  Trace trace;
  trace.push_back(made[0]);
  trace.push_back(gone[0]);
  EXPECT_EQ(trace.pool(0), 0xabc000u);
  EXPECT_EQ(trace.event(1), gone[0]);
}

TEST(CudaTranslate, pitched_allocations_count_pitch_times_rows_times_depth) {
  Translator t;
  ApiCall pitch = exit_of(Api::cuda_malloc_pitch, 0x20000, 1000);
  pitch.pitch = 1024;
  pitch.height = 10;
  EXPECT_EQ(run(t, pitch).at(0).size, 10240u);

  ApiCall cube = exit_of(Api::cuda_malloc_3d, 0x40000, 100);
  cube.pitch = 512;
  cube.height = 4;
  cube.depth = 3;
  EXPECT_EQ(run(t, cube).at(0).size, 512u * 4 * 3);

  ApiCall driver = exit_of(Api::cu_mem_alloc_pitch, 0x80000, 300);
  driver.pitch = 512;
  driver.height = 2;
  driver.depth = 99;  // not a 3D call: ignored
  EXPECT_EQ(run(t, driver).at(0).size, 1024u);

  ApiCall failed = exit_of(Api::cuda_malloc_pitch, 0, 1000);
  failed.succeeded = false;
  failed.height = 10;
  EXPECT_EQ(run(t, failed).at(0).size, 10000u);  // no pitch came back: the row width stands in
}

TEST(CudaTranslate, async_allocations_keep_their_stream_and_free_on_its_own_stream) {
  Translator t;
  ApiCall alloc = exit_of(Api::cuda_malloc_async, 0x30000, 512);
  alloc.stream = 0xabc;
  const Event a = run(t, alloc).at(0);
  EXPECT_EQ(a.stream, 0xabcu);
  EXPECT_EQ(a.kind, MemoryKind::async_pool);
  ApiCall free = enter_of(Api::cuda_free_async, 0x30000);
  free.stream = 0xdef;
  const Event f = run(t, free).at(0);
  EXPECT_EQ(f.stream, 0xdefu);
  EXPECT_EQ(f.kind, MemoryKind::async_pool);
}

TEST(CudaTranslate, async_memory_freed_by_plain_cuda_free_keeps_its_kind) {
  Translator t;
  run(t, exit_of(Api::cuda_malloc_async, 0x30000, 512));
  EXPECT_EQ(run(t, enter_of(Api::cuda_free, 0x30000)).at(0).kind, MemoryKind::async_pool);
}

TEST(CudaTranslate, virtual_memory_map_is_the_allocation_on_the_handles_device) {
  Translator t;
  ApiCall create = exit_of(Api::cu_mem_create, 0, 2 << 20, 0);
  create.handle = 42;
  create.handle_device = 3;
  EXPECT_TRUE(run(t, create).empty());
  EXPECT_EQ(t.live_physical_handles(), 1u);

  ApiCall map = exit_of(Api::cu_mem_map, 0x7000000, 2 << 20, 0);
  map.handle = 42;
  const auto mapped = run(t, map);
  ASSERT_EQ(mapped.size(), 1u);
  EXPECT_EQ(mapped[0].kind, MemoryKind::vmm);
  EXPECT_EQ(mapped[0].device, 3);
  EXPECT_EQ(mapped[0].size, 2u << 20);

  // Released while mapped (the usual order): the mapping lives on until it is unmapped.
  ApiCall release = enter_of(Api::cu_mem_release, 0);
  release.handle = 42;
  EXPECT_TRUE(run(t, release).empty());
  EXPECT_EQ(t.live_physical_handles(), 0u);

  ApiCall unmap = enter_of(Api::cu_mem_unmap, 0x7000000);
  unmap.size = 2 << 20;
  const auto unmapped = run(t, unmap);
  ASSERT_EQ(unmapped.size(), 1u);
  EXPECT_EQ(unmapped[0].op, Op::free);
  EXPECT_EQ(unmapped[0].device, 3);
  EXPECT_EQ(t.live_mappings(), 0u);
}

TEST(CudaTranslate, one_unmap_over_several_mappings_frees_each) {
  Translator t;
  for (std::uint64_t i = 0; i < 3; ++i) {
    ApiCall map = exit_of(Api::cu_mem_map, 0x9000000 + i * 0x100000, 0x100000);
    map.handle = 5;
    run(t, map);
  }
  ApiCall unmap = enter_of(Api::cu_mem_unmap, 0x9000000);
  unmap.size = 0x200000;  // the first two only
  const auto events = run(t, unmap);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].address, 0x9000000u);
  EXPECT_EQ(events[1].address, 0x9100000u);
  EXPECT_EQ(t.live_mappings(), 1u);
}

TEST(CudaTranslate, failed_map_and_failed_create_record_nothing) {
  Translator t;
  ApiCall create = exit_of(Api::cu_mem_create, 0, 4096);
  create.handle = 9;
  create.succeeded = false;
  EXPECT_TRUE(run(t, create).empty());
  EXPECT_EQ(t.live_physical_handles(), 0u);
  ApiCall map = exit_of(Api::cu_mem_map, 0x1000, 4096);
  map.succeeded = false;
  EXPECT_TRUE(run(t, map).empty());
}

TEST(CudaTranslate, driver_calls_cover_allocation_and_free) {
  Translator t;
  run(t, exit_of(Api::cu_mem_alloc, 0x100, 10));
  run(t, exit_of(Api::cu_mem_alloc_async, 0x200, 10));
  run(t, exit_of(Api::cu_mem_alloc_host, 0x300, 10));
  EXPECT_EQ(run(t, enter_of(Api::cu_mem_free, 0x100)).at(0).kind, MemoryKind::device);
  EXPECT_EQ(run(t, enter_of(Api::cu_mem_free_async, 0x200)).at(0).kind, MemoryKind::async_pool);
  EXPECT_EQ(run(t, enter_of(Api::cu_mem_free_host, 0x300)).at(0).kind, MemoryKind::pinned);
  EXPECT_EQ(t.live_allocations(), 0u);
}

TEST(CudaTranslate, api_names_and_families) {
  EXPECT_EQ(api_name(Api::cuda_malloc), "cudaMalloc");
  EXPECT_EQ(api_name(Api::cu_mem_unmap), "cuMemUnmap");
  EXPECT_TRUE(is_runtime_api(Api::cuda_free_async));
  EXPECT_FALSE(is_runtime_api(Api::cu_mem_alloc));
}

// The call that initialises CUDA loads the tracer mid-call: its cuMemAlloc is seen (the driver
// callback has no runtime entry to be nested in), then the cudaMalloc's exit with the same
// address. One allocation, one event.
TEST(CudaTranslate, runtime_exit_after_its_own_driver_call_is_not_recorded_twice) {
  Translator t;
  EXPECT_EQ(run(t, exit_of(Api::cu_mem_alloc, 0xB000, 64)).size(), 1u);
  EXPECT_TRUE(run(t, exit_of(Api::cuda_malloc, 0xB000, 64)).empty());
  EXPECT_EQ(t.live_allocations(), 1u);
  EXPECT_EQ(run(t, enter_of(Api::cuda_free, 0xB000)).size(), 1u);
  // Another thread's runtime allocation at a live address is a real (if odd) second event.
  run(t, exit_of(Api::cu_mem_alloc, 0xC000, 64));
  ApiCall other = exit_of(Api::cuda_malloc, 0xC000, 64);
  other.thread = 8;
  EXPECT_EQ(run(t, other).size(), 1u);
  // A runtime allocation over a live runtime allocation is recorded too (the reader counts it).
  run(t, exit_of(Api::cuda_malloc, 0xD000, 64));
  EXPECT_EQ(run(t, exit_of(Api::cuda_malloc, 0xD000, 64)).size(), 1u);
}

TEST(CudaCallNesting, driver_calls_inside_a_runtime_call_are_not_admitted) {
  CallNesting nesting;
  EXPECT_TRUE(nesting.admit(false, Site::enter));  // a program's own driver call
  EXPECT_TRUE(nesting.admit(false, Site::exit));
  EXPECT_TRUE(nesting.admit(true, Site::enter));    // cudaMalloc
  EXPECT_FALSE(nesting.admit(false, Site::enter));  // its cuMemAlloc
  EXPECT_FALSE(nesting.admit(false, Site::exit));
  EXPECT_TRUE(nesting.admit(true, Site::exit));
  EXPECT_EQ(nesting.runtime_depth(), 0);
  EXPECT_TRUE(nesting.admit(false, Site::enter));
}

TEST(CudaCallNesting, an_exit_without_its_entry_does_not_hide_later_driver_calls) {
  CallNesting nesting;
  // The runtime call that initialised CUDA: the tracer subscribed in the middle of it.
  EXPECT_TRUE(nesting.admit(true, Site::exit));
  EXPECT_EQ(nesting.runtime_depth(), 0);
  EXPECT_TRUE(nesting.admit(false, Site::enter));
}

// A program's calls translated and written as a trace resolve without anomalies: the ordering
// rule (allocs at exit, frees at entry) keeps reused addresses consistent.
TEST(CudaTranslate, translated_calls_resolve_without_anomalies_when_addresses_are_reused) {
  Translator t;
  Trace trace;
  auto add = [&](const ApiCall& call) {
    std::vector<Event> out;
    t.translate(call, out);
    for (const Event& e : out) trace.push_back(e);
  };
  for (int round = 0; round < 3; ++round) {
    ApiCall free_enter = enter_of(Api::cuda_free, 0xA000);
    ApiCall malloc_enter = exit_of(Api::cuda_malloc, 0, 128);
    malloc_enter.site = Site::enter;
    add(malloc_enter);
    add(exit_of(Api::cuda_malloc, 0xA000, 128));  // the same address each round
    add(free_enter);
    ApiCall free_exit = free_enter;
    free_exit.site = Site::exit;
    add(free_exit);
  }
  const ResolvedTrace resolved = resolve(trace);
  EXPECT_EQ(resolved.anomalies.total(), 0u);
  EXPECT_EQ(resolved.allocation_count(), 3u);
  EXPECT_EQ(resolved.anomalies.leaks, 0u);
}

}  // namespace
}  // namespace alloclab::cuda
