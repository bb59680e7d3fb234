// Frees inside a range on CUDA (docs/design.md, "Range replay"). CUPTI's callback cannot hold a
// driver call back, so a free the application makes inside an open range is taken before it
// reaches the driver: when the CUDA runtime (or any caller) asks cuGetProcAddress for cuMemFree or
// cuMemFreeAsync after kreplay subscribed, the EXIT callback hands back a wrapper of kreplay's.
// The wrapper asks Engine::range_defer_free; where the open range takes the free, the block stays
// allocated until the range's last pass ended and is freed then (its inventory entry retired
// then too); everywhere else it calls the driver's own function, whose callbacks close the range
// as before. Callers that reached the driver some other way (linked against libcuda, or resolved
// the entry before kreplay was loaded) keep closing the range at their frees.
// Only with KREPLAY_RANGE_MEMORY=join (range_memory::enabled) until this path has run on a GPU.
#pragma once

#include <cupti.h>

namespace kreplay::cuda::range_free {

/// The callback IDs to enable: cuGetProcAddress and cuGetProcAddress_v2.
bool is_proc_address(CUpti_CallbackId cbid);
/// EXIT of cuGetProcAddress(_v2): where the symbol is cuMemFree (v2) or cuMemFreeAsync (either
/// stream flavour) and the entry was found, the caller gets kreplay's wrapper instead.
void on_proc_address(CUpti_CallbackId cbid, const CUpti_CallbackData* cb);
/// How many frees the wrappers deferred and saw in all (KREPLAY_PRINT_COSTS, tests).
struct Counts {
  unsigned long long seen = 0, deferred = 0;
};
Counts counts();

}  // namespace kreplay::cuda::range_free
