// Range replay and the CUDA driver calls an application makes between launches: which ones close
// the open range (a copy, an allocation, a module load, ...), which are plain synchronizations the
// range may stay open across, which order streams by events, and the markers (cudaProfilerStart /
// Stop, NVTX ranges) that delimit ranges. Called by the interceptor at the API entry of every
// driver call that is not a launch, only while a tool uses range replay.
#pragma once

#include <cupti.h>

#include <cstdint>

namespace kreplay::cuda::range_calls {

/// Whether a tool has range replay configured and active.
bool range_mode();
/// The API entry of a driver call other than a launch, on a context of @p agent (0: unknown).
void driver_call_enter(CUpti_CallbackId cbid, const CUpti_CallbackData* cb, uint64_t agent);
/// An NVTX push or pop (the range markers nvtx:NAME).
void nvtx_callback(CUpti_CallbackId cbid, const CUpti_NvtxData* data);

}  // namespace kreplay::cuda::range_calls
