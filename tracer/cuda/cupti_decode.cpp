#include "cupti_decode.hpp"

// cupti.h brings the runtime and driver parameter structs; the NVTX ones come apart.
#include <generated_nvtx_meta.h>

#include <array>
#include <cstring>

namespace alloclab::cuda {
namespace {

constexpr std::array runtime_cbids = {
    CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMalloc3D_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020,
};

constexpr std::array driver_cbids = {
    CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost,
    CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemCreate,
    CUPTI_DRIVER_TRACE_CBID_cuMemRelease,
    CUPTI_DRIVER_TRACE_CBID_cuMemMap,
    CUPTI_DRIVER_TRACE_CBID_cuMemUnmap,
};

constexpr std::array nvtx_cbids = {
    CUPTI_CBID_NVTX_nvtxRangePushA,         CUPTI_CBID_NVTX_nvtxRangePushEx,
    CUPTI_CBID_NVTX_nvtxRangePop,           CUPTI_CBID_NVTX_nvtxRangeStartA,
    CUPTI_CBID_NVTX_nvtxRangeStartEx,       CUPTI_CBID_NVTX_nvtxRangeEnd,
    CUPTI_CBID_NVTX_nvtxDomainRangePushEx,  CUPTI_CBID_NVTX_nvtxDomainRangePop,
    CUPTI_CBID_NVTX_nvtxDomainRangeStartEx, CUPTI_CBID_NVTX_nvtxDomainRangeEnd,
};

std::optional<Api> runtime_api(CUpti_CallbackId cbid) {
  switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020:
      return Api::cuda_malloc;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020:
      return Api::cuda_malloc_pitch;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc3D_v3020:
      return Api::cuda_malloc_3d;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000:
      return Api::cuda_malloc_managed;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020:
      return Api::cuda_malloc_host;
    case CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020:
      return Api::cuda_host_alloc;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020:
      return Api::cuda_malloc_async;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020:
      return Api::cuda_malloc_from_pool_async;
    case CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020:
      return Api::cuda_free;
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020:
      return Api::cuda_free_host;
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020:
      return Api::cuda_free_async;
    default:
      return std::nullopt;
  }
}

std::optional<Api> driver_api(CUpti_CallbackId cbid) {
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2:
      return Api::cu_mem_alloc;
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2:
      return Api::cu_mem_alloc_pitch;
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged:
      return Api::cu_mem_alloc_managed;
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2:
      return Api::cu_mem_alloc_host;
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc:
      return Api::cu_mem_host_alloc;
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz:
      return Api::cu_mem_alloc_async;
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz:
      return Api::cu_mem_alloc_from_pool_async;
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
      return Api::cu_mem_free;
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost:
      return Api::cu_mem_free_host;
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
      return Api::cu_mem_free_async;
    case CUPTI_DRIVER_TRACE_CBID_cuMemCreate:
      return Api::cu_mem_create;
    case CUPTI_DRIVER_TRACE_CBID_cuMemRelease:
      return Api::cu_mem_release;
    case CUPTI_DRIVER_TRACE_CBID_cuMemMap:
      return Api::cu_mem_map;
    case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap:
      return Api::cu_mem_unmap;
    default:
      return std::nullopt;
  }
}

template <typename T>
const T& params(const CUpti_CallbackData& data) {
  return *static_cast<const T*>(data.functionParams);
}

std::uint64_t handle_value(const void* handle) {
  return reinterpret_cast<std::uintptr_t>(handle);
}

// An out-parameter read at exit: what the call stored there (0 before the call or if null).
template <typename T>
std::uint64_t returned(const T* slot, bool exit) {
  if (!exit || slot == nullptr) return 0;
  if constexpr (std::is_pointer_v<T>)
    return handle_value(*slot);
  else
    return static_cast<std::uint64_t>(*slot);
}

