// The application's markers for the SDK's MARKER domain (kreplay/markers.h): NVTX push/pop and
// start/end ranges with their domains (CUPTI's NVTX callbacks, which NVTX delivers when
// NVTX_INJECTION64_PATH names libkreplay_cuda.so: injection.cpp) and cuProfilerStart/Stop (the
// driver calls cudaProfilerStart/Stop make). Enabled only when a tool subscribes to MARKER.
#pragma once

#include <cupti.h>

namespace kreplay::cuda::markers {

/// Once the tools are initialized: when one subscribes to MARKER, enable the NVTX and profiler
/// callbacks on @p subscriber.
void enable(CUpti_SubscriberHandle subscriber);
/// Whether enable() turned them on.
bool enabled();
/// A CUPTI_CB_DOMAIN_NVTX callback.
void nvtx_callback(CUpti_CallbackId cbid, const CUpti_NvtxData* data);
/// The API entry of a driver call: cuProfilerStart / cuProfilerStop become markers.
void driver_call_enter(CUpti_CallbackId cbid);

}  // namespace kreplay::cuda::markers
