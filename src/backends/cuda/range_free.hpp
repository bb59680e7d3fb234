// Frees inside a range on CUDA (docs/design.md, "Range replay"). CUPTI's callback cannot hold a
// driver call back, but the driver frees what the ENTER callback's parameters say when it
// returns (bench/cuda/free_probe: on an H100, a pointer changed there was the one freed). So a
// free the application makes inside an open range that can take it (Engine::range_defer_free)
// frees a 1-byte block of kreplay's instead, allocated there and then; the application's block
// stays allocated, and is freed, and its inventory entry retired, after the range's last pass.
// A synchronous free still synchronizes (the driver's own free of the stand-in does), and counts
// as the synchronization it is for the range first. Where the range cannot take the free it
// closes first, as every free did before.
// (Handing the runtime a wrapper from cuGetProcAddress's EXIT callback does not work: the CUDA
// runtime resolves its driver entries before the injection is loaded; free_probe saw no lookup.)
// Not with KREPLAY_RANGE_MEMORY=close (range_memory::enabled), where every free closes the range.
#pragma once

#include <cupti.h>

namespace kreplay::cuda::range_free {

/// ENTER of cuMemFree_v2 or cuMemFreeAsync(_ptsz) while a tool uses range replay: true when the
/// free was deferred (the call now frees kreplay's stand-in; nothing is to be retired now);
/// false: the caller retires the block as for any free (an open range closed first).
bool free_enter(CUpti_CallbackId cbid, const CUpti_CallbackData* cb);

/// How many frees reached free_enter, and how many were deferred (KREPLAY_PRINT_COSTS).
struct Counts {
  unsigned long long seen = 0, deferred = 0;
};
Counts counts();

}  // namespace kreplay::cuda::range_free