void decode_runtime(CUpti_CallbackId cbid, const CUpti_CallbackData& data, bool exit,
                    ApiCall& call) {
  switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020: {
      const auto& p = params<cudaMalloc_v3020_params>(data);
      call.address = returned(p.devPtr, exit);
      call.size = p.size;
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020: {
      const auto& p = params<cudaMallocPitch_v3020_params>(data);
      call.address = returned(p.devPtr, exit);
      call.pitch = returned(p.pitch, exit);
      call.size = p.width;
      call.height = p.height;
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc3D_v3020: {
      const auto& p = params<cudaMalloc3D_v3020_params>(data);
      if (exit && p.pitchedDevPtr) {
        call.address = handle_value(p.pitchedDevPtr->ptr);
        call.pitch = p.pitchedDevPtr->pitch;
      }
      call.size = p.extent.width;
      call.height = p.extent.height;
      call.depth = p.extent.depth;
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000: {
      const auto& p = params<cudaMallocManaged_v6000_params>(data);
      call.address = returned(p.devPtr, exit);
      call.size = p.size;
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020: {
      const auto& p = params<cudaMallocHost_v3020_params>(data);
      call.address = returned(p.ptr, exit);
      call.size = p.size;
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020: {
      const auto& p = params<cudaHostAlloc_v3020_params>(data);
      call.address = returned(p.pHost, exit);
      call.size = p.size;
      break;
    }
    // The _ptsz variants have the same parameter layout as the plain ones.
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020: {
      const auto& p = params<cudaMallocAsync_v11020_params>(data);
      call.address = returned(p.devPtr, exit);
      call.size = p.size;
      call.stream = handle_value(p.hStream);
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020: {
      const auto& p = params<cudaMallocFromPoolAsync_v11020_params>(data);
      call.address = returned(p.ptr, exit);
      call.size = p.size;
      call.pool = handle_value(p.memPool);
      call.stream = handle_value(p.stream);
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020:
      call.address = handle_value(params<cudaFree_v3020_params>(data).devPtr);
      break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020:
      call.address = handle_value(params<cudaFreeHost_v3020_params>(data).ptr);
      break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020: {
      const auto& p = params<cudaFreeAsync_v11020_params>(data);
      call.address = handle_value(p.devPtr);
      call.stream = handle_value(p.hStream);
      break;
    }
    default:
      break;
  }
}

void decode_driver(CUpti_CallbackId cbid, const CUpti_CallbackData& data, bool exit,
                   ApiCall& call) {
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2: {
      const auto& p = params<cuMemAlloc_v2_params>(data);
      call.address = returned(p.dptr, exit);
      call.size = p.bytesize;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2: {
      const auto& p = params<cuMemAllocPitch_v2_params>(data);
      call.address = returned(p.dptr, exit);
      call.pitch = returned(p.pPitch, exit);
      call.size = p.WidthInBytes;
      call.height = p.Height;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged: {
      const auto& p = params<cuMemAllocManaged_params>(data);
      call.address = returned(p.dptr, exit);
      call.size = p.bytesize;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2: {
      const auto& p = params<cuMemAllocHost_v2_params>(data);
      call.address = returned(p.pp, exit);
      call.size = p.bytesize;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc: {
      const auto& p = params<cuMemHostAlloc_params>(data);
      call.address = returned(p.pp, exit);
      call.size = p.bytesize;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz: {
      const auto& p = params<cuMemAllocAsync_params>(data);
      call.address = returned(p.dptr, exit);
      call.size = p.bytesize;
      call.stream = handle_value(p.hStream);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz: {
      const auto& p = params<cuMemAllocFromPoolAsync_params>(data);
      call.address = returned(p.dptr, exit);
      call.size = p.bytesize;
      call.pool = handle_value(p.pool);
      call.stream = handle_value(p.hStream);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
      call.address = params<cuMemFree_v2_params>(data).dptr;
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost:
      call.address = handle_value(params<cuMemFreeHost_params>(data).p);
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz: {
      const auto& p = params<cuMemFreeAsync_params>(data);
      call.address = p.dptr;
      call.stream = handle_value(p.hStream);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemCreate: {
      const auto& p = params<cuMemCreate_params>(data);
      call.handle = returned(p.handle, exit);
      call.size = p.size;
      call.handle_device = p.prop && p.prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE
                               ? static_cast<DeviceId>(p.prop->location.id)
                               : cpu_device;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemRelease:
      call.handle = params<cuMemRelease_params>(data).handle;
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuMemMap: {
      const auto& p = params<cuMemMap_params>(data);
      call.address = p.ptr;
      call.size = p.size;
      call.handle = p.handle;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap: {
      const auto& p = params<cuMemUnmap_params>(data);
      call.address = p.ptr;
      call.size = p.size;
      break;
    }
    default:
      break;
  }
}

std::string_view ascii_message(const nvtxEventAttributes_t* attributes) {
  if (!attributes || attributes->messageType != NVTX_MESSAGE_TYPE_ASCII ||
      !attributes->message.ascii)
    return {};
  return attributes->message.ascii;
}

std::uint64_t returned_range_id(const CUpti_NvtxData& data) {
  if (!data.functionReturnValue) return 0;
  nvtxRangeId_t id = 0;
  std::memcpy(&id, data.functionReturnValue, sizeof id);
  return id;
}

}  // namespace

std::optional<Api> api_of(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) return runtime_api(cbid);
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) return driver_api(cbid);
  return std::nullopt;
}

bool decode_api_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                     const CUpti_CallbackData& data, ApiCall& call) {
  const std::optional<Api> api = api_of(domain, cbid);
  if (!api || !data.functionParams) return false;
  call.api = *api;
  const bool exit = data.callbackSite == CUPTI_API_EXIT;
  call.site = exit ? Site::exit : Site::enter;
  // cudaError_t and CUresult are both 0 on success.
  int status = 0;
  if (exit && data.functionReturnValue)
    std::memcpy(&status, data.functionReturnValue, sizeof status);
  call.succeeded = status == 0;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
    decode_runtime(cbid, data, exit, call);
  else
    decode_driver(cbid, data, exit, call);
  return true;
}

std::optional<NvtxCall> decode_nvtx_call(CUpti_CallbackId cbid, const CUpti_NvtxData& data) {
  const void* p = data.functionParams;
  if (!p && cbid != CUPTI_CBID_NVTX_nvtxRangePop) return std::nullopt;
  NvtxCall call;
  switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxRangePushA:
      call.kind = NvtxCall::Kind::push;
      if (const char* m = static_cast<const nvtxRangePushA_params*>(p)->message) call.name = m;
      return call;
    case CUPTI_CBID_NVTX_nvtxRangePushEx:
      call.kind = NvtxCall::Kind::push;
      call.name = ascii_message(static_cast<const nvtxRangePushEx_params*>(p)->eventAttrib);
      return call;
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
      call.kind = NvtxCall::Kind::push;
      call.name =
          ascii_message(static_cast<const nvtxDomainRangePushEx_params*>(p)->core.eventAttrib);
      return call;
    case CUPTI_CBID_NVTX_nvtxRangePop:
    case CUPTI_CBID_NVTX_nvtxDomainRangePop:
      call.kind = NvtxCall::Kind::pop;
      return call;
    case CUPTI_CBID_NVTX_nvtxRangeStartA:
      call.kind = NvtxCall::Kind::start;
      if (const char* m = static_cast<const nvtxRangeStartA_params*>(p)->message) call.name = m;
      call.id = returned_range_id(data);
      return call;
    case CUPTI_CBID_NVTX_nvtxRangeStartEx:
      call.kind = NvtxCall::Kind::start;
      call.name = ascii_message(static_cast<const nvtxRangeStartEx_params*>(p)->eventAttrib);
      call.id = returned_range_id(data);
      return call;
    case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx:
      call.kind = NvtxCall::Kind::start;
      call.name =
          ascii_message(static_cast<const nvtxDomainRangeStartEx_params*>(p)->core.eventAttrib);
      call.id = returned_range_id(data);
      return call;
    case CUPTI_CBID_NVTX_nvtxRangeEnd:
      call.kind = NvtxCall::Kind::end;
      call.id = static_cast<const nvtxRangeEnd_params*>(p)->id;
      return call;
    case CUPTI_CBID_NVTX_nvtxDomainRangeEnd:
      call.kind = NvtxCall::Kind::end;
      call.id = static_cast<const nvtxDomainRangeEnd_params*>(p)->core.id;
      return call;
    default:
      return std::nullopt;
  }
}

CallbackIds traced_runtime_cbids() {
  static const std::array<CUpti_CallbackId, runtime_cbids.size()> ids = [] {
    std::array<CUpti_CallbackId, runtime_cbids.size()> out{};
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = runtime_cbids[i];
    return out;
  }();
  return {ids.data(), ids.size()};
}

CallbackIds traced_driver_cbids() {
  static const std::array<CUpti_CallbackId, driver_cbids.size()> ids = [] {
    std::array<CUpti_CallbackId, driver_cbids.size()> out{};
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = driver_cbids[i];
    return out;
  }();
  return {ids.data(), ids.size()};
}

CallbackIds traced_nvtx_cbids() {
  static const std::array<CUpti_CallbackId, nvtx_cbids.size()> ids = [] {
    std::array<CUpti_CallbackId, nvtx_cbids.size()> out{};
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = nvtx_cbids[i];
    return out;
  }();
  return {ids.data(), ids.size()};
}

}  // namespace alloclab::cuda
