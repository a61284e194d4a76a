// CUPTI callback data -> ApiCall / NvtxCall, on data built by hand the way CUPTI passes it.
#include <gtest/gtest.h>

#include "tracer/cuda/cupti_decode.hpp"
// cupti.h brings the runtime and driver parameter structs; the NVTX ones come apart.
#include <generated_nvtx_meta.h>

namespace alloclab::cuda {
namespace {

CUpti_CallbackData callback(CUpti_ApiCallbackSite site, const void* params, void* result) {
  CUpti_CallbackData data{};
  data.callbackSite = site;
  data.functionParams = params;
  data.functionReturnValue = result;
  return data;
}

TEST(CuptiDecode, cuda_malloc_exit_reads_the_returned_pointer_and_status) {
  void* returned = reinterpret_cast<void*>(0x7f0000001000);
  cudaMalloc_v3020_params params{&returned, 4096};
  cudaError_t status = cudaSuccess;
  ApiCall call;
  ASSERT_TRUE(decode_api_call(CUPTI_CB_DOMAIN_RUNTIME_API,
                              CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
                              callback(CUPTI_API_EXIT, &params, &status), call));
  EXPECT_EQ(call.api, Api::cuda_malloc);
  EXPECT_EQ(call.site, Site::exit);
  EXPECT_TRUE(call.succeeded);
  EXPECT_EQ(call.address, 0x7f0000001000u);
  EXPECT_EQ(call.size, 4096u);

  status = cudaErrorMemoryAllocation;
  ASSERT_TRUE(decode_api_call(CUPTI_CB_DOMAIN_RUNTIME_API,
                              CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
                              callback(CUPTI_API_EXIT, &params, &status), call));
  EXPECT_FALSE(call.succeeded);
}

TEST(CuptiDecode, entry_does_not_read_out_parameters) {
  cudaMalloc_v3020_params params{nullptr, 64};  // nothing to read before the call
  ApiCall call;
  ASSERT_TRUE(decode_api_call(CUPTI_CB_DOMAIN_RUNTIME_API,
                              CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
                              callback(CUPTI_API_ENTER, &params, nullptr), call));
  EXPECT_EQ(call.site, Site::enter);
  EXPECT_EQ(call.address, 0u);
}

TEST(CuptiDecode, async_calls_carry_stream_and_pool) {
  void* returned = reinterpret_cast<void*>(0x5000);
  auto stream = reinterpret_cast<cudaStream_t>(0x1234);
  auto pool = reinterpret_cast<cudaMemPool_t>(0x9999);
  cudaMallocFromPoolAsync_v11020_params params{&returned, 256, pool, stream};
  cudaError_t status = cudaSuccess;
  ApiCall call;
  ASSERT_TRUE(decode_api_call(CUPTI_CB_DOMAIN_RUNTIME_API,
                              CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020,
                              callback(CUPTI_API_EXIT, &params, &status), call));
  EXPECT_EQ(call.api, Api::cuda_malloc_from_pool_async);
  EXPECT_EQ(call.stream, 0x1234u);
  EXPECT_EQ(call.pool, 0x9999u);

  cudaFreeAsync_v11020_params free_params{returned, stream};
  ASSERT_TRUE(decode_api_call(CUPTI_CB_DOMAIN_RUNTIME_API,
                              CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020,
                              callback(CUPTI_API_ENTER, &free_params, nullptr), call));
  EXPECT_EQ(call.api, Api::cuda_free_async);
  EXPECT_EQ(call.address, 0x5000u);
  EXPECT_EQ(call.stream, 0x1234u);
}

TEST(CuptiDecode, pitched_and_3d_calls_read_pitch_and_extent) {
  void* returned = reinterpret_cast<void*>(0x8000);
  size_t pitch = 1024;
  cudaMallocPitch_v3020_params params{&returned, &pitch, 1000, 7};
  cudaError_t status = cudaSuccess;
  ApiCall call;
  ASSERT_TRUE(decode_api_call(CUPTI_CB_DOMAIN_RUNTIME_API,
                              CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020,
                              callback(CUPTI_API_EXIT, &params, &status), call));
  EXPECT_EQ(call.pitch, 1024u);
  EXPECT_EQ(call.height, 7u);

  cudaPitchedPtr pitched{reinterpret_cast<void*>(0x9000), 512, 500, 4};
  cudaMalloc3D_v3020_params cube{&pitched, cudaExtent{500, 4, 3}};
  ASSERT_TRUE(decode_api_call(CUPTI_CB_DOMAIN_RUNTIME_API,
                              CUPTI_RUNTIME_TRACE_CBID_cudaMalloc3D_v3020,
                              callback(CUPTI_API_EXIT, &cube, &status), call));
  EXPECT_EQ(call.address, 0x9000u);
  EXPECT_EQ(call.pitch, 512u);
  EXPECT_EQ(call.depth, 3u);
  Translator t;
  std::vector<Event> out;
  t.translate(call, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].size, 512u * 4 * 3);
}

TEST(CuptiDecode, driver_virtual_memory_calls) {
  CUmemGenericAllocationHandle handle = 77;
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 2;
  cuMemCreate_params create{&handle, 2 << 20, &prop, 0};
  CUresult status = CUDA_SUCCESS;
  ApiCall call;
  ASSERT_TRUE(decode_api_call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemCreate,
                              callback(CUPTI_API_EXIT, &create, &status), call));
  EXPECT_EQ(call.api, Api::cu_mem_create);
  EXPECT_EQ(call.handle, 77u);
  EXPECT_EQ(call.handle_device, 2);
  EXPECT_EQ(call.size, 2u << 20);

