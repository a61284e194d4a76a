#pragma once
// CUPTI's callback data, read into the tracer's plain structs. Reads memory only (parameter
// structs of generated_cuda_runtime_api_meta.h / generated_cuda_meta.h /
// generated_nvtx_meta.h): no call into CUDA or CUPTI, so it is tested on constructed data
// without a device.
#include <cupti.h>

#include <cstdint>
#include <optional>
#include <string_view>

#include "translate.hpp"

namespace alloclab::cuda {

// The API a runtime or driver callback id stands for; nullopt for the ones not traced.
std::optional<Api> api_of(CUpti_CallbackDomain domain, CUpti_CallbackId cbid);

// Fills api, site, succeeded and the parameter fields of `call` (not thread, time, device).
// False for callbacks that are not traced.
bool decode_api_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                     const CUpti_CallbackData& data, ApiCall& call);

// One NVTX call reduced to what run ranges need.
struct NvtxCall {
  enum class Kind : std::uint8_t { push, pop, start, end } kind = Kind::push;
  std::string_view name;  // push/start; empty when not an ASCII message (registered, wide)
  std::uint64_t id = 0;   // start (returned) and end
};
std::optional<NvtxCall> decode_nvtx_call(CUpti_CallbackId cbid, const CUpti_NvtxData& data);

// Callback ids the injection enables, per domain (the traced APIs and their _ptsz variants).
struct CallbackIds {
  const CUpti_CallbackId* ids;
  std::size_t count;
};
CallbackIds traced_runtime_cbids();
CallbackIds traced_driver_cbids();
CallbackIds traced_nvtx_cbids();

}  // namespace alloclab::cuda
