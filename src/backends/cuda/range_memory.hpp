// Range replay through the application's memory calls on CUDA (docs/design.md, "Range replay"):
// memsets (cuMemsetD8/D16/D32 and their 2D forms, synchronous or asynchronous), copies between
// device memory (cuMemcpyDtoD*, cuMemcpy* between two device pointers) and copies from pageable
// host memory (cuMemcpyHtoD*, cuMemcpy* from host memory the driver does not know) join the open
// range (replay::Engine::range_memory_begin): the application's call is pass 0, and a CudaMemoryOp
// submits the same operation again on the same stream on every later pass, a host copy from the
// bytes captured at the call's ENTER. Allocations (memory_callbacks.cpp) join too, and frees are
// deferred to the range's end (range_free.cpp).
#pragma once

#include <cupti.h>

namespace kreplay::cuda::range_memory {

/// Whether memory calls may join ranges on CUDA at all: yes unless KREPLAY_RANGE_MEMORY=close,
/// which makes every memory call close the open range.
bool enabled();

/// Whether the driver call @p cbid can stay inside an open range (a memset or copy decoded below,
/// or a device allocation): range_calls then leaves it to the memory path instead of closing.
bool joinable_call(CUpti_CallbackId cbid);

/// ENTER of a copy or memset while a tool uses range replay: true when it joined the open range
/// (an InFlight in cb->correlationData finishes it at EXIT, see interception.hpp); false: the
/// caller goes on as for any memory call (guard_enter, which closes an open range).
bool call_enter(CUpti_CallbackId cbid, const CUpti_CallbackData* cb);

}  // namespace kreplay::cuda::range_memory