  cuMemMap_params map{0x7000000, 2 << 20, 0, 77, 0};
  ASSERT_TRUE(decode_api_call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemMap,
                              callback(CUPTI_API_EXIT, &map, &status), call));
  EXPECT_EQ(call.api, Api::cu_mem_map);
  EXPECT_EQ(call.address, 0x7000000u);
  EXPECT_EQ(call.handle, 77u);

  cuMemUnmap_params unmap{0x7000000, 2 << 20};
  ASSERT_TRUE(decode_api_call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemUnmap,
                              callback(CUPTI_API_ENTER, &unmap, nullptr), call));
  EXPECT_EQ(call.api, Api::cu_mem_unmap);
  EXPECT_EQ(call.size, 2u << 20);
}

TEST(CuptiDecode, driver_alloc_and_free) {
  CUdeviceptr returned = 0xabc000;
  cuMemAlloc_v2_params params{&returned, 100};
  CUresult status = CUDA_SUCCESS;
  ApiCall call;
  ASSERT_TRUE(decode_api_call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
                              callback(CUPTI_API_EXIT, &params, &status), call));
  EXPECT_EQ(call.api, Api::cu_mem_alloc);
  EXPECT_EQ(call.address, 0xabc000u);
  cuMemFreeAsync_params free_params{0xabc000, reinterpret_cast<CUstream>(0x42)};
  ASSERT_TRUE(decode_api_call(CUPTI_CB_DOMAIN_DRIVER_API,
                              CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz,
                              callback(CUPTI_API_ENTER, &free_params, nullptr), call));
  EXPECT_EQ(call.api, Api::cu_mem_free_async);
  EXPECT_EQ(call.stream, 0x42u);
}

TEST(CuptiDecode, untraced_callbacks_and_missing_params_are_refused) {
  ApiCall call;
  int dummy = 0;
  EXPECT_FALSE(decode_api_call(CUPTI_CB_DOMAIN_RUNTIME_API,
                               CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                               callback(CUPTI_API_ENTER, &dummy, nullptr), call));
  EXPECT_FALSE(decode_api_call(CUPTI_CB_DOMAIN_RUNTIME_API,
                               CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
                               callback(CUPTI_API_ENTER, nullptr, nullptr), call));
  EXPECT_FALSE(api_of(CUPTI_CB_DOMAIN_NVTX, CUPTI_CBID_NVTX_nvtxRangePushA));
}

TEST(CuptiDecode, every_enabled_callback_id_decodes_to_an_api) {
  for (auto [domain, ids] : {std::pair{CUPTI_CB_DOMAIN_RUNTIME_API, traced_runtime_cbids()},
                             std::pair{CUPTI_CB_DOMAIN_DRIVER_API, traced_driver_cbids()}}) {
    ASSERT_GT(ids.count, 0u);
    for (std::size_t i = 0; i < ids.count; ++i)
      EXPECT_TRUE(api_of(domain, ids.ids[i])) << "domain " << domain << " cbid " << ids.ids[i];
  }
  EXPECT_EQ(traced_nvtx_cbids().count, 10u);
}

TEST(CuptiDecode, nvtx_push_pop_start_end) {
  nvtxRangePushA_params push{"step"};
  CUpti_NvtxData data{"nvtxRangePushA", &push, nullptr};
  auto call = decode_nvtx_call(CUPTI_CBID_NVTX_nvtxRangePushA, data);
  ASSERT_TRUE(call);
  EXPECT_EQ(call->kind, NvtxCall::Kind::push);
  EXPECT_EQ(call->name, "step");

  nvtxEventAttributes_t attributes{};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attributes.message.ascii = "epoch";
  nvtxDomainRangeStartEx_params start{nullptr, {&attributes}};
  nvtxRangeId_t id = 99;
  data = CUpti_NvtxData{"nvtxDomainRangeStartEx", &start, &id};
  call = decode_nvtx_call(CUPTI_CBID_NVTX_nvtxDomainRangeStartEx, data);
  ASSERT_TRUE(call);
  EXPECT_EQ(call->kind, NvtxCall::Kind::start);
  EXPECT_EQ(call->name, "epoch");
  EXPECT_EQ(call->id, 99u);

  nvtxRangeEnd_params end{99};
  data = CUpti_NvtxData{"nvtxRangeEnd", &end, nullptr};
  call = decode_nvtx_call(CUPTI_CBID_NVTX_nvtxRangeEnd, data);
  ASSERT_TRUE(call);
  EXPECT_EQ(call->kind, NvtxCall::Kind::end);
  EXPECT_EQ(call->id, 99u);

  nvtxRangePop_params pop{};
  data = CUpti_NvtxData{"nvtxRangePop", &pop, nullptr};
  call = decode_nvtx_call(CUPTI_CBID_NVTX_nvtxRangePop, data);
  ASSERT_TRUE(call);
  EXPECT_EQ(call->kind, NvtxCall::Kind::pop);
}

TEST(CuptiDecode, nvtx_names_that_are_not_ascii_are_empty) {
  nvtxEventAttributes_t attributes{};
  attributes.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  nvtxRangePushEx_params push{&attributes};
  CUpti_NvtxData data{"nvtxRangePushEx", &push, nullptr};
  const auto call = decode_nvtx_call(CUPTI_CBID_NVTX_nvtxRangePushEx, data);
  ASSERT_TRUE(call);
  EXPECT_TRUE(call->name.empty());
  EXPECT_FALSE(decode_nvtx_call(CUPTI_CBID_NVTX_nvtxMarkA, data));
}

}  // namespace
}  // namespace alloclab::cuda
