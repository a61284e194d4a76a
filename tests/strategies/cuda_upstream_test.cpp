// The CUDA upstreams (cuda, cuda-async, cuda-host): registered only with ALLOCLAB_CUDA=ON; without
// a device, construction fails with a clear UpstreamError and the device tests skip.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "alloclab/strategies/registry.hpp"
#include "alloclab/strategies/upstream/registry.hpp"
#if ALLOCLAB_HAVE_CUDA
#include "alloclab/strategies/upstream/cuda.hpp"
#endif

namespace alloclab {
namespace {

const char* const kCudaNames[] = {"cuda", "cuda-async", "cuda-host"};

bool listed(const std::string& name) {
  const auto& names = upstream_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::string construction_error(const std::string& name) {
  try {
    make_upstream(name);
  } catch (const UpstreamError& e) {
    return e.what();
  }
  return "";
}

#if !ALLOCLAB_HAVE_CUDA

TEST(CudaUpstream, built_without_cuda_the_names_say_so) {
  for (const char* name : kCudaNames) {
    EXPECT_FALSE(listed(name)) << name;
    EXPECT_EQ(construction_error(name),
              "cuda: alloclab was built without CUDA (ALLOCLAB_CUDA=OFF)");
  }
}

#else

TEST(CudaUpstream, the_registry_lists_the_three_names) {
  for (const char* name : kCudaNames) {
    EXPECT_TRUE(listed(name)) << name;
    EXPECT_TRUE(is_real_upstream(name)) << name;
  }
}

TEST(CudaUpstream, without_a_device_construction_names_the_reason) {
  const std::optional<std::string> why = CudaUpstream::unavailable();
  if (!why) GTEST_SKIP() << "a CUDA device is present: this test checks the no-device error";
  EXPECT_NE(why->find("cuda: no CUDA device available (cudaGetDeviceCount: "), std::string::npos)
      << *why;
  for (const char* name : kCudaNames) EXPECT_EQ(construction_error(name), *why) << name;
  EXPECT_EQ(construction_error("cuda-async:release_threshold=1GiB"), *why);
}

TEST(CudaUpstream, a_bad_parameter_is_an_upstream_error) {
  EXPECT_NE(construction_error("cuda:release_threshold=1GiB").find("only parameter"),
            std::string::npos);
  EXPECT_NE(construction_error("cuda-async:release_threshold=lots").find("cuda-async"),
            std::string::npos);
}

class CudaDevice : public ::testing::TestWithParam<CudaUpstream::Kind> {
 protected:
  void SetUp() override {
    if (const std::optional<std::string> why = CudaUpstream::unavailable())
      GTEST_SKIP() << "no CUDA device: " << *why;
  }
};

TEST_P(CudaDevice, allocates_exact_capacity_and_frees) {
  CudaUpstream upstream(GetParam());
  for (std::uint64_t size : {0u, 1u, 4096u, 1u << 20, 64u << 20}) {
    const std::optional<Block> block = upstream.allocate(size);
    ASSERT_TRUE(block) << size;
    EXPECT_EQ(block->capacity, size);
    EXPECT_NE(block->address, 0u);
    upstream.touch(block->address, size);
    upstream.deallocate(*block);
  }
}

TEST_P(CudaDevice, an_impossible_allocation_is_nullopt_and_the_next_one_works) {
  CudaUpstream upstream(GetParam());
  EXPECT_FALSE(upstream.allocate(std::uint64_t{1} << 50));  // 1 PiB
  const std::optional<Block> block = upstream.allocate(1 << 20);
  ASSERT_TRUE(block);
  upstream.deallocate(*block);
}

TEST_P(CudaDevice, a_memory_limit_fails_beyond_it) {
  const char* name = GetParam() == CudaUpstream::Kind::device  ? "cuda"
                     : GetParam() == CudaUpstream::Kind::async ? "cuda-async"
                                                               : "cuda-host";
  UpstreamOptions options;
  options.limit_bytes = 3u << 20;
  const auto upstream = make_upstream(name, options);
  const std::optional<Block> a = upstream->allocate(2u << 20);
  ASSERT_TRUE(a);
  EXPECT_FALSE(upstream->allocate(2u << 20));
  upstream->touch(a->address, a->capacity);  // forwarded through the limit adaptor
  upstream->deallocate(*a);
  const std::optional<Block> b = upstream->allocate(2u << 20);
  ASSERT_TRUE(b);
  upstream->deallocate(*b);
}

TEST_P(CudaDevice, a_strategy_runs_over_it) {
  CudaUpstream upstream(GetParam());
  const auto strategy = make_strategy("pytorch", upstream);
  for (int i = 0; i < 100; ++i) {
    const std::optional<Block> block = strategy->allocate(std::uint64_t{1000} << (i % 12), 0);
    ASSERT_TRUE(block);
    upstream.touch(block->address, block->capacity);
    strategy->deallocate(*block);
  }
  strategy->release();
  EXPECT_EQ(strategy->stats().cached_bytes, 0u);
}

INSTANTIATE_TEST_SUITE_P(Kinds, CudaDevice,
                         ::testing::Values(CudaUpstream::Kind::device, CudaUpstream::Kind::async,
                                           CudaUpstream::Kind::host),
                         [](const ::testing::TestParamInfo<CudaUpstream::Kind>& param_info) {
                           return param_info.param == CudaUpstream::Kind::device
                                      ? std::string("cuda")
                                  : param_info.param == CudaUpstream::Kind::async
                                      ? std::string("async")
                                      : std::string("host");
                         });

#endif

}  // namespace
}  // namespace alloclab
